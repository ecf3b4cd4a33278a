"""Dominant Resource Share arithmetic over the group tree.

Cases from kubernetes-sigs/kueue ``pkg/cache/scheduler/fair_sharing_test.go``
(``TestDominantResourceShare``), named as there, with ClusterQueues and cohorts as groups.
Kueue reports the share rounded up to a whole per mille (``roundedWeightedShare``); ours is
the precise value (``PreciseWeightedShare``), which Kueue compares with.
"""

from __future__ import annotations

import math

import pytest

from negotiatord.cycle.fair_sharing import GroupUsage, nominal_shares
from negotiatord.settings.groups import ROOT_GROUP, WEIGHT_UNIT, GroupTree
from tests.builders import group
from tests.fair_sharing_pools import fair_group


def usage_of(groups: list, pool: dict[str, float], charges: dict[str, dict[str, float]]) -> GroupUsage:
    tree = GroupTree(groups)
    usage = GroupUsage(tree, nominal_shares(tree, pool, {}))
    for name, amounts in charges.items():
        usage.admit(name, amounts)
    return usage


COHORT = [fair_group("cq", 2, gpu=5), fair_group("lending", 8, gpu=5)]


@pytest.mark.parametrize(("case", "charged", "share", "dominant"), [
    ("usage below nominal", {"cpus": 1, "gpu": 2}, 0.0, ""),
    ("usage above nominal", {"cpus": 3, "gpu": 7}, 200.0, "gpu"),       # (7-5)*1000/10
    ("one resource above nominal", {"cpus": 3, "gpu": 3}, 100.0, "cpus"),  # (3-2)*1000/10
])
def test_two_groups_in_one_pool(case: str, charged: dict[str, float], share: float, dominant: str) -> None:
    usage = usage_of(COHORT, {"cpus": 10, "gpu": 10}, {"cq": charged})
    drs = usage.share("cq")
    assert (drs.per_mille, drs.dominant, drs.borrowing) == (pytest.approx(share), dominant, share > 0)
    assert usage.share("lending").per_mille == 0 and not usage.share("lending").borrowing
    assert usage.share(ROOT_GROUP).per_mille == 0


@pytest.mark.parametrize(("case", "charged", "weight", "share"), [
    ("usage slightly above nominal in a cohort with large quotas", 501, 1, 1000 / 1500),    # Kueue shows 1
    ("usage way above nominal in a cohort with large quotas and weights", 800, 300, 1000 / 1500),
])
def test_large_quotas(case: str, charged: float, weight: float, share: float) -> None:
    groups = [fair_group("cq", gpu=500, weight=weight), fair_group("lending", gpu=1000, weight=300)]
    usage = usage_of(groups, {"gpu": 1500}, {"cq": {"gpu": charged}})
    assert usage.share("cq").per_mille == pytest.approx(share)
    assert math.ceil(usage.share("cq").per_mille) == 1        # Kueue's rounded figure


@pytest.mark.parametrize(("case", "weight", "share"), [
    ("above nominal with integer weight", 2, 100.0),     # ((7-5)*1000/10)/2
    ("above nominal with decimal weight", 0.5, 400.0),   # ((7-5)*1000/10)/(1/2)
])
def test_weights_divide_the_share(case: str, weight: float, share: float) -> None:
    groups = [fair_group("cq", gpu=5, weight=weight), fair_group("lending", gpu=5)]
    assert usage_of(groups, {"gpu": 10}, {"cq": {"gpu": 7}}).share("cq").per_mille == pytest.approx(share)


def test_above_nominal_with_zero_weight() -> None:
    """Kueue "above nominal with zero weight": any borrowing on a weight of 0 is infinite, and
    ranks above every finite share; two infinite shares compare by their unweighted ratio."""
    groups = [fair_group("cq", gpu=5, weight=0), fair_group("lending", gpu=10), fair_group("other", gpu=0, weight=0)]
    usage = usage_of(groups, {"gpu": 15}, {"cq": {"gpu": 7}, "other": {"gpu": 1}, "lending": {"gpu": 7}})
    assert usage.share("cq").infinite and usage.share("cq").per_mille == math.inf
    assert usage.share("other").infinite
    assert usage.share("other") < usage.share("cq")            # 1000/15 < 2000/15, both infinite
    assert usage.share("lending") < usage.share("other")       # within nominal: 0


