"""Fair sharing by Dominant Resource Share in the cycle: claimed slots taken through negotiate().

Kueue's ``pkg/scheduler/preemption/preemption_fair_test.go`` ``TestFairPreemptions`` cases,
re-expressed with claimed static slots of one CPU each (a Kueue workload of 1 CPU is a job
running on one of them) and groups with ``GROUP_RESOURCE_QUOTA = Cpus:3`` in place of
ClusterQueues of nominal quota 3 in one cohort of 9 CPUs. The rule alone is checked against the
whole table in ``test_fair_sharing_kueue.py``; here the cycle must build its inputs from the
slot ads (``AccountingGroup``, ``GlobalJobId``, ``JobStart``, ``JobPrio``), commit the
decision through its preemption path and report it (docs/cycle.md, "Fair sharing").
"""

from __future__ import annotations

from dataclasses import replace

from negotiatord.cycle.result import CycleResult
from negotiatord.settings import Settings
from tests.builders import jobs, settings, static_slot
from tests.cycle.test_preemption import NOW, claimed, cycle
from tests.fair_sharing_pools import fair_group

GROUPS = (fair_group("a", 3), fair_group("b", 3), fair_group("c", 3))


def running(group: str, count: int, first: int) -> list:
    """``count`` claimed slots running jobs of ``<group>.user``; later slots started later."""
    return [claimed(f"s{n}", f"{group}.user@site", AccountingGroup=f"{group}.user@site",
                    GlobalJobId=f"{group}#{n}", JobStart=NOW - 10_000 + n)
            for n in range(first, first + count)]


def fair(**changes: object) -> Settings:
    return settings(**{"groups": GROUPS, "fair_sharing": True, **changes})


def pool() -> list:
    """a runs 3, b runs 5 (borrowing 2), c runs 1: the pool of 9 CPUs is full."""
    return running("a", 3, 0) + running("b", 5, 3) + running("c", 1, 8)


def victims(result: CycleResult) -> list[tuple[str | None, str, str, str | None]]:
    return [(p.victim_job, p.victim_group, p.rule, p.strategy) for p in result.preemptions]


def test_reclaim_nominal_from_the_group_using_the_most():
    """Kueue: "reclaim nominal from user using the most": c (1 of 3) takes back from b, whose
    most recently started job goes (JobStart)."""
    result = cycle(pool(), jobs("user", 1, group="c"), fair())
    assert victims(result) == [("b#7", "b", "fair_sharing", "reclaim")]
    (match,) = result.matches
    assert match.slot == "s7" and match.preempts == "b#7" and match.submitter == "c.user@site"
    assert result.usage["b.user@site"] == 4.0 and result.usage["c.user@site"] == 2.0


def test_reclaim_borrowable_quota_from_the_group_using_the_most():
    """Kueue: "reclaim borrowable quota from user using the most": a (at its 3) borrows by
    taking b's latest job, which LessThanOrEqualToFinalShare allows (a after: 1 borrowed, b
    after: 1 borrowed); a second job of a would make a borrow 2 against b's 0: refused."""
    result = cycle(pool(), jobs("user", 2, group="a"), fair())
    assert victims(result) == [("b#7", "b", "fair_sharing", "LessThanOrEqualToFinalShare")]
    assert len(result.matches) == 1


def test_no_preemption_when_every_group_is_within_its_share():
    """Kueue: "can't preempt when everyone under nominal"."""
    slots = running("a", 3, 0) + running("b", 3, 3) + running("c", 3, 6)
    result = cycle(slots, jobs("user", 1, group="c"), fair())
    assert result.preemptions == () and result.matches == ()


def test_lower_job_priority_goes_first():
    """Kueue's CandidatesOrdering: lower priority before the most recently started."""
    slots = pool()
    slots[4]["JobPrio"] = -1
    result = cycle(slots, jobs("user", 1, group="c"), fair())
    assert victims(result) == [("b#4", "b", "fair_sharing", "reclaim")]


def test_idle_slots_go_first_and_quota_does_not_cap_borrowing():
    """The rule is asked only for jobs the free slots could not take; with fair sharing the HGQ
    split does not cap a group (c has no HGQ quota here, only GROUP_RESOURCE_QUOTA)."""
    result = cycle(pool() + [static_slot("idle")], jobs("user", 1, group="c"), fair())
    assert result.preemptions == () and [m.slot for m in result.matches] == ["idle"]


def test_off_by_default():
    result = cycle(pool(), jobs("user", 1, group="c"), replace(fair(), fair_sharing=False))
    assert result.preemptions == () and result.matches == ()


def test_a_borrowing_limit_in_matches_caps_free_slots_beyond_the_quota():
    """GROUP_BORROWING_LIMIT_c = matches:2 over an HGQ quota of 0 (c has none), c holding 1: one
    of two free slots; without fair sharing HGQ gives c nothing."""
    groups = (fair_group("a", 3), fair_group("b", 3), fair_group("c", 3, borrowing_limit={"matches": 2}))
    free = [static_slot("idle1"), static_slot("idle2")]
    result = cycle(pool() + free, jobs("user", 2, group="c"), fair(groups=groups))
    assert [m.slot for m in result.matches if m.preemption is None] == ["idle1"]
    assert cycle(pool() + free, jobs("user", 2, group="c"), replace(fair(), fair_sharing=False)).matches == ()


def test_beside_htcondors_preemption():
    """NEGOTIATOR_CONSIDER_PREEMPTION with HTCondor's default PREEMPTION_REQUIREMENTS (False)
    takes no claimed slot here (Rank is not above CurrentRank); fair sharing still reclaims. With
    PREEMPTION_REQUIREMENTS = True, HTCondor's rule, asked during matchmaking, takes a slot for
    each job (the best PREEMPTION_RANK first), and fair sharing, asked after, has no job left:
    no slot is preempted twice."""
    result = cycle(pool(), jobs("user", 1, group="c"), fair(consider_preemption=True))
    assert victims(result) == [("b#7", "b", "fair_sharing", "reclaim")]
    both = cycle(pool(), jobs("user", 2, group="c"), fair(consider_preemption=True, preemption_requirements="True"))
    assert [p.rule for p in both.preemptions] == ["priority", "priority"]
    assert len({p.slot for p in both.preemptions}) == 2 and len(both.matches) == 2


def test_a_job_the_rule_leaves_idle_is_reported_with_its_reason():
    """Kueue's "reclaim borrowable quota" case with two jobs of a: the first takes b's latest
    job, the second would make a borrow 2 against b's 0 and stays idle. HTCondor's negotiator
    tells the schedd why each request it leaves idle got nothing ("no match found",
    matchmaker.cpp ``negotiate``), so the second job is among the cycle's rejections even though
    the first job of its request, rejected in the matchmaking rounds, was matched after."""
    result = cycle(pool(), jobs("user", 2, group="a"), fair())
    (match,) = result.matches
    idle = [job for job in ("user-schedd#1.0#0", "user-schedd#1.1#0") if job != match.job]
    assert [(r.job, r.reason) for r in result.rejections] == [(idle[0], "no match found")]
    assert result.stats.rejections == 1
