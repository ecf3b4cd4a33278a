"""ALLOW_PSLOT_PREEMPTION: a job may need several dynamic slots of one partitionable slot; their
resources go back to the p-slot, which the job's dynamic slot is carved from.

HTCondor's matchmaker.cpp ``pslotMultiMatch`` (with ALLOW_PSLOT_PREEMPTION, default False, and a
job saying ``WantPslotPreemption = True``) gives a p-slot its dynamic slots' resources back one
by one, lowest CurrentRank first, until the job matches, the p-slot's ``ChildName`` list naming
its dynamic slots; a dynamic slot goes by startd RANK (its Rank for the job above its
CurrentRank) or, at equal rank, by PREEMPTION_REQUIREMENTS when another customer runs it. Its
``matchmakingAlgorithm`` then offers no rolled-up dynamic slot on its own. Fair sharing picks
the set as Kueue picks victims (``pkg/scheduler/preemption``): lower ``JobPrio`` first, then the
most recently started (``JobStart``), greedy, then minimal (Kueue's ``fillBackWorkloads``),
never preempting when the job still would not fit.
"""

from __future__ import annotations

from typing import Any

import classad2
import pytest

from negotiatord.cycle.result import CycleResult
from negotiatord.settings import Settings
from tests.builders import expr, jobs, pslot, settings
from tests.cycle.test_preemption import NOW, claimed, cycle
from tests.cycle.test_fair_sharing_kueue import CASES as KUEUE_CASES
from tests.cycle.test_fair_sharing_kueue import LARGER_VICTIMS as KUEUE_LARGER_VICTIMS
from tests.fair_sharing_pools import fair_group

NODE = "node.site"


def dynamic(n: int, group: str, cpus: float = 2, **attrs: Any) -> classad2.ClassAd:
    """Dynamic slot ``slot1_<n>`` of ``slot1@node`` running a job of ``<group>.user``; later
    slots started later."""
    base: dict[str, Any] = dict(SlotType="Dynamic", DynamicSlot=True, ParentSlotId=1, Machine=NODE,
                                AccountingGroup=f"{group}.user@site", GlobalJobId=f"{group}#{n}",
                                JobStart=NOW - 10_000 + n, Cpus=cpus, Memory=1024, Disk=1000)
    base.update(attrs)
    return claimed(f"slot1_{n}@{NODE}", f"{group}.user@site", **base)


def node(children: list[classad2.ClassAd], cpus: float = 0) -> list[classad2.ClassAd]:
    """``slot1@node`` with ``cpus`` left, naming ``children`` in its ChildName list, and them."""
    names = [str(child["Name"]) for child in children]
    return [pslot(f"slot1@{NODE}", cpus=cpus, memory=8192 - 1024 * len(children), disk=10000 - 1000 * len(children),
                  Machine=NODE, SlotID=1, NumDynamicSlots=len(children), ChildName=names), *children]


def fair(**changes: object) -> Settings:
    """Two groups of nominal 4 CPUs; p-slots carve dynamic slots (a consumption policy)."""
    return settings(**{"groups": (fair_group("a", 4), fair_group("b", 4)), "fair_sharing": True,
                       "allow_pslot_preemption": True, "consumption_policy": True, **changes})


def victims(result: CycleResult) -> list[tuple[str | None, str, str | None]]:
    return [(p.victim_job, p.slot, p.strategy) for p in result.preemptions]


def test_a_job_takes_the_fewest_dynamic_slots_in_kueues_order():
    """b holds the whole 8-CPU node in four 2-CPU dynamic slots (borrowing 4); a's 4-CPU job
    reclaims within its nominal 4. Kueue's order: b#2 first (JobPrio -1), then the most recently
    started b#4; with both gone the job fits, and putting b#2 back would not leave room."""
    slots = node([dynamic(1, "b"), dynamic(2, "b", JobPrio=-1), dynamic(3, "b"), dynamic(4, "b")])
    result = cycle(slots, jobs("user", 1, group="a", cpus=4), fair())
    assert victims(result) == [("b#2", f"slot1_2@{NODE}", "reclaim"), ("b#4", f"slot1_4@{NODE}", "reclaim")]
    (match,) = result.matches
    assert match.slot == f"slot1@{NODE}" and match.preempts == "b#2"
    assert match.consumed["Cpus"] == 4
    assert result.usage["b.user@site"] == 4.0 and result.usage["a.user@site"] == 4.0


