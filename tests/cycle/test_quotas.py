"""Hierarchical group quota allocation (negotiatord.cycle.quotas) over the group tree.

Hand-derived cases first (each expected number is worked out in the comment above it), then
hypothesis properties over random group trees.
"""

from __future__ import annotations

import math
import random

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from negotiatord.cycle.quotas import allocate_quotas, water_fill
from negotiatord.settings import ROOT_GROUP, ConfigError, GroupSettings, GroupTree


def group(name: str, static: float | None = None, dynamic: float | None = None,
          accept: bool = True) -> GroupSettings:
    return GroupSettings(name=name, static_quota=static, dynamic_quota=dynamic,
                         accept_surplus=accept, autoregroup=False, prio_factor=None)


def allocated(result) -> dict[str, float]:
    return {name: alloc.allocated for name, alloc in result.items()}


# ---------------------------------------------------------------- hand-derived cases


def test_unused_quota_goes_to_the_sibling_first():
    # 100 cpus; group_a 0.7 -> 70, split 35/35 between x and y; group_b 0.3 -> 30.
    # Promise: x 35, y 10, b 30. y's unused 25 is offered inside group_a first: x takes it.
    groups = [group("group_a", dynamic=0.7), group("group_a.x", dynamic=0.5),
              group("group_a.y", dynamic=0.5), group("group_b", dynamic=0.3)]
    result = allocate_quotas(GroupTree(groups), 100, {"group_a.x": 100, "group_a.y": 10, "group_b": 100},
                             accept_surplus_root=True)
    assert {n: r.quota for n, r in result.items()} == pytest.approx(
        {ROOT_GROUP: 100, "group_a": 70, "group_a.x": 35, "group_a.y": 35, "group_b": 30})
    assert result[ROOT_GROUP].own_quota == pytest.approx(0)
    assert result["group_a"].own_quota == pytest.approx(0)
    assert allocated(result) == pytest.approx(
        {ROOT_GROUP: 0, "group_a": 0, "group_a.x": 60, "group_a.y": 10, "group_b": 30})
    assert result["group_a.x"].parent == "group_a"
    assert result["group_a"].parent == ROOT_GROUP
    assert result[ROOT_GROUP].parent is None


def test_static_quotas_first_then_dynamic_fractions_of_what_is_left():
    # a static 40; b, c dynamic 0.5, 0.25 of the remaining 60 -> 30, 15; root keeps 15.
    # Promise: a 10, b 30, c 15. Surplus = a's 30 + root's 15 = 45, shared by quota among
    # b (quota 30, needs 70) and c (quota 15, needs 25): 30 and 15, neither is capped.
    groups = [group("a", static=40), group("b", dynamic=0.5), group("c", dynamic=0.25)]
    result = allocate_quotas(GroupTree(groups), 100, {"a": 10, "b": 100, "c": 40}, accept_surplus_root=True)
    assert [result[n].quota for n in ("a", "b", "c")] == pytest.approx([40, 30, 15])
    assert result[ROOT_GROUP].own_quota == pytest.approx(15)
    assert allocated(result) == pytest.approx({ROOT_GROUP: 0, "a": 10, "b": 60, "c": 30})


def test_static_quotas_scale_down_with_the_pool_but_never_up():
    # The manual's "Hierarchical Group Quotas" example: physics 20 and chemistry 10 of 30
    # slots; when half the pool is gone they scale to 10 and 5; when the pool doubles they
    # stay at 20 and 10. (HTCondor scales only with NEGOTIATOR_ALLOW_QUOTA_OVERSUBSCRIPTION
    # off; negotiatord never oversubscribes.)
    groups = [group("physics", static=20), group("chemistry", static=10)]
    half = allocate_quotas(GroupTree(groups), 15, {}, accept_surplus_root=True)
    assert (half["physics"].quota, half["chemistry"].quota) == pytest.approx((10, 5))
    assert half[ROOT_GROUP].own_quota == pytest.approx(0)
    double = allocate_quotas(GroupTree(groups), 60, {}, accept_surplus_root=True)
    assert (double["physics"].quota, double["chemistry"].quota) == pytest.approx((20, 10))
    assert double[ROOT_GROUP].own_quota == pytest.approx(30)


