"""Consumption policies and match cost, re-derived from HTCondor's published behaviour.

Sources: the seed (Erlandson, "Consumption Policies and Unifying Heterogeneous Resource
Constraints", ../shared/seeds/003_*.txt) and HTCondor's consumption_policy unit tests.
"""

from collections import Counter

import pytest

from negotiatord.accountant import AccountantState
from negotiatord.pool.builder import build_snapshot
from negotiatord.runtime import run_cycle
from tests.builders import expr, group, jobs, pslot, settings, static_slot

NOW = 1_700_000_000


def run(slot_ads, job_ads, config=None):
    config = config or settings()
    return run_cycle(build_snapshot(slot_ads, job_ads, config), AccountantState(), config, NOW)


def per_slot(result):
    return Counter(m.slot for m in result.matches)


def test_four_policies_fill_five_four_three_and_one_jobs():
    """Four 5-cpu/100 MB p-slots: CPU, memory (quantized to 25 MB, weight floor(Memory/25)),
    token and static-slot policies take 5, 4, 3 and 1 one-cpu jobs in one cycle."""
    common = dict(cpus=5, memory=100, disk=1000, ConsumptionDisk=expr("TARGET.RequestDisk"))
    slots = [
        pslot("cpu", ConsumptionCpus=expr("TARGET.RequestCpus"), ConsumptionMemory=expr("TARGET.RequestMemory"),
              SlotWeight=expr("Cpus"), **common),
        pslot("memory", ConsumptionCpus=expr("TARGET.RequestCpus"),
              ConsumptionMemory=expr("quantize(TARGET.RequestMemory, {25})"),
              SlotWeight=expr("floor(Memory / 25)"), **common),
        pslot("token", MachineResources="Cpus Memory Disk Tokens", Tokens=3, ConsumptionTokens=1,
              ConsumptionCpus=expr("TARGET.RequestCpus"), ConsumptionMemory=expr("TARGET.RequestMemory"),
              SlotWeight=expr("Tokens"), **common),
        pslot("static", ConsumptionCpus=expr("TotalSlotCpus"), ConsumptionMemory=expr("TotalSlotMemory"),
              ConsumptionDisk=expr("floor(0.9 * TotalSlotDisk)"), SlotWeight=1,
              **{k: v for k, v in common.items() if k != "ConsumptionDisk"}),
    ]
    result = run(slots, jobs("alice", 20, memory=20, disk=10))
    assert per_slot(result) == {"cpu": 5, "memory": 4, "token": 3, "static": 1}
    assert len(result.rejections) >= 1  # the seven jobs left over find no slot


def test_quantized_policy_charges_the_slot_weight_it_removes():
    """HTCondor's cp_deduct test: Cpus 3, Memory 200, Disk 2000, quantize to {2,128,1024},
    SLOT_WEIGHT = Cpus: a 1-cpu job costs 2 and leaves 1 cpu, 72 MB, 976 disk."""
    slot = pslot("s", cpus=3, memory=200, disk=2000, SlotWeight=expr("Cpus"),
                 ConsumptionCpus=expr("quantize(TARGET.RequestCpus, {2})"),
                 ConsumptionMemory=expr("quantize(TARGET.RequestMemory, {128})"),
                 ConsumptionDisk=expr("quantize(TARGET.RequestDisk, {1024})"))
    result = run([slot], jobs("alice", 1, memory=100, disk=10))
    [match] = result.matches
    assert match.cost == 2
    assert match.consumed == {"Cpus": 2, "Memory": 128, "Disk": 1024}
    assert (3 - 2, 200 - 128, 2000 - 1024) == (1, 72, 976)


def test_seed_eight_core_example_costs_one_match_per_job():
    """The seed: SlotWeight = Cpus = 8; a 1-cpu job leaves 7, so the cost is 8 - 7 = 1."""
    config = settings(consumption_policy=True, consumption={"cpus": "target.RequestCpus",
                      "memory": "target.RequestMemory", "disk": "target.RequestDisk"})
    result = run([pslot("eight", cpus=8)], jobs("alice", 10), config)
    assert [m.cost for m in result.matches] == [1.0] * 8
    assert per_slot(result) == {"eight": 8}


