"""FastEvaluator answers exactly what ClassAdEvaluator answers, and a cycle run with either makes
the same matches.

Pools: OSPool-shaped ones from benchmarks/pool_generator.py (real START / WithinResourceLimits /
Rank expressions, real occupancy), the cycle tests' consumption-policy pools, and slots and jobs
built to hit awkward corners (non-numeric or negative consumption, integer division in
SlotWeight, job-side expressions, expressions the fast path leaves to classad2).
"""

from __future__ import annotations

import gc
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from negotiatord.accountant import AccountantState
from negotiatord.evaluation import ClassAdEvaluator
from negotiatord.fastpath.interpreter import shared_offer
from negotiatord.fastpath.interpreter.evaluator import FastEvaluator
from negotiatord.pool.builder import SnapshotBuilder, build_snapshot
from negotiatord.runtime import run_cycle
from negotiatord.settings import load_settings
from tests.builders import expr, jobs, pslot, settings, static_slot

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from pool_generator import CONFIG_PATH, generate_pool  # noqa: E402

NOW = 1_700_000_000
HTCONDOR_PRE_JOB_RANK = ("(10000000 * My.Rank) + (1000000 * (RemoteOwner =?= UNDEFINED)) - (100000 * Cpus) - Memory")
HTCONDOR_POST_JOB_RANK = ("(RemoteOwner =?= UNDEFINED) * (ifthenElse(isUndefined(KFlops), 1000, Kflops) - SlotID - "
                          "1.0e10*(Offline=?=True))")


def assert_same(reference, fast):
    for field in ("rows", "matched", "consumption", "cost", "rank"):
        assert np.array_equal(getattr(reference, field), getattr(fast, field), equal_nan=True), field


def compare_everything(snapshot, config, now, amounts=None):
    """Every autocluster against every candidate slot, at the table's amounts or at ``amounts``;
    returns (pairs, matches) so callers can check the comparison was not vacuous."""
    table = snapshot.table
    reference, fast = ClassAdEvaluator(table, config, now), FastEvaluator(table, config, now)
    rows = np.arange(len(table))
    assert np.array_equal(reference.slot_weights(rows, table.amounts), fast.slot_weights(rows, table.amounts),
                          equal_nan=True)
    candidates = np.flatnonzero(table.candidate)
    current = table.amounts[candidates] if amounts is None else amounts
    matched = 0
    for autocluster in snapshot.autoclusters:
        expected = reference.assess(autocluster, candidates, current)
        assert_same(expected, fast.assess(autocluster, candidates, current))
        for i in np.flatnonzero(expected.matched)[:3]:           # one row at a time, as re-assessment does
            one = candidates[i:i + 1]
            assert_same(reference.assess(autocluster, one, current[i:i + 1]), fast.assess(autocluster, one,
                                                                                          current[i:i + 1]))
        matched += int(expected.matched.sum())
    return len(snapshot.autoclusters) * len(candidates), matched, fast


@pytest.fixture(scope="module")
def ospool():
    return generate_pool(900, 1200, seed=3)