def test_static_children_exceeding_the_parent_leave_nothing_for_dynamic_siblings():
    # Static 8 + 12 = 20 > 10: scaled to 4 and 6; dynamic c gets 0.5 of nothing.
    # a does not accept surplus: it stays at its 4 although it wants 100. b's unused 5 goes
    # to c, which has quota 0 but accepts surplus and is the only claimant.
    groups = [group("a", static=8, accept=False), group("b", static=12), group("c", dynamic=0.5)]
    result = allocate_quotas(GroupTree(groups), 10, {"a": 100, "b": 1, "c": 5}, accept_surplus_root=True)
    assert [result[n].quota for n in ("a", "b", "c")] == pytest.approx([4, 6, 0])
    assert allocated(result) == pytest.approx({ROOT_GROUP: 0, "a": 4, "b": 1, "c": 5})


def test_dynamic_fractions_summing_above_one_are_normalised():
    # 0.6 + 0.9 + 0.3 = 1.8 of 90 -> 30, 45, 15; nothing left for the root.
    groups = [group("a", dynamic=0.6), group("b", dynamic=0.9), group("c", dynamic=0.3)]
    result = allocate_quotas(GroupTree(groups), 90, {"a": 30, "b": 45, "c": 15}, accept_surplus_root=True)
    assert [result[n].quota for n in ("a", "b", "c")] == pytest.approx([30, 45, 15])
    assert result[ROOT_GROUP].own_quota == pytest.approx(0)
    assert [result[n].allocated for n in ("a", "b", "c")] == pytest.approx([30, 45, 15])


def test_group_with_no_quota_gets_zero():
    # A group with both a static and a dynamic quota is a config error (GroupTree refuses it).
    groups = [group("a", static=10), group("b")]
    result = allocate_quotas(GroupTree(groups), 100, {}, accept_surplus_root=True)
    assert result["a"].quota == pytest.approx(10)
    assert result["b"].quota == 0
    assert result[ROOT_GROUP].own_quota == pytest.approx(90)


def test_sibling_refusing_surplus_stays_at_its_quota_while_surplus_goes_elsewhere():
    # a 50 (refuses surplus), b 30, c 20. b wants nothing: its 30 goes to c, not to a.
    groups = [group("a", dynamic=0.5, accept=False), group("b", dynamic=0.3),
              group("c", dynamic=0.2)]
    result = allocate_quotas(GroupTree(groups), 100, {"a": 200, "c": 100}, accept_surplus_root=True)
    assert allocated(result) == pytest.approx({ROOT_GROUP: 0, "a": 50, "b": 0, "c": 50})
    # With c satisfied, the rest of b's quota stays unused rather than going to a.
    result = allocate_quotas(GroupTree(groups), 100, {"a": 200, "c": 25}, accept_surplus_root=True)
    assert allocated(result) == pytest.approx({ROOT_GROUP: 0, "a": 50, "b": 0, "c": 25})


def test_surplus_climbs_two_levels_after_local_claimants_are_served():
    # a 50 = a.x 25 + a.y 25; b 50 = b.x 50. Promise: a.x 5, a.y 25, b.x 50.
    # a.x's unused 20 first goes to its sibling a.y (needs 5); the other 15 climbs past
    # group a to the root and down through b to b.x.
    groups = [group("a", dynamic=0.5), group("a.x", dynamic=0.5), group("a.y", dynamic=0.5),
              group("b", dynamic=0.5), group("b.x", dynamic=1.0)]
    result = allocate_quotas(GroupTree(groups), 100, {"a.x": 5, "a.y": 30, "b.x": 80},
                             accept_surplus_root=True)
    assert allocated(result) == pytest.approx(
        {ROOT_GROUP: 0, "a": 0, "a.x": 5, "a.y": 30, "b": 0, "b.x": 65})


def test_subtree_refusing_surplus_shares_inside_but_takes_nothing_from_outside():
    # a (refuses) 50 = a.x 25 + a.y 25; b 50. a.y's unused 25 goes to a.x; b's unused 50
    # cannot enter a, so a.x ends at 50 although it wants 100.
    groups = [group("a", dynamic=0.5, accept=False), group("a.x", dynamic=0.5),
              group("a.y", dynamic=0.5), group("b", dynamic=0.5)]
    result = allocate_quotas(GroupTree(groups), 100, {"a.x": 100}, accept_surplus_root=True)
    assert allocated(result) == pytest.approx(
        {ROOT_GROUP: 0, "a": 0, "a.x": 50, "a.y": 0, "b": 0})