def test_group_below_slot_weight_starves_under_legacy_cost_but_not_with_a_policy():
    """The seed's starvation case: quota 16 on a 32-core p-slot."""
    tree = (group("group_a", quota=16),)
    job_ads = jobs("alice", 40, group="group_a")
    legacy = run([pslot("big", cpus=32)], job_ads, settings(groups=tree))
    assert len(legacy.matches) <= 1
    assert all(m.cost == 32 for m in legacy.matches)

    policy = settings(groups=tree, consumption_policy=True)
    loaded = run([pslot("big", cpus=32)], job_ads, policy)
    assert len(loaded.matches) == 16
    assert {m.cost for m in loaded.matches} == {1.0}
    assert sum(m.cost for m in loaded.matches) == 16


def test_infeasible_consumption_never_matches():
    """Negative, non-numeric or all-zero consumption makes a p-slot infeasible (cp_sufficient_assets)."""
    base = dict(SlotWeight=expr("Cpus"), ConsumptionDisk=0)
    negative = pslot("negative", ConsumptionCpus=-1, ConsumptionMemory=expr("TARGET.RequestMemory"), **base)
    text = pslot("text", ConsumptionCpus='"one"', ConsumptionMemory=expr("TARGET.RequestMemory"), **base)
    zero = pslot("zero", ConsumptionCpus=0, ConsumptionMemory=0, **base)
    result = run([negative, text, zero], jobs("alice", 3))
    assert result.matches == ()
    assert {r.reason for r in result.rejections} == {"no match found"}


def test_sub_core_jobs_use_non_integer_consumption():
    """Non-integer resources (the seed's future work): four 0.25-cpu jobs fit one cpu."""
    slot = pslot("one", cpus=1, SlotWeight=expr("Cpus"), ConsumptionCpus=expr("TARGET.RequestCpus"),
                 ConsumptionMemory=expr("TARGET.RequestMemory"), ConsumptionDisk=expr("TARGET.RequestDisk"))
    result = run([slot], jobs("alice", 6, cpus=0.25))
    assert len(result.matches) == 4
    assert [m.cost for m in result.matches] == [0.25] * 4


def test_missing_request_counts_as_zero():
    slot = pslot("gpu", MachineResources="Cpus Memory Disk GPUs", GPUs=2, SlotWeight=expr("Cpus"),
                 ConsumptionCpus=expr("TARGET.RequestCpus"), ConsumptionMemory=expr("TARGET.RequestMemory"),
                 ConsumptionDisk=expr("TARGET.RequestDisk"), ConsumptionGPUs=expr("TARGET.RequestGPUs"))
    result = run([slot], jobs("alice", 1))
    [match] = result.matches
    assert match.consumed["GPUs"] == 0


def test_legacy_slots_take_one_job_and_cost_their_whole_weight():
    slots = [pslot("legacy-pslot", cpus=4), static_slot("static", cpus=2)]
    result = run(slots, jobs("alice", 5))
    assert per_slot(result) == {"legacy-pslot": 1, "static": 1}
    assert sorted(m.cost for m in result.matches) == [2.0, 4.0]


def test_config_policy_applies_to_pslots_that_publish_none():
    config = settings(consumption_policy=True)
    carried = pslot("carries-own", cpus=4, SlotWeight=1, ConsumptionCpus=expr("TARGET.RequestCpus"),
                    ConsumptionMemory=expr("TARGET.RequestMemory"), ConsumptionDisk=expr("TARGET.RequestDisk"))
    bare = pslot("bare", cpus=4)
    opted_out = pslot("opted-out", cpus=4, ConsumptionPolicy=False)
    result = run([carried, bare, opted_out], jobs("alice", 20), config)
    counts = per_slot(result)
    assert counts["bare"] == 4 and counts["opted-out"] == 1
    # the slot's own SlotWeight = 1 never changes, so its matches are free
    assert {m.cost for m in result.matches if m.slot == "carries-own"} == {0.0}


@pytest.mark.parametrize("broken", [
    dict(MachineResources="Cpus Memory Disk GPUs"),      # asset listed but missing
    dict(SlotWeight=expr("undefined")),                  # weight that does not evaluate
])
def test_slot_htcondor_would_crash_on_is_left_out_with_a_reason(broken):
    slots = [pslot("bad", cpus=4, **broken), pslot("good", cpus=4)]
    result = run(slots, jobs("alice", 3))
    assert {m.slot for m in result.matches} == {"good"}
    assert any("bad" in p for p in result.problems)


def test_a_repeated_slot_name_keeps_the_last_ad_and_says_so():
    first, second = pslot("twin", cpus=1), pslot("twin", cpus=4)
    result = run([first, second], jobs("alice", 6), settings(consumption_policy=True))
    assert len(result.matches) == 4
    assert any("twin" in p and "more than once" in p for p in result.problems)