@pytest.mark.parametrize("consumption_policy", [True, False])
def test_ospool_shaped_pool(ospool, consumption_policy):
    config = replace(load_settings(CONFIG_PATH), consumption_policy=consumption_policy)
    snapshot = build_snapshot(ospool.slot_ads, ospool.job_ads, config)
    pairs, matched, fast = compare_everything(snapshot, config, ospool.now)
    assert pairs > 1000 and matched > 50
    assert fast.stats.fallbacks == 0
    # the same answers with fragments ruled out by known consumptions before the kernel (bounds.py)
    assert (fast.stats.pruned_pairs > pairs // 10) == consumption_policy


def test_ospool_shaped_pool_after_partial_matches(ospool):
    """Slots whose amounts changed during the cycle are typed as the reference's ad copies are
    (assign_preserve_integers: whole numbers become integers), including fractional leftovers."""
    config = load_settings(CONFIG_PATH)
    snapshot = build_snapshot(ospool.slot_ads, ospool.job_ads, config)
    table = snapshot.table
    candidates = np.flatnonzero(table.candidate)
    rng = np.random.default_rng(7)
    amounts = table.amounts[candidates] * rng.choice([1.0, 0.5, 0.25, 0.3333], size=table.amounts[candidates].shape)
    pairs, matched, _ = compare_everything(snapshot, config, ospool.now, amounts)
    assert matched > 20


def awkward_pool():
    """Slots and jobs at the corners of the consumption-policy rules and of the expression language."""
    slots = [
        pslot("cpu", cpus=8, memory=8192, ConsumptionCpus=expr("TARGET.RequestCpus"),
              ConsumptionMemory=expr("quantize(TARGET.RequestMemory, {128})"), ConsumptionDisk=0,
              SlotWeight=expr("Cpus / 3")),                                  # integer division
        pslot("half", cpus=4, memory=4096, ConsumptionCpus=expr("TARGET.RequestCpus / 2.0"),
              ConsumptionMemory=expr("TARGET.RequestMemory"), ConsumptionDisk=expr("TARGET.RequestDisk"),
              SlotWeight=expr("Cpus + Memory / 1024.0")),                    # sub-core consumption
        pslot("bad", cpus=4, memory=4096, ConsumptionCpus=expr('"one"'), ConsumptionMemory=expr("-1"),
              ConsumptionDisk=0),                                           # never feasible
        pslot("gpu", cpus=8, memory=16384, MachineResources="Cpus Memory Disk GPUs", GPUs=2,
              ConsumptionCpus=expr("TARGET.RequestCpus"), ConsumptionMemory=expr("TARGET.RequestMemory"),
              ConsumptionDisk=0, ConsumptionGPUs=expr("TARGET.RequestGPUs ?: 0"),
              Requirements=expr("(TARGET.RequestGPUs ?: 0) <= GPUs && TARGET.RequestCpus <= Cpus && "
                                "stringListMember(TARGET.Owner, \"alice,bob\")"),
              SlotWeight=expr("Cpus + 10 * GPUs")),
        pslot("config", cpus=6, memory=6000, Rank=expr("TARGET.RequestMemory / 100")),   # config's CONSUMPTION_*
        pslot("scoped", cpus=2, memory=2000, Requirements=expr('eval("TARGET.RequestCpus <= MY.Cpus")')),
        static_slot("static", cpus=2, memory=2048, Requirements=expr("TARGET.RequestMemory <= Memory && Rank >= 0"),
                    Rank=1.5, KFlops=1000, SlotID=3),
        static_slot("claimed", State="Claimed", RemoteUser="carol@site", AccountingGroup="carol@site"),
    ]
    job_ads = (
        jobs("alice", 3, cpus=1, memory=1000)
        + jobs("alice", 2, cluster=2, cpus=2, memory=expr("RequestCpus * 700"), Rank=expr("TARGET.Memory"))
        + jobs("bob", 2, cluster=3, cpus=1, memory=300, RequestGPUs=1, Rank=expr('"high"'),
               Requirements=expr("TARGET.GPUs >= RequestGPUs"))
        + jobs("carol", 2, cluster=4, cpus=1, memory=100, Requirements=expr("TARGET.Cpus > 100"))
        + jobs("dave", 1, cluster=5, cpus=3, memory=2500, Rank=expr("TARGET.KFlops ?: -1"))
    )
    return slots, job_ads


@pytest.mark.parametrize("consumption_policy", [True, False])
@pytest.mark.parametrize("ranks", [False, True])
def test_awkward_pool(consumption_policy, ranks):
    config = settings(consumption_policy=consumption_policy)
    if ranks:
        config = replace(config, pre_job_rank=HTCONDOR_PRE_JOB_RANK, post_job_rank=HTCONDOR_POST_JOB_RANK)
    slots, job_ads = awkward_pool()
    snapshot = build_snapshot(slots, job_ads, config)
    pairs, matched, fast = compare_everything(snapshot, config, NOW)
    assert matched > 5
    # the slot whose Requirements need eval() is answered by classad2, and counted
    assert fast.stats.fallback_evaluations["slot_requirements"] > 0
    assert any("eval()" in reason for reason in fast.stats.fallback_leaves)


def results_of(snapshot, config, now, evaluator):
    result = run_cycle(snapshot, AccountantState(), config, now, evaluator=evaluator)
    return ([(m.job, m.slot, m.submitter, m.group, m.cost, m.consumed) for m in result.matches],
            [(r.job, r.reason) for r in result.rejections])


@pytest.mark.parametrize("consumption_policy", [True, False])
def test_cycle_makes_the_same_matches(ospool, consumption_policy):
    config = replace(load_settings(CONFIG_PATH), consumption_policy=consumption_policy)
    snapshot = build_snapshot(ospool.slot_ads, ospool.job_ads, config)
    reference = results_of(snapshot, config, ospool.now, ClassAdEvaluator(snapshot.table, config, ospool.now))
    fast = results_of(snapshot, config, ospool.now, FastEvaluator(snapshot.table, config, ospool.now))
    assert len(reference[0]) > 10
    assert fast == reference


def test_cycle_on_awkward_pool_makes_the_same_matches():
    config = replace(settings(consumption_policy=True), pre_job_rank=HTCONDOR_PRE_JOB_RANK)
    slots, job_ads = awkward_pool()
    snapshot = build_snapshot(slots, job_ads, config)
    reference = results_of(snapshot, config, NOW, ClassAdEvaluator(snapshot.table, config, NOW))
    assert len(reference[0]) > 5
    assert results_of(snapshot, config, NOW, FastEvaluator(snapshot.table, config, NOW)) == reference


# -- claimed slots (preemption will assess them) ---------------------------------------------------

def test_claimed_slots_before_unclaimed_ones_keep_their_own_answers():
    """A job-and-slot conjunct (slot literal, job value) is answered per row, whatever the order.

    The fast path's universe starts with the candidate (unclaimed) slots; claimed ones join it
    when first assessed, after them, so a scan in table order gives universe rows out of order.
    The job-and-slot conjunct results (Space.job_static_ok) were once computed in sorted universe
    order but stored in the call's order, so rows got one another's answers.
    """
    # GLIDEIN_Site == TARGET.WantedSite: a job-and-slot conjunct (what OSPool STARTs'
    # stringListMember(GLIDEIN_Site, DESIRED_Sites) is), written so either ClassAd semantics agree
    requirements = expr("TARGET.RequestMemory <= Memory && GLIDEIN_Site == TARGET.WantedSite")
    slots = [
        static_slot("claimed-wanted", State="Claimed", Activity="Busy", RemoteUser="carol@site",
                    GLIDEIN_Site="SU-ITS", Requirements=requirements),
        static_slot("claimed-other", State="Claimed", Activity="Busy", RemoteUser="carol@site",
                    GLIDEIN_Site="MTState-Tempest", Requirements=requirements),
        static_slot("unclaimed-other", GLIDEIN_Site="IRISHEP", Requirements=requirements),
        static_slot("unclaimed-wanted", GLIDEIN_Site="SU-ITS", Requirements=requirements),
    ]
    config = settings()
    snapshot = build_snapshot(slots, jobs("alice", 1, memory=100, WantedSite="SU-ITS"), config)
    table = snapshot.table
    assert table.candidate.tolist() == [False, False, True, True]
    (autocluster,) = snapshot.autoclusters
    reference = ClassAdEvaluator(table, config, NOW)
    for order in ([0, 1, 2, 3], [3, 2, 1, 0], [1, 3, 0, 2]):
        fast = FastEvaluator(table, config, NOW)
        rows = np.array(order)
        expected = reference.assess(autocluster, rows, table.amounts[rows])
        assert expected.matched.tolist() == [table.slots[row].name.endswith("wanted") for row in order]
        assert_same(expected, fast.assess(autocluster, rows, table.amounts[rows]))
        assert_same(expected, fast.assess(autocluster, rows, table.amounts[rows]))    # from the caches


def test_ospool_shaped_pool_claimed_slots_too(ospool):
    """Every slot, claimed ones included (as pair_eval_bench.py --all-slots scans them)."""
    config = load_settings(CONFIG_PATH)
    snapshot = build_snapshot(ospool.slot_ads, ospool.job_ads, config)
    table = snapshot.table
    rows = np.arange(len(table))
    assert (~table.candidate).sum() > 100
    reference, fast = ClassAdEvaluator(table, config, ospool.now), FastEvaluator(table, config, ospool.now)
    claimed_matches = 0
    for autocluster in snapshot.autoclusters[:60]:
        expected = reference.assess(autocluster, rows, table.amounts)
        assert_same(expected, fast.assess(autocluster, rows, table.amounts))
        claimed_matches += int((expected.matched & ~table.candidate).sum())
    assert claimed_matches > 20
    assert fast.stats.fallbacks == 0


def test_ad_descriptions_are_kept_per_record_and_let_go_with_it():
    """The fast path's per-ad cache files descriptions under a record's identity, and forgets a
    record the pool no longer holds (so one cache can serve every cycle of a daemon)."""
    from negotiatord.fastpath.compiler.descriptions import AdDescriptions

    class Record:
        pass

    cache, kept, dropped = AdDescriptions(), Record(), Record()
    cache.of(kept)["memory"] = ("literal", (3, 2048))
    cache.of(dropped)["cpus"] = ("literal", (3, 8))
    assert cache.of(kept) == {"memory": ("literal", (3, 2048))} and len(cache) == 2
    del dropped
    gc.collect()
    assert len(cache) == 1 and cache.of(Record()) == {}


def test_a_daemons_next_cycle_reads_no_unchanged_ad_again_and_decides_the_same(ospool, monkeypatch):
    """What the fast path read of an ad is filed under its Slot or MatchmakingAd (the fast path's
    AdDescriptions, kept across cycles), which a daemon's snapshot builder keeps for an unchanged
    ad: the next cycle, with a new evaluator, interns it without asking the ad."""
    from negotiatord.fastpath.compiler import cells
    from negotiatord.fastpath.compiler.descriptions import AdDescriptions

    config = load_settings(CONFIG_PATH)
    builder, descriptions = SnapshotBuilder(), AdDescriptions()
    job_ads = list(ospool.job_ads)                  # the same ad objects both cycles, as a store's
    first = run_cycle(builder.build(ospool.slot_ads, job_ads, config), AccountantState(), config, ospool.now,
                      descriptions=descriptions)
    read, describe = [], cells.describe
    monkeypatch.setattr(cells, "describe", lambda *args: read.append(args[1]) or describe(*args))
    snapshot = builder.build(ospool.slot_ads, job_ads, config)
    again = run_cycle(snapshot, AccountantState(), config, ospool.now, descriptions=descriptions)
    assert read == []
    assert again.matches == first.matches and len(first.matches) > 10


def test_a_slot_reading_the_clock_is_searched_once_and_reads_each_cycles_clock(monkeypatch):
    """A glidein's START reads ``CurrentTime`` without defining it; HTCondor evaluates it as
    ``time()`` (classad/cycle_time.py freezes it at the cycle's clock). Whether an ad reads the
    clock is kept with its descriptions across a daemon's cycles, but the clock is each cycle's:
    once past ``GLIDEIN_ToDie`` the slot takes no job, as the classad2 reference decides too."""
    from negotiatord.fastpath.compiler import cells
    from negotiatord.fastpath.compiler.descriptions import AdDescriptions

    glidein = pslot("glidein", GLIDEIN_ToDie=NOW + 600, Start=expr("CurrentTime < GLIDEIN_ToDie"),
                    Requirements=expr("START && TARGET.RequestCpus <= MY.Cpus"))
    config = settings()
    builder, descriptions, job_ads = SnapshotBuilder(), AdDescriptions(), jobs("alice", 1)
    searched: list[str] = []
    for name in ("mentions_current_time", "references_current_time"):     # the whole ad's text, an expression's
        search = getattr(cells, name)
        monkeypatch.setattr(cells, name, lambda text, search=search: searched.append(text) or search(text))

    def matches(now: int, evaluator_kind: str) -> int:
        snapshot = builder.build([glidein], job_ads, config)
        evaluator = None if evaluator_kind == "fast" else ClassAdEvaluator(snapshot.table, config, now)
        result = run_cycle(snapshot, AccountantState(), config, now, evaluator=evaluator,
                           descriptions=descriptions)
        return len(result.matches)

    assert matches(NOW, "fast") == matches(NOW, "classad2") == 1
    first = len(searched)
    assert first >= 1
    assert matches(NOW + 3600, "fast") == matches(NOW + 3600, "classad2") == 0
    assert len(searched) == first


def test_alike_requests_on_one_offer_share_an_answer_and_others_do_not():
    """Submitters' autoclusters often hold alike jobs: on the offer every request is first
    assessed against (before any match changes the pool), a request alike in everything the
    roots read takes the answer of the one before; one that differs only in an attribute the
    slots' Requirements read (Department) gets its own, as classad2 gives it: carol's jobs match
    nothing, though alice's and bob's, which differ from hers in that one attribute, match."""
    config = settings()
    requirements = expr('TARGET.RequestCpus <= MY.Cpus && TARGET.Department =!= "physics"')
    slot_ads = [pslot(f"p{i}", cpus=4, Requirements=requirements) for i in range(3)]
    job_ads = [*jobs("alice", 4, cpus=2, Department="chemistry"),
               *jobs("bob", 4, cluster=2, cpus=2, Department="chemistry"),
               *jobs("carol", 4, cluster=3, cpus=2, Department="physics")]
    snapshot = build_snapshot(slot_ads, job_ads, config)
    evaluator = FastEvaluator(snapshot.table, config, NOW)
    fast = run_cycle(snapshot, AccountantState(), config, NOW, evaluator)
    reference = run_cycle(snapshot, AccountantState(), config, NOW, ClassAdEvaluator(snapshot.table, config, NOW))
    assert fast.matches == reference.matches
    assert {match.submitter for match in fast.matches} == {"alice@site", "bob@site"}
    assert evaluator.stats.reused_assessments >= 1


def test_a_shared_answer_is_classad2s_answer_row_for_row():
    """The answer taken from an alike request is, array for array, what classad2 answers for
    the request that takes it, unmatched rows included."""
    config = settings(consumption_policy=True)
    slot_ads = [pslot("big", cpus=8), pslot("small", cpus=1), pslot("mid", cpus=2, memory=64)]
    snapshot = build_snapshot(slot_ads, [*jobs("alice", 1, cpus=2), *jobs("bob", 1, cluster=2, cpus=2)], config)
    rows = np.arange(len(snapshot.table))
    amounts = snapshot.table.amounts[rows]
    rows.setflags(write=False)
    amounts.setflags(write=False)
    evaluator = FastEvaluator(snapshot.table, config, NOW)
    reference = ClassAdEvaluator(snapshot.table, config, NOW)
    alice, bob = snapshot.autoclusters
    evaluator.assess(alice, rows, amounts)
    shared = evaluator.assess(bob, rows, amounts)
    assert evaluator.stats.reused_assessments == 1
    assert shared.matched.tolist() == [True, False, False]
    assert_same(reference.assess(bob, rows, amounts), shared)


def test_answers_past_the_budget_are_not_kept(monkeypatch):
    """Past MAX_KEPT_ROWS rows kept on one offer, answers are no longer filed: alike requests
    are then asked again, and answered alike."""
    monkeypatch.setattr(shared_offer, "MAX_KEPT_ROWS", 0)
    config = settings(consumption_policy=True)
    snapshot = build_snapshot([pslot("big", cpus=8)], [*jobs("alice", 1), *jobs("bob", 1, cluster=2)], config)
    rows, amounts = np.arange(1), snapshot.table.amounts.copy()
    rows.setflags(write=False)
    amounts.setflags(write=False)
    evaluator = FastEvaluator(snapshot.table, config, NOW)
    answers = [evaluator.assess(autocluster, rows, amounts) for autocluster in snapshot.autoclusters]
    assert evaluator.stats.reused_assessments == 0
    assert evaluator.stats.kernel_batches == 2
    assert_same(answers[0], answers[1])