def test_descendant_refusing_surplus_is_skipped_when_surplus_is_handed_down():
    # a 60 = a.x 30 (refuses) + own 30; b 40 unused. Surplus handed into a reaches a's own
    # submitters but not a.x.
    groups = [group("a", static=60), group("a.x", static=30, accept=False), group("b", static=40)]
    result = allocate_quotas(GroupTree(groups), 100, {"a": 100, "a.x": 100}, accept_surplus_root=True)
    assert allocated(result) == pytest.approx({ROOT_GROUP: 0, "a": 70, "a.x": 30, "b": 0})


def test_interior_group_refusing_surplus_keeps_its_own_submitters_at_own_quota():
    # Deviation from HTCondor: a refuses surplus, so its own submitters stay at own quota 30
    # even though the surplus (a.x's unused 10) arose inside a's own subtree; all of it goes
    # to a.y, which accepts surplus (HTCondor would split it 30:10 between a and a.y).
    groups = [group("a", static=50, accept=False), group("a.x", static=10),
              group("a.y", static=10)]
    result = allocate_quotas(GroupTree(groups), 50, {"a": 100, "a.y": 100}, accept_surplus_root=True)
    assert result["a"].own_quota == pytest.approx(30)
    assert allocated(result) == pytest.approx({ROOT_GROUP: 0, "a": 30, "a.x": 0, "a.y": 20})


def test_root_own_submitters_get_the_rest_of_the_pool_and_surplus_if_root_accepts():
    # a static 30, the root keeps 70 for <none> submitters.
    groups = [group("a", static=30)]
    demand = {ROOT_GROUP: 100, "a": 10}
    accepting = allocate_quotas(GroupTree(groups), 100, demand, accept_surplus_root=True)
    assert allocated(accepting) == pytest.approx({ROOT_GROUP: 90, "a": 10})
    refusing = allocate_quotas(GroupTree(groups), 100, demand, accept_surplus_root=False)
    assert allocated(refusing) == pytest.approx({ROOT_GROUP: 70, "a": 10})
    # and the root's unused quota goes to groups that accept surplus
    result = allocate_quotas(GroupTree(groups), 100, {ROOT_GROUP: 50, "a": 100}, accept_surplus_root=False)
    assert allocated(result) == pytest.approx({ROOT_GROUP: 50, "a": 50})


def test_surplus_is_water_filled_in_proportion_to_quota():
    # a 10, b 30, c 60 (unused). Needs beyond quota: a 90, b 10. Level 60/40 = 1.5 would give
    # b 45 > 10: b is capped at 10 and the remaining 50 all goes to a.
    groups = [group("a", static=10), group("b", static=30), group("c", static=60)]
    result = allocate_quotas(GroupTree(groups), 100, {"a": 100, "b": 40}, accept_surplus_root=True)
    assert allocated(result) == pytest.approx({ROOT_GROUP: 0, "a": 60, "b": 40, "c": 0})


def test_zero_quota_groups_share_equally_after_groups_with_quota():
    # Root keeps 50 (a static 50, b and c quota 0). a needs 20 more and is served first;
    # the other 30 is shared equally by b and c; c needs only 10, so b gets 20.
    groups = [group("a", static=50), group("b", static=0), group("c")]
    result = allocate_quotas(GroupTree(groups), 100, {"a": 70, "b": 100, "c": 10}, accept_surplus_root=True)
    assert allocated(result) == pytest.approx({ROOT_GROUP: 0, "a": 70, "b": 20, "c": 10})


def test_tiny_quotas_do_not_overflow_the_surplus_split():
    # Found by hypothesis: a subnormal quota made left/weight overflow to infinity, so the
    # only claimant was handed its whole demand (1.0) out of a surplus of 0.5.
    groups = [group("a", static=5e-324), group("b", static=0.0)]
    result = allocate_quotas(GroupTree(groups), 0.5, {"a": 1.0, "b": 1.0}, accept_surplus_root=False)
    assert result["a"].allocated == pytest.approx(0.5)
    assert result["b"].allocated == 0


def test_demand_keys_are_case_insensitive_and_results_use_configured_spelling():
    groups = [group("Group_A", static=10), group("Group_A.Sub", static=4)]
    result = allocate_quotas(GroupTree(groups), 10, {"group_a.SUB": 3, "GROUP_A": 1},
                             accept_surplus_root=True)
    assert list(result) == [ROOT_GROUP, "Group_A", "Group_A.Sub"]
    assert result["Group_A.Sub"].demand == 3
    assert result["Group_A.Sub"].parent == "Group_A"
    assert result["Group_A"].allocated == pytest.approx(1)


