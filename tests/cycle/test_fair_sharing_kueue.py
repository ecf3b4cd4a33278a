"""Kueue's fair-sharing preemption table, re-expressed in accounting groups and one slot.

Source: kubernetes-sigs/kueue ``pkg/scheduler/preemption/preemption_fair_test.go``,
``TestFairPreemptions``; each case below carries the name it has there. ClusterQueues become
groups with ``GROUP_RESOURCE_QUOTA = Cpus:<nominal>``, a cohort's own quota becomes the part
of its group's quota not given to its children (the root's own part: the pool beyond the
top-level groups), ``FairWeight`` becomes ``GROUP_FAIRSHARE_WEIGHT``, admitted workloads are
jobs running on one partitionable slot as large as the pool, and Kueue's reasons map to our
rules: ``InCohortReclamation`` -> ``reclaim``, ``InCohortFairSharing`` -> the strategy's name.
All workloads there are admitted at the same instant, so candidates go by priority, then by
name (the test sets the UID to the name), as here by JobPrio, then job id.

Cases left out: those whose expected victims come from the preemptor's own ClusterQueue
(``InClusterQueueReason``: inside a group, HTCondor's priority rule decides, not this one),
and ``forced to preempt within clusterqueue because borrowing workload too important``, which
rests on ``ReclaimWithinCohort: LowerPriority`` (JobPrio is a per-user knob in HTCondor and
does not order jobs of different groups). Cases where Kueue's victims hold more than the
preemptor takes, a reclaim within its nominal share included, are kept apart
(``LARGER_VICTIMS``): the no-loop rule refuses them (``docs/fair-sharing.md``).
"""

from __future__ import annotations

import pytest

from negotiatord.cycle.fair_sharing import choose_victims
from tests.fair_sharing_pools import SLOT, Pool, fair_group, job, pool

S2A, S2B = "LessThanOrEqualToFinalShare", "LessThanInitialShare"
BOTH = (S2A, S2B)

BASE = [fair_group("a", 3), fair_group("b", 3), fair_group("c", 3), fair_group("preemptible", 0)]


def units(group: str, *names: str, prio: int = 0) -> list:
    return [job(name, group, 1, prio) for name in names]


def decide(world: Pool, group: str, cpus: float, strategies: tuple[str, ...] = BOTH) -> dict[str, str]:
    """The victims' ids and the rule that allowed each."""
    found = choose_victims(world.usage, group, {"cpus": cpus}, world.free, world.running, strategies)
    if found is None:
        return {}
    assert found.slot == SLOT
    return {victim.job.job_id: victim.strategy for victim in found.victims}