def test_cohort_has_resource_share() -> None:
    """Kueue "cohort has resource share": root holds 45 of its own, child (weight 2) holds cq
    (5); cq uses 10 -> cq (10-5)/50 = 100, child the same borrowing over weight 2 = 50."""
    groups = [fair_group("child", weight=2), fair_group("child.cq", gpu=5)]
    usage = usage_of(groups, {"gpu": 50}, {"child.cq": {"gpu": 10}})
    assert usage.share("child.cq").per_mille == pytest.approx(100)
    assert usage.share("child").per_mille == pytest.approx(50)


def test_resource_share_defined_for_resources_only_available_at_the_root_cohort() -> None:
    groups = [fair_group("child", weight=2), fair_group("child.cq", gpu=0)]
    usage = usage_of(groups, {"gpu": 50}, {"child.cq": {"gpu": 10}})
    assert usage.share("child.cq").per_mille == pytest.approx(200)
    assert usage.share("child").per_mille == pytest.approx(100)


def test_resource_share_affected_by_borrowing_limit() -> None:
    """Kueue "resource share affected by borrowing limit": child may borrow at most 10, so
    from cq's side 10 is all that can be lent (1000), from child's side the root's 50 (200)."""
    groups = [fair_group("child", gpu=0, borrowing_limit={"gpu": 10}), fair_group("child.cq", gpu=0)]
    usage = usage_of(groups, {"gpu": 50}, {"child.cq": {"gpu": 10}})
    assert usage.share("child.cq").per_mille == pytest.approx(1000)
    assert usage.share("child").per_mille == pytest.approx(200)


def test_own_submitters_of_an_interior_group_have_the_rest_of_its_quota() -> None:
    """A group with children keeps, for its own submitters, what it does not pass down, as a
    Kueue cohort's own quota sits beside its children's (HGQ's own_quota)."""
    groups = [fair_group("physics", 10), fair_group("physics.theory", 4)]
    usage = usage_of(groups, {"cpus": 20}, {"physics": {"cpus": 7}})
    assert usage.own_share("physics").per_mille == pytest.approx((7 - 6) * 1000 / 20)
    assert not usage.share("physics").borrowing                  # 7 of its subtree's 10
    assert usage.share("physics.theory").per_mille == 0


def test_weight_units_come_from_the_hgq_quota_when_no_resource_quota_is_given() -> None:
    tree = GroupTree([group("a", quota=30), group("b", quota=10)])
    shares = nominal_shares(tree, {WEIGHT_UNIT: 40}, {"a": 30.0, "b": 10.0, ROOT_GROUP: 40.0})
    assert shares == {"a": {WEIGHT_UNIT: 30.0}, "b": {WEIGHT_UNIT: 10.0}, ROOT_GROUP: {WEIGHT_UNIT: 40.0}}
    usage = GroupUsage(tree, shares)
    usage.admit("b", {WEIGHT_UNIT: 14, "cpus": 14})                  # cpus has no quota: not counted
    assert usage.share("b").per_mille == pytest.approx(4 * 1000 / 40)
    assert usage.resources == (WEIGHT_UNIT,)


def test_children_asking_more_than_their_parent_are_scaled_down() -> None:
    """As HGQ scales static quotas (the manual's example: 20 and 10 in a group of 15 become 10
    and 5), per resource."""
    tree = GroupTree([fair_group("g", 15), fair_group("g.physics", 20), fair_group("g.chemistry", 10)])
    shares = nominal_shares(tree, {"cpus": 100}, {})
    assert shares["g.physics"] == {"cpus": 10.0} and shares["g.chemistry"] == {"cpus": 5.0}


def test_a_trial_puts_usage_back() -> None:
    usage = usage_of([fair_group("a", 1), fair_group("b", 1)], {"cpus": 2}, {"a": {"cpus": 2}})
    before = usage.share("a")
    with usage.trial():
        usage.remove("a", {"cpus": 2})
        usage.admit("b", {"cpus": 1.5})
        assert usage.share("a").per_mille == 0 and usage.share("b").borrowing
    assert usage.share("a") == before and not usage.share("b").borrowing