def test_child_listed_before_its_parent_is_fine():
    groups = [group("a.x", dynamic=1.0), group("a", static=10)]
    result = allocate_quotas(GroupTree(groups), 20, {"a.x": 5}, accept_surplus_root=True)
    assert result["a.x"].quota == pytest.approx(10)
    assert result["a.x"].allocated == pytest.approx(5)


@pytest.mark.parametrize("groups, message", [
    ([group("a.x", static=1)], "needs its parent group 'a'"),
    ([group("a", static=1), group("A", static=2)], "listed twice"),
    ([group("<NONE>", static=1)], "reserved"),
    ([group("a", static=-1)], "GROUP_QUOTA_a"),
    ([group("a", static=math.inf)], "GROUP_QUOTA_a"),
    ([group("a", dynamic=1.5)], "GROUP_QUOTA_DYNAMIC_a"),
    ([group("a", dynamic=math.nan)], "GROUP_QUOTA_DYNAMIC_a"),
    ([group("a", static=10, dynamic=1.0)], "has both GROUP_QUOTA_a and GROUP_QUOTA_DYNAMIC_a"),
    ([group("a.")], "is not usable"),
])
def test_bad_group_tree_is_a_config_error(groups, message):
    with pytest.raises(ConfigError, match=message):
        GroupTree(groups)


@pytest.mark.parametrize("groups, demand, pool, message", [
    ([group("a", static=1)], {"b": 1}, 10, "'b', which is not a configured group"),
    ([group("a", static=1)], {"a": 1, "A": 2}, 10, "demand given twice"),
    ([group("a", static=1)], {"a": -1}, 10, "demand of group 'a'"),
    ([group("a", static=1)], {"a": math.inf}, 10, "demand of group 'a'"),
    ([group("a", static=1)], {}, -1, "pool size"),
    ([group("a", static=1)], {}, math.nan, "pool size"),
])
def test_bad_input_is_a_clear_error(groups, demand, pool, message):
    with pytest.raises(ValueError, match=message):
        allocate_quotas(GroupTree(groups), pool, demand, accept_surplus_root=True)


def test_group_tree_reports_config_errors_without_a_pool():
    GroupTree([group("a", static=1), group("a.x", dynamic=0.5)])
    with pytest.raises(ConfigError, match="needs its parent group 'b'"):
        GroupTree([group("a", static=1), group("b.x", dynamic=0.5)])


# ---------------------------------------------------------------- water-filling


@given(
    amount=st.floats(0, 1000),
    claimants=st.lists(st.tuples(st.sampled_from([0.0, 0.5, 1.0, 3.0, 10.0, 77.7]),
                                 st.floats(0, 300)), max_size=8),
)
def test_water_fill_is_a_capped_proportional_split(amount, claimants):
    weights = [w for w, _ in claimants]
    needs = [n for _, n in claimants]
    shares = water_fill(amount, weights, needs)
    tol = 1e-7 * max(1.0, amount)
    total_need = math.fsum(n for n in needs if n > 1e-9)
    assert math.fsum(shares) == pytest.approx(min(amount, total_need), abs=tol)
    assert all(0 <= s <= n + tol for s, n in zip(shares, needs))
    uncapped = [i for i, (s, n) in enumerate(zip(shares, needs)) if s < n - tol]
    weighted_uncapped = [i for i in uncapped if weights[i] > 0]
    if weighted_uncapped:
        # one common level per unit of quota; capped claimants needed less than that level
        level = shares[weighted_uncapped[0]] / weights[weighted_uncapped[0]]
        for i in weighted_uncapped:
            assert shares[i] / weights[i] == pytest.approx(level, abs=tol)
        for i, w in enumerate(weights):
            if w > 0 and i not in uncapped:
                assert needs[i] <= level * w + tol
        # zero-quota claimants wait until every claimant with quota is satisfied
        assert all(shares[i] <= tol for i, w in enumerate(weights) if w == 0)
    unweighted_uncapped = [i for i in uncapped if weights[i] == 0]
    if unweighted_uncapped:
        level = shares[unweighted_uncapped[0]]
        assert all(shares[i] == pytest.approx(level, abs=tol) for i in unweighted_uncapped)
        assert all(needs[i] <= level + tol for i, w in enumerate(weights)
                   if w == 0 and i not in uncapped)


# ---------------------------------------------------------------- properties over random trees