CASES = {
    "reclaim nominal from user using the most": (
        BASE, 9, units("a", "a1", "a2", "a3") + units("b", "b1", "b2", "b3", "b4", "b5") + units("c", "c1"),
        ("c", 1), BOTH, {"b1": "reclaim"}),
    "can reclaim from queue using less, if taking the latest workload from user using the most isn't enough": (
        BASE, 9, [job("a1", "a", 3), job("a2", "a", 1), job("b1", "b", 2), job("b2", "b", 3)],
        ("c", 3), BOTH, {"a1": "reclaim"}),
    "reclaim borrowable quota from user using the most": (
        BASE, 9, units("a", "a1", "a2", "a3") + units("b", "b1", "b2", "b3", "b4", "b5") + units("c", "c1"),
        ("a", 1), BOTH, {"b1": S2A}),
    "preempt one from each CQ borrowing": (
        BASE, 9, [job("a1", "a", 0.5), job("a2", "a", 0.5), job("a3", "a", 3),
                  job("b1", "b", 0.5), job("b2", "b", 0.5), job("b3", "b", 3)],
        ("c", 2), BOTH, {"a1": "reclaim", "b1": "reclaim"}),
    "can't preempt when everyone under nominal": (
        BASE, 9, units("a", "a1", "a2", "a3") + units("b", "b1", "b2", "b3") + units("c", "c1", "c2", "c3"),
        ("c", 1), BOTH, {}),
    "can't preempt when it would switch the imbalance": (
        BASE, 9, units("a", "a1", "a2", "a3") + units("b", "b1", "b2", "b3", "b4", "b5"),
        ("a", 2), BOTH, {}),
    "can't preempt huge workload if the incoming is also huge": (
        BASE, 9, [job("a1", "a", 2), job("b1", "b", 7)], ("a", 5), BOTH, {}),
    "can't preempt 2 smaller workloads if the incoming is huge": (
        BASE, 9, [job("b1", "b", 2), job("b2", "b", 2), job("b3", "b", 3)], ("a", 6), BOTH, {}),
    "prefer to preempt workloads that don't make the target CQ have the biggest share": (
        BASE, 9, [job("b1", "b", 2), job("b2", "b", 1), job("b3", "b", 2), job("c1", "c", 1)],
        ("a", 3.5), BOTH, {"b2": S2A}),
    "scenario above does not flap": (
        BASE, 9, [job("a1", "a", 3.5), job("b2", "b", 2.5), job("c2", "c", 2.5)], ("b", 2), BOTH, {}),
    "cannot preempt if it would make the candidate CQ go under nominal after preempting one element": (
        BASE, 9, [job("b1", "b", 3), job("b2", "b", 3), job("c1", "c", 3)], ("a", 4), BOTH, {}),
    "workloads under priority threshold not capriciously preempted": (
        BASE, 9, units("a", "a1", "a2", "a3") + units("b", "b1", "b2", "b3")
        + units("preemptible", "preemptible1", "preemptible2", "preemptible3", prio=-3),
        ("a", 2), BOTH, {}),
    "preempt workload that doesn't transfer the imbalance, even if high priority": (
        BASE, 9, [job("a1", "a", 3), job("b_low", "b", 5, prio=0), job("b_high", "b", 1, prio=1)],
        ("a", 1), (S2A,), {"b_high": S2A}),
    "CQ with higher weight can preempt more": (
        [fair_group("a", 3, weight=2), fair_group("b", 3), fair_group("c", 3)], 9,
        units("a", "a1", "a2", "a3") + units("b", "b1", "b2", "b3", "b4", "b5", "b6"),
        ("a", 2), BOTH, {"b1": S2A, "b2": S2A}),
    "can preempt anything borrowing from CQ with 0 weight": (
        [fair_group("a", 3), fair_group("b", 3, weight=0), fair_group("c", 3)], 9,
        units("a", "a1", "a2", "a3") + units("b", "b1", "b2", "b3", "b4", "b5", "b6"),
        ("a", 3), BOTH, {"b1": S2A, "b2": S2A, "b3": S2B}),
    "can't preempt nominal from CQ with 0 weight": (
        [fair_group("a", 3), fair_group("b", 3, weight=0)], 6,
        units("a", "a1", "a2", "a3") + units("b", "b1", "b2", "b3"), ("a", 1), BOTH, {}),
    "can't preempt nominal from Cohort with 0 weight": (
        [fair_group("left", 0), fair_group("right", 1, weight=0), fair_group("right.cq", 0, weight=0)], 1,
        units("right.cq", "right-1"), ("left", 1), BOTH, {}),
    # ROOT(own 5) / LEFT(own 5, weight 2){a(1, weight 2), b(1)}, c(1), RIGHT(own 5){d(1), e(1, weight 0.99)}
    "hierarchical preemption": (
        [fair_group("LEFT", 7, weight=2), fair_group("LEFT.a", 1, weight=2), fair_group("LEFT.b", 1),
         fair_group("c", 1), fair_group("RIGHT", 7), fair_group("RIGHT.d", 1), fair_group("RIGHT.e", 1, weight=0.99)],
        20,
        [job(f"{name}{i}", group, 1, prio=i) for name, group in
         (("b", "LEFT.b"), ("c", "c"), ("d", "RIGHT.d"), ("e", "RIGHT.e")) for i in range(1, 6)],
        ("LEFT.a", 5), BOTH, {"b1": S2A, "b2": S2A, "c1": S2A, "c2": S2A, "e1": S2A}),
    "deep preemption": (
        [fair_group("A", weight=1.01), fair_group("A.AA"), fair_group("A.AA.AAA"), fair_group("A.AA.AAA.a", 0),
         fair_group("B", weight=0.99), fair_group("B.BB"), fair_group("B.BB.BBB"), fair_group("B.BB.BBB.b", 0),
         fair_group("C"), fair_group("C.CC"), fair_group("C.CC.CCC"), fair_group("C.CC.CCC.CCCC", 1)],
        1, units("B.BB.BBB.b", "b1"), ("A.AA.AAA.a", 1), BOTH, {"b1": S2B}),
    "cq with zero weight can reclaim nominal quota": (
        [fair_group("a", 1, weight=0), fair_group("b", 0)], 1, units("b", "b1"), ("a", 1), BOTH, {"b1": "reclaim"}),
    "cohort with zero weight can reclaim nominal quota": (
        [fair_group("A", 1, weight=0), fair_group("A.a", 0, weight=0), fair_group("b", 0)], 1,
        units("b", "b1"), ("A.a", 1), BOTH, {"b1": S2A}),
    "zero weight borrowing preemptor cannot preempt from a borrowing CQ with a non-zero weight": (
        [fair_group("a", 1, weight=0), fair_group("b", 1)], 3,
        units("a", "a1") + units("b", "b1", "b2"), ("a", 1), BOTH, {}),
    # cohort "all" holds 3 of its own
    "zero weight borrowing preemptor can preempt from a borrowing CQ which also has zero weight": (
        [fair_group("a", 1, weight=0), fair_group("b", 0, weight=0)], 4,
        units("b", "b1", "b2", "b3"), ("a", 2), BOTH, {"b1": S2A}),
    "non-zero weight borrowing preemptor preempts from a borrowing CQ": (
        [fair_group("a", 1), fair_group("b", 0)], 4, units("b", "b1", "b2", "b3"), ("a", 2), BOTH, {"b1": S2A}),
}