def test_the_set_is_minimal():
    """Greedy in Kueue's order takes b#1 (JobPrio -1, 1 CPU) and then b#3 (4 CPUs); b#3 alone
    is enough, so b#1 is put back (fillBackWorkloads)."""
    slots = node([dynamic(1, "b", cpus=1, JobPrio=-1), dynamic(2, "b", cpus=3), dynamic(3, "b", cpus=4)])
    result = cycle(slots, jobs("user", 1, group="a", cpus=4), fair())
    assert victims(result) == [("b#3", f"slot1_3@{NODE}", "reclaim")]


def test_free_resources_of_the_pslot_count():
    """With 2 CPUs left on the p-slot, one 2-CPU dynamic slot is enough for a 4-CPU job."""
    slots = node([dynamic(1, "b"), dynamic(2, "b"), dynamic(3, "b")], cpus=2)
    result = cycle(slots, jobs("user", 1, group="a", cpus=4), fair())
    assert victims(result) == [("b#3", f"slot1_3@{NODE}", "reclaim")]


def test_no_preemption_when_the_job_would_still_not_fit():
    """Kueue never preempts when the preemptor still would not fit: a 10-CPU job on an 8-CPU node."""
    slots = node([dynamic(1, "b"), dynamic(2, "b"), dynamic(3, "b"), dynamic(4, "b")])
    result = cycle(slots, jobs("user", 1, group="a", cpus=10), fair())
    assert result.preemptions == () and result.matches == ()


def test_without_the_knob_each_dynamic_slot_is_taken_alone():
    """HTCondor's default (ALLOW_PSLOT_PREEMPTION = False): a job is offered one claimed slot as
    it is, so a 4-CPU job finds no 2-CPU dynamic slot to take."""
    slots = node([dynamic(1, "b"), dynamic(2, "b"), dynamic(3, "b"), dynamic(4, "b")])
    assert cycle(slots, jobs("user", 1, group="a", cpus=4), fair(allow_pslot_preemption=False)).preemptions == ()
    result = cycle(slots, jobs("user", 1, group="a", cpus=2), fair(allow_pslot_preemption=False))
    assert victims(result) == [("b#4", f"slot1_4@{NODE}", "reclaim")]


def test_preempted_dynamic_slots_are_not_offered_again():
    """Two 4-CPU jobs of a (nominal 8) reclaim b's whole node: each takes two dynamic slots,
    newest first, and the p-slot's books balance (what the victims give back, the job takes)."""
    slots = node([dynamic(1, "b"), dynamic(2, "b"), dynamic(3, "b"), dynamic(4, "b")])
    result = cycle(slots, jobs("user", 2, group="a", cpus=4), fair(
        groups=(fair_group("a", 8), fair_group("b", 0))))
    assert [p.victim_job for p in result.preemptions] == ["b#4", "b#3", "b#2", "b#1"]
    assert [m.preempts for m in result.matches] == ["b#4", "b#2"]
    assert result.usage["a.user@site"] == 8.0 and result.usage["b.user@site"] == 0.0


def test_the_rule_keeps_victims_within_what_the_job_takes():
    """The no-loop rule (docs/fair-sharing.md): victims may hold no more of a resource than the
    preemptor takes, so a 3-CPU job of a does not free two 2-CPU dynamic slots, whether a
    borrows (nominal 2) or reclaims within its nominal share (4)."""
    slots = node([dynamic(1, "b"), dynamic(2, "b"), dynamic(3, "b"), dynamic(4, "b")])
    borrowing = fair(groups=(fair_group("a", 2), fair_group("b", 4)))
    assert cycle(slots, jobs("user", 1, group="a", cpus=3), borrowing).preemptions == ()
    assert cycle(slots, jobs("user", 1, group="a", cpus=3), fair()).preemptions == ()


# -- HTCondor's own rules: pslotMultiMatch ------------------------------------------------------

VIP_RANK = expr('ifThenElse(TARGET.Owner == "vip", 10, 0)')


def htcondor(**changes: object) -> Settings:
    return settings(**{"allow_pslot_preemption": True, "consumption_policy": True, **changes})


def test_startd_rank_frees_dynamic_slots_lowest_current_rank_first():
    """pslotMultiMatch sorts the dynamic slots by CurrentRank and gives them back in that order
    until the p-slot matches: the vip's 4-CPU job takes slot1_2 and slot1_3 (CurrentRank 0),
    not slot1_1 (CurrentRank 5, still below the vip's 10), by startd RANK with
    PREEMPTION_REQUIREMENTS at HTCondor's default False."""
    slots = node([dynamic(1, "b", Rank=VIP_RANK, CurrentRank=5.0), dynamic(2, "b", Rank=VIP_RANK),
                  dynamic(3, "b", Rank=VIP_RANK), dynamic(4, "b", Rank=VIP_RANK)])
    result = cycle(slots, jobs("vip", 1, cpus=4, WantPslotPreemption=True), htcondor())
    assert [(p.victim_job, p.rule) for p in result.preemptions] == [("b#2", "rank"), ("b#3", "rank")]
    (match,) = result.matches
    assert match.slot == f"slot1@{NODE}" and match.preempts == "b#2" and match.consumed["Cpus"] == 4
    assert result.usage["vip@site"] == 4.0 and result.usage["b.user@site"] == 4.0