@st.composite
def group_trees(draw):
    """A random group tree (up to 9 groups, up to 4 levels), pool size, demand and root flag."""
    names: list[str] = []
    groups: list[GroupSettings] = []
    for i in range(draw(st.integers(0, 9))):
        parent = draw(st.sampled_from([None] + [n for n in names if n.count(".") < 3]))
        name = f"g{i}" if parent is None else f"{parent}.g{i}"
        kind = draw(st.sampled_from(["static", "dynamic", "none"]))
        static = draw(st.floats(0, 80)) if kind == "static" else None
        dynamic = draw(st.floats(0, 1)) if kind == "dynamic" else None
        names.append(name)
        groups.append(group(name, static=static, dynamic=dynamic, accept=draw(st.booleans())))
    pool = draw(st.one_of(st.just(0.0), st.floats(0, 500)))
    demand = {name: draw(st.one_of(st.just(0.0), st.floats(0, 300)))
              for name in draw(st.lists(st.sampled_from(names + [ROOT_GROUP]), unique=True))}
    return groups, pool, demand, draw(st.booleans())


def _ancestors(result, name):
    parent = result[name].parent
    while parent is not None:
        yield parent
        parent = result[parent].parent


@settings(max_examples=300, deadline=None)
@given(group_trees())
@example(([group("g0", static=2.2250738585e-313), group("g1", static=0.0, accept=False)],
          0.5, {"g0": 1.0}, False))
def test_allocation_properties(tree):
    groups, pool, demand, accept_root = tree
    result = allocate_quotas(GroupTree(groups), pool, demand, accept_root)
    eps = 1e-6 * max(1.0, pool)
    assert set(result) == {g.name for g in groups} | {ROOT_GROUP}

    # quotas: never oversubscribed, each group's quota splits into own + children
    assert result[ROOT_GROUP].quota == pool
    assert math.fsum(r.own_quota for r in result.values()) == pytest.approx(pool, abs=eps)
    for name, r in result.items():
        children = [c.quota for c in result.values() if c.parent == name]
        assert r.own_quota >= 0
        assert r.own_quota == pytest.approx(max(0.0, r.quota - math.fsum(children)), abs=eps)

    # allocation: within the pool, within demand, and the promise is kept
    total = math.fsum(r.allocated for r in result.values())
    assert total <= pool + eps
    for r in result.values():
        assert r.demand == demand.get(r.name, 0.0)
        assert r.allocated <= r.demand
        assert r.allocated >= min(r.demand, r.own_quota) - eps
        if not r.accept_surplus:
            assert r.allocated <= r.own_quota + eps

    # a subtree refusing surplus never holds more than its quota
    for name, r in result.items():
        if not r.accept_surplus and name != ROOT_GROUP:
            subtree = [s.allocated for n, s in result.items()
                       if n == name or name in _ancestors(result, n)]
            assert math.fsum(subtree) <= r.quota + eps

    # no quota is left unused while someone who may take surplus still wants more
    for name, r in result.items():
        reachable = r.accept_surplus and all(
            result[a].accept_surplus for a in _ancestors(result, name) if a != ROOT_GROUP)
        if reachable and r.demand - r.allocated > eps:
            assert total == pytest.approx(pool, abs=eps)


@settings(max_examples=100, deadline=None)
@given(group_trees(), st.randoms(use_true_random=False))
def test_demand_key_order_does_not_matter(tree, rng: random.Random):
    groups, pool, demand, accept_root = tree
    keys = list(demand)
    rng.shuffle(keys)
    shuffled = {key: demand[key] for key in keys}
    assert allocate_quotas(GroupTree(groups), pool, shuffled, accept_root) == \
        allocate_quotas(GroupTree(groups), pool, demand, accept_root)


@settings(max_examples=100, deadline=None)
@given(group_trees(), st.randoms(use_true_random=False))
def test_group_names_order_changes_nothing_but_rounding(tree, rng: random.Random):
    groups, pool, demand, accept_root = tree
    reordered = list(groups)
    rng.shuffle(reordered)
    first = allocate_quotas(GroupTree(groups), pool, demand, accept_root)
    second = allocate_quotas(GroupTree(reordered), pool, demand, accept_root)
    eps = 1e-6 * max(1.0, pool)
    for name, r in first.items():
        assert second[name].quota == pytest.approx(r.quota, abs=eps)
        assert second[name].allocated == pytest.approx(r.allocated, abs=eps)