# Kueue preempts here, and the victims hold more than the preemptor takes, which no preemptor
# may do (the first no-loop condition, docs/fair-sharing.md): the room left over can be refilled
# by the preemptor's group, which is how the three-job loop and the reclaim's chain in
# test_fair_sharing_loops go round.
LARGER_VICTIMS = {
    # a reclaim within a's nominal share (a holds 2 of its 3 after) is refused too: the room it
    # would leave over makes chains (test_fair_sharing_loops)
    "preempt huge workload if there is no other option, as long as the target CQ gets a lower share": (
        BASE, 9, [job("b1", "b", 9)], ("a", 2), BOTH, {"b1": "reclaim"}),
    "preempt from different cluster queues if the end result has a smaller max share": (
        BASE, 9, [job("b1", "b", 2), job("b2", "b", 2.5), job("c1", "c", 2), job("c2", "c", 2.5)],
        ("a", 3.5), BOTH, {"b1": S2B, "c1": S2B}),
    "preempt lower priority first, even if big": (
        BASE, 9, [job("a1", "a", 3), job("b_low", "b", 5, prio=0), job("b_high", "b", 1, prio=1)],
        ("a", 1), (S2B,), {"b_low": S2B}),
}


@pytest.mark.parametrize("case", list(CASES))
def test_kueue_fair_preemptions(case: str) -> None:
    groups, capacity, running, (group, cpus), strategies, expected = CASES[case]
    world = pool(groups, {"cpus": capacity}, running)
    assert decide(world, group, cpus, strategies) == expected


@pytest.mark.parametrize("case", list(LARGER_VICTIMS))
def test_kueue_preemptions_freeing_more_than_the_preemptor_takes_are_refused(case: str) -> None:
    groups, capacity, running, (group, cpus), strategies, kueue_victims = LARGER_VICTIMS[case]
    world = pool(groups, {"cpus": capacity}, running)
    held = sum(j.resources["cpus"] for j in running if j.job_id in kueue_victims)
    assert held > cpus                                   # what makes Kueue's answer loop-prone
    assert decide(world, group, cpus, strategies) == {}


def test_candidates_skipped_by_the_first_strategy_are_still_available_to_the_second() -> None:
    """Kueue case "candidates skipped by the first strategy are still available to the second
    strategy": ROOT / A (weight 0, own 1){p (2), y (2)}, x (1). Kueue admits 8 CPUs against
    6 of quota there, so the pool (the root's quota) is 6 while the slot holds all 8: the
    root's limit is what makes y1 alone not enough, as Kueue's quota check does.

    Kueue preempts y1 and x1 for a 1-CPU job; both strategies pick them here too (with
    LessThanInitialShare, the second), but they hold 3 CPUs for a job taking 1, which the
    first no-loop condition refuses."""
    world = pool([fair_group("A", 5, weight=0), fair_group("A.p", 2), fair_group("A.y", 2), fair_group("x", 1)],
                 {"cpus": 6},
                 [job("p1", "A.p", 2), job("y1", "A.y", 2), job("y2", "A.y", 2), job("x1", "x", 1), job("x2", "x", 1)],
                 slots={SLOT: {"cpus": 8}})
    assert decide(world, "A.p", 1) == {}


def test_nominal_first_reclaims_on_the_contested_resource() -> None:
    """Kueue case "nominal first: workload fitting within nominal can preempt despite high
    aggregate DRS", flavors as resources: a holds 2 of its 3 premium and borrows 5 cheap (a
    high share); a premium request keeps a within nominal on premium, so it reclaims."""
    groups = [fair_group("a", premium=3, cheap=0), fair_group("b", premium=0, cheap=6)]
    running = ([job(f"a_prem{i}", "a", 0, premium=1) for i in (1, 2)]
               + [job(f"a_cheap{i}", "a", 0, cheap=1) for i in range(1, 6)]
               + [job("b_prem1", "b", 0, premium=1)])
    world = pool(groups, {"premium": 3, "cheap": 6}, running)
    found = choose_victims(world.usage, "a", {"premium": 1}, world.free, world.running, BOTH)
    assert found is not None
    assert {v.job.job_id: v.strategy for v in found.victims} == {"b_prem1": "reclaim"}


def test_borrowing_group_in_a_group_that_is_not_borrowing_is_protected() -> None:
    """Kueue case "borrowing cq in non-borrowing cohort is protected": b borrows, but RIGHT,
    its parent, does not, so nothing under RIGHT is a target. Kueue then preempts a's own
    workloads; inside a group that is HTCondor's priority rule, so fair sharing finds none."""
    groups = [fair_group("a", 5, weight=10), fair_group("RIGHT", 1, weight=0.1), fair_group("RIGHT.b", 0, weight=0.1)]
    world = pool(groups, {"cpus": 6}, units("a", "a1", "a2", "a3", prio=-1) + units("RIGHT.b", "b1", prio=-1))
    assert decide(world, "a", 5) == {}