def test_a_job_must_want_pslot_preemption_and_rolled_up_dynamic_slots_are_not_offered_alone():
    """Without ``WantPslotPreemption`` pslotMultiMatch is not tried, and with the knob on
    matchmakingAlgorithm skips the rolled-up dynamic slots: even a 2-CPU job preempts nothing.
    With the knob off (HTCondor's default) that job takes one dynamic slot by RANK."""
    slots = node([dynamic(n, "b", Rank=VIP_RANK) for n in range(1, 5)])
    assert cycle(slots, jobs("vip", 1, cpus=4), htcondor()).preemptions == ()
    assert cycle(slots, jobs("vip", 1, cpus=2), htcondor()).preemptions == ()
    result = cycle(slots, jobs("vip", 1, cpus=2), htcondor(allow_pslot_preemption=False))
    assert [(p.victim_job, p.rule) for p in result.preemptions] == [("b#1", "rank")]


def test_priority_preemption_skips_the_submitters_own_dynamic_slots():
    """At equal rank a dynamic slot goes only when PREEMPTION_REQUIREMENTS holds with it as MY
    and its customer is not the submitter: user's own slot1_1 stays, slot1_2 and slot1_3 go,
    and the candidate is a priority preemption."""
    slots = node([dynamic(1, "user"), dynamic(2, "b"), dynamic(3, "b"), dynamic(4, "b")])
    slots[1]["AccountingGroup"] = "user@site"
    slots[1]["RemoteUser"] = "user@site"
    result = cycle(slots, jobs("user", 1, cpus=4, WantPslotPreemption=True),
                   htcondor(preemption_requirements="True"))
    assert [(p.victim_job, p.rule) for p in result.preemptions] == [("b#2", "priority"), ("b#3", "priority")]
    assert result.matches[0].slot == f"slot1@{NODE}"


# -- Kueue's fair-sharing table in the p-slot form ----------------------------------------------

def _kueue_node(running: list, capacity: float) -> list[classad2.ClassAd]:
    """One p-slot of ``capacity`` CPUs whose claimed dynamic slots run the case's workloads (a
    RunningJob each: its group, CPUs, JobPrio, job id), all started at the same instant."""
    children = [claimed(f"slot1_{n}@{NODE}", f"{job.group}.user@site", SlotType="Dynamic", DynamicSlot=True,
                        ParentSlotId=1, Machine=NODE, AccountingGroup=f"{job.group}.user@site",
                        GlobalJobId=job.job_id, JobStart=NOW - 1000, JobPrio=job.prio,
                        Cpus=job.resources.get("cpus", 0.0), Memory=1, Disk=1)
                for n, job in enumerate(running, 1)]
    used = sum(job.resources.get("cpus", 0.0) for job in running)
    return [pslot(f"slot1@{NODE}", cpus=capacity - used, memory=1024, disk=1000, Machine=NODE, SlotID=1,
                  NumDynamicSlots=len(children), ChildName=[str(c["Name"]) for c in children]), *children]


@pytest.mark.parametrize("case", [*KUEUE_CASES, *KUEUE_LARGER_VICTIMS])
def test_kueues_fair_preemptions_in_the_pslot_form(case):
    """Each case of ``tests/cycle/test_fair_sharing_kueue.py`` (Kueue's TestFairPreemptions) through
    the cycle, its workloads as claimed dynamic slots of one p-slot (ALLOW_PSLOT_PREEMPTION): the
    same victims, each by the same rule, or none."""
    groups, capacity, running, (group, cpus), strategies, expected = {**KUEUE_CASES, **KUEUE_LARGER_VICTIMS}[case]
    config = settings(groups=tuple(groups), fair_sharing=True, allow_pslot_preemption=True, consumption_policy=True,
                      fair_sharing_strategies=strategies,
                      consumption={"cpus": "TARGET.RequestCpus", "memory": "0", "disk": "0"})
    result = cycle(_kueue_node(running, capacity), jobs("user", 1, group=group, cpus=cpus, memory=0, disk=0), config)
    if case in KUEUE_LARGER_VICTIMS:
        expected = {}                  # refused, as by the rule alone
    assert {p.victim_job: p.strategy for p in result.preemptions} == expected
