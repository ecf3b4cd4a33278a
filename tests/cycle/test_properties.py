"""Properties every cycle must keep, over random pools: no slot over-committed, costs add up to
charges and usage, allocations within the pool, and the same input always gives the same cycle."""

from collections import defaultdict

import classad2
from hypothesis import HealthCheck, given, settings as hsettings, strategies as st

from negotiatord.accountant import AccountantState
from negotiatord.pool.builder import build_snapshot
from negotiatord.runtime import run_cycle
from tests.builders import expr, group, jobs, pslot, settings, static_slot

NOW = 1_700_000_000

POLICIES = {
    "cpu": dict(SlotWeight=expr("Cpus"), ConsumptionCpus=expr("TARGET.RequestCpus"),
                ConsumptionMemory=expr("TARGET.RequestMemory"), ConsumptionDisk=expr("TARGET.RequestDisk")),
    "memory": dict(SlotWeight=expr("floor(Memory / 256)"), ConsumptionCpus=expr("TARGET.RequestCpus"),
                   ConsumptionMemory=expr("quantize(TARGET.RequestMemory, {256})"),
                   ConsumptionDisk=expr("TARGET.RequestDisk")),
    "multi": dict(SlotWeight=expr("ifThenElse(Cpus < floor(Memory/256), Cpus, floor(Memory/256))"),
                  ConsumptionCpus=expr("TARGET.RequestCpus"),
                  ConsumptionMemory=expr("quantize(TARGET.RequestMemory, {256})"),
                  ConsumptionDisk=expr("TARGET.RequestDisk")),
    "legacy": {},
}

slot_specs = st.lists(
    st.tuples(st.sampled_from(sorted(POLICIES) + ["static"]), st.integers(1, 12), st.integers(1, 16)),
    min_size=1, max_size=6,
)
job_specs = st.lists(
    st.tuples(st.sampled_from(["alice", "bob", "carol"]), st.integers(1, 12),
              st.sampled_from([0.5, 1, 2, 3]), st.sampled_from([100, 256, 700, 2000])),
    min_size=1, max_size=6,
)
group_modes = st.sampled_from(["none", "flat", "surplus"])


def slots_of(slot_spec):
    """Slot ads from (policy or "static", cpus, memory in GiB) triples, named slot0, slot1, ..."""
    return [static_slot(f"slot{i}", cpus=cpus, memory=gigabytes * 1024) if kind == "static"
            else pslot(f"slot{i}", cpus=cpus, memory=gigabytes * 1024, **POLICIES[kind])
            for i, (kind, cpus, gigabytes) in enumerate(slot_spec)]


def build(slot_spec, job_spec, mode):
    slot_ads = slots_of(slot_spec)
    tree = () if mode == "none" else (
        group("group_a", dynamic=0.6, surplus=mode == "surplus"),
        group("group_b", dynamic=0.4, surplus=mode == "surplus"),
    )
    job_ads = []
    for cluster, (owner, count, cpus, memory) in enumerate(job_spec, start=1):
        grp = None if mode == "none" or owner == "carol" else ("group_a" if owner == "alice" else "group_b")
        job_ads += jobs(owner, count, cluster=cluster, group=grp, cpus=cpus, memory=memory, disk=10)
    config = settings(groups=tree, accept_surplus=mode == "surplus")
    return slot_ads, job_ads, config


def cycle(slot_ads, job_ads, config):
    return run_cycle(build_snapshot(slot_ads, job_ads, config), AccountantState(), config, NOW)


@hsettings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(slot_specs, job_specs, group_modes)
def test_cycle_invariants(slot_spec, job_spec, mode):
    slot_ads, job_ads, config = build(slot_spec, job_spec, mode)
    result = cycle(slot_ads, job_ads, config)
    slots = {ad["Name"]: ad for ad in slot_ads}

    # no slot is ever over-committed: consumption within what the slot had; legacy slots once
    consumed = defaultdict(lambda: defaultdict(float))
    per_slot = defaultdict(int)
    for match in result.matches:
        per_slot[match.slot] += 1
        for asset, amount in match.consumed.items():
            consumed[match.slot][asset] += amount
    for name, used in consumed.items():
        ad = slots[name]
        for asset, amount in used.items():
            assert amount <= ad[asset] + 1e-9, (name, asset)
        if "ConsumptionCpus" not in ad:
            assert per_slot[name] == 1

    # every job matches at most once
    assert len({m.job for m in result.matches}) == len(result.matches)

    # costs sum to charges and to usage (no running work here, so usage is this cycle's charges)
    costs = defaultdict(float)
    for match in result.matches:
        costs[match.submitter] += match.cost
        assert match.cost >= -1e-9
    for submitter, total in costs.items():
        assert abs(result.charges[submitter] - total) < 1e-6
        assert abs(result.usage[submitter] - total) < 1e-6
    group_charges = defaultdict(float)
    for match in result.matches:
        group_charges[match.group] += match.cost
    for name, total in group_charges.items():
        if name != "<none>":
            assert abs(result.charges[name] - total) < 1e-6

    # allocations never add up to more than the pool
    assert sum(g.own_allocated for g in result.groups) <= result.stats.pool_size + 1e-6

    # deterministic: the same input gives the same cycle
    again = cycle(slot_ads, job_ads, config)
    assert again.matches == result.matches
    assert again.rejections == result.rejections


def test_every_match_is_a_classad2_match_on_the_slot_as_it_was_then():
    """Replays the cycle's matches with classad2 alone: each p-slot copy loses what earlier matches
    consumed, the job's Request<Res> are replaced by the consumption (HTCondor's
    cp_override_requested), then both ads' Requirements must hold."""
    slot_ads, job_ads, config = build([("memory", 8, 4), ("cpu", 4, 8), ("multi", 6, 2), ("static", 2, 4)],
                                      [("alice", 10, 1, 700), ("bob", 10, 2, 100)], "none")
    result = cycle(slot_ads, job_ads, config)
    assert len(result.matches) > 10
    slots = {ad["Name"]: classad2.parseOne(ad.printOld(), classad2.ParserType.Old) for ad in slot_ads}
    ads = {ad["GlobalJobId"]: ad for ad in job_ads}
    for match in result.matches:
        slot = slots[match.slot]
        job = classad2.parseOne(ads[match.job].printOld(), classad2.ParserType.Old)
        if "ConsumptionCpus" in slot:
            for asset, amount in match.consumed.items():
                if f"Request{asset}" in job:
                    job[f"Request{asset}"] = amount
        assert job.symmetricMatch(slot), (match.job, match.slot)
        if "ConsumptionCpus" in slot:
            for asset, amount in match.consumed.items():
                slot[asset] = slot[asset] - amount
