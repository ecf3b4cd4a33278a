"""Whole-request loading gives the job-by-job loop's cycle, match for match.

The cycle offers a request's jobs to the evaluator in one ``load`` call (the fast path's loading
kernel, or the classad2 reference's plain loop); ``Settings.job_by_job`` keeps the cycle's own
job-by-job loop, which follows HTCondor's ``matchmakingAlgorithm`` one job at a time. Both must
make the same matches in the same order, with the same costs and consumption, and refuse the same
jobs for the same reasons: checked on the bundled sample, the OSPool sample, generated OSPool-shaped
pools (steady state and every p-slot empty) and random pools, and on the corner cases of the
consumption-policy seed (../shared/seeds/003_*: a consumption that takes the whole slot, a START
that reads what is left) and of the cycle's stop conditions.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import classad2
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings as hsettings, strategies as st

from benchmarks.pool_generator import CONFIG_PATH, generate_pool
from negotiatord.accountant import AccountantState
from negotiatord.ads.reader import read_ads
from negotiatord.cycle.matchlist import MatchList
from negotiatord.cycle.negotiate import CONCURRENCY_LIMIT, SUBMITTER_LIMIT
from negotiatord.cycle.state import PoolState
from negotiatord.cycle.result import CycleResult
from negotiatord.evaluation import ClassAdEvaluator
from negotiatord.evaluation.loading import LoadingLimits, Stop
from negotiatord.fastpath.interpreter.evaluator import FastEvaluator
from negotiatord.pool.builder import build_snapshot
from negotiatord.runtime import run_cycle
from negotiatord.settings import PslotLoading, Settings, load_settings
from tests.builders import expr, group, jobs, pslot, settings, static_slot
from tests.commands import test_negotiate as ospool
from tests.cycle.test_properties import POLICIES, slots_of

ROOT = Path(__file__).resolve().parents[2]
NOW = 1_700_000_000
SAMPLE_NOW = 1_750_000_000
CPU_POLICY = POLICIES["cpu"]


def both_ways(slot_ads: list[classad2.ClassAd], job_ads: list[classad2.ClassAd], config: Settings, now: int = NOW,
              evaluator: str = "fast") -> CycleResult:
    """The cycle loaded request by request, after checking it against the job-by-job cycle."""
    results = []
    loading_calls = 0
    for job_by_job in (True, False):
        snapshot = build_snapshot(slot_ads, job_ads, config)
        chosen = replace(config, job_by_job=job_by_job)
        made = (FastEvaluator if evaluator == "fast" else ClassAdEvaluator)(snapshot.table, chosen, now)
        results.append(run_cycle(snapshot, AccountantState(), chosen, now, made))
        loading_calls = getattr(made.stats, "loading_calls", 0)
    reference, loaded = results
    assert loaded.matches == reference.matches
    assert loaded.rejections == reference.rejections
    assert loaded.usage == reference.usage and loaded.charges == reference.charges
    assert loaded.submitters == reference.submitters and loaded.groups == reference.groups
    assert loaded.stats.pairs == reference.stats.pairs
    assert loaded.stats.pie_spins == reference.stats.pie_spins
    if evaluator == "fast" and loaded.matches:
        assert loading_calls > 0      # the kernel placed them, not the Python loop
    return loaded


def per_slot(result: CycleResult) -> dict[str, int]:
    counts: dict[str, int] = {}
    for match in result.matches:
        counts[match.slot] = counts.get(match.slot, 0) + 1
    return counts


# -- real and generated pools --------------------------------------------------------------------------


@pytest.mark.parametrize("config_file", sorted(p.name for p in (ROOT / "config").glob("*.conf")))
@pytest.mark.parametrize("evaluator", ["fast", "classad"])
def test_bundled_sample(config_file, evaluator):
    config = load_settings(ROOT / "config" / config_file)
    slot_ads = list(read_ads(ROOT / "samples" / "slots.ads").ads)
    job_ads = list(read_ads(ROOT / "samples" / "jobs.ads").ads)
    assert both_ways(slot_ads, job_ads, config, SAMPLE_NOW, evaluator).matches


def test_ospool_sample_with_htcondors_job_ads():
    real = ospool.real_job_ads()
    job_ads = real + [ospool.as_ospool_user_would_submit(ad) for ad in real
                      if "GlobalJobId" in ad and "PoolName" in str(ad.get("Requirements"))]
    slot_ads = [ad for ad in read_ads(ospool.POOL).ads if ad.get("MyType") == "Machine"]
    assert both_ways(slot_ads, job_ads, load_settings(ospool.CONFIG), ospool.NOW).matches


@pytest.mark.parametrize("scenario, slots, jobs_count", [("steady", 160, 700), ("fill", 40, 1500),
                                                          ("mixed", 120, 900)])
def test_generated_ospool_shaped_pools(scenario, slots, jobs_count):
    """pool_generator.py's pools: the OSPool's real START expressions, which read the slot's
    Cpus, Memory and Disk left, and its SlotWeight; "fill" p-slots take dozens of jobs each."""
    pool = generate_pool(slots, jobs_count, seed=0, now=NOW, scenario=scenario)
    result = both_ways(pool.slot_ads, list(pool.job_ads), load_settings(CONFIG_PATH), pool.now)
    if scenario == "fill":
        assert max(per_slot(result).values()) >= 8


# -- corner cases ------------------------------------------------------------------------------------


def test_a_consumption_that_takes_the_whole_slot():
    """Consumption<Res> = the slot's own amount (the seed's "static slot" policy): one job each."""
    whole = dict(ConsumptionCpus=expr("Cpus"), ConsumptionMemory=expr("Memory"), ConsumptionDisk=expr("Disk"),
                 SlotWeight=expr("Cpus"))
    slot_ads = [pslot(f"s{i}", cpus=4, memory=4096, **whole) for i in range(3)]
    result = both_ways(slot_ads, jobs("alice", 5), settings())
    assert per_slot(result) == {"s0": 1, "s1": 1, "s2": 1}
    assert {m.cost for m in result.matches} == {4.0}


def test_a_start_that_reads_the_memory_left():
    """START = Memory >= 2048 on an 8 GiB p-slot, 1 GiB jobs: the 7th job sees 2048 MiB left and
    starts, the 8th sees 1024 and does not (START is evaluated on the slot as it is then)."""
    slot = pslot("s", cpus=16, memory=8192, Start=expr("Memory >= 2048"),
                 Requirements=expr("START && TARGET.RequestMemory <= MY.Memory"), **CPU_POLICY)
    result = both_ways([slot], jobs("alice", 10, memory=1024), settings())
    assert per_slot(result) == {"s": 7}


@pytest.mark.parametrize("loading", [PslotLoading.DEPTH_FIRST, PslotLoading.BREADTH_FIRST])
def test_runs_of_slots_other_requests_left_too_small(loading):
    """Every list is made before the first match. alice's first request (500 MiB jobs) leaves
    each slot it takes at 500 MiB, below START's 600; her second (300 MiB) takes two jobs a slot
    from the next ones and leaves its last slot at 700. bob's list then opens with a long run of
    slots that no longer match, then that last slot, which still does; carol's (600 MiB) with
    slots whose memory left her consumption overruns. The loading kernel re-assesses each in
    turn; the matches, their order and the pairs assessed are the job-by-job loop's."""
    slot_ads = [pslot(f"s{i:02}", cpus=4, memory=1000, Start=expr("Memory >= 600"),
                      Requirements=expr("START && TARGET.RequestMemory <= MY.Memory"), **CPU_POLICY)
                for i in range(60)]
    job_ads = (jobs("alice", 30, cluster=1, memory=500) + jobs("alice", 15, cluster=2, memory=300)
               + jobs("bob", 20, cluster=3, memory=100) + jobs("carol", 12, cluster=4, memory=600))
    result = both_ways(slot_ads, job_ads, settings(pslot_loading=loading))
    assert len(result.matches) == 30 + 15 + 20 + 12     # bob's and carol's lists walked past their runs


def test_a_slot_weight_nonlinear_in_what_is_left():
    """SlotWeight = Cpus * Cpus: each match costs the weight it removes, different every time."""
    slot = pslot("s", cpus=6, memory=8192, **{**CPU_POLICY, "SlotWeight": expr("Cpus * Cpus")})
    result = both_ways([slot], jobs("alice", 4, cpus=1), settings())
    assert [m.cost for m in result.matches] == [11.0, 9.0, 7.0, 5.0]


def test_a_submitter_limit_that_stops_in_the_middle_of_a_slot():
    """Two submitters of equal priority share a 16-core p-slot's pie: each stops at 8 jobs."""
    config = settings(groups=(group("group_a", quota=16),))
    job_ads = (jobs("alice", 12, cluster=1, group="group_a")
               + jobs("bob", 12, cluster=2, group="group_a"))
    result = both_ways([pslot("s", cpus=16, memory=65536, **CPU_POLICY)], job_ads, config)
    assert per_slot(result) == {"s": 16}
    assert any(r.reason == SUBMITTER_LIMIT for r in result.rejections)


def test_a_concurrency_limit_that_stops_in_the_middle_of_a_request():
    """LIC_LIMIT = 3, each job draws 1 of lic: the fourth job of the request is blocked."""
    config = settings(concurrency_limits={"lic": 3.0})
    result = both_ways([pslot("s", cpus=16, memory=65536, **CPU_POLICY)],
                       jobs("alice", 6, ConcurrencyLimits="lic"), config)
    assert len(result.matches) == 3
    assert [r.reason for r in result.rejections] == [CONCURRENCY_LIMIT.format(name="lic")]


def test_breadth_first_spreads_a_request_over_slots_of_equal_rank():
    config = settings(pslot_loading=PslotLoading.BREADTH_FIRST)
    slot_ads = [pslot(f"s{i}", cpus=4, memory=8192, **CPU_POLICY) for i in range(3)]
    result = both_ways(slot_ads, jobs("alice", 6), config)
    assert [m.slot for m in result.matches] == ["s0", "s1", "s2", "s0", "s1", "s2"]


def test_static_slots_beside_partitionable_slots_without_slot_weights():
    """NEGOTIATOR_USE_SLOT_WEIGHTS = False: a legacy static slot costs 1 whatever its Cpus."""
    slot_ads = [static_slot("static", cpus=4, memory=4096), pslot("p", cpus=3, memory=8192, **CPU_POLICY)]
    for weights in (True, False):
        result = both_ways(slot_ads, jobs("alice", 6), settings(use_slot_weights=weights))
        assert per_slot(result) == {"static": 1, "p": 3}
        assert next(m.cost for m in result.matches if m.slot == "static") == (4.0 if weights else 1.0)


def test_a_slot_whose_requirements_the_fast_path_leaves_to_classad2():
    """A p-slot whose Requirements call eval() (which the fast path leaves to classad2) beside
    plain ones: the rest of a request is loaded in Python from where that slot stopped the kernel."""
    odd = pslot("odd", cpus=4, memory=4096, Requirements=expr('eval("TARGET.RequestMemory <= MY.Memory")'),
                **CPU_POLICY)
    slot_ads = [pslot("a", cpus=3, memory=4096, **CPU_POLICY), odd, pslot("b", cpus=3, memory=4096, **CPU_POLICY)]
    result = both_ways(slot_ads, jobs("alice", 12, memory=1000), settings())
    assert per_slot(result) == {"a": 3, "odd": 4, "b": 3}


@pytest.mark.parametrize("evaluator", [FastEvaluator, ClassAdEvaluator])
def test_a_loading_call_can_take_one_match_per_slot(evaluator):
    """HTCondor's legacy rule (a p-slot leaves the offer after its first match in a cycle), asked
    of the evaluator's loading call directly: five jobs, three 4-core p-slots, one job each."""
    config = settings()
    snapshot = build_snapshot([pslot(f"s{i}", cpus=4, memory=8192, **CPU_POLICY) for i in range(3)],
                              jobs("alice", 5), config)
    made = evaluator(snapshot.table, config, NOW)
    state = PoolState(snapshot.table, made.slot_weights(np.arange(3), snapshot.table.amounts))
    [autocluster] = snapshot.autoclusters
    candidates = MatchList(autocluster, made, state, PslotLoading.DEPTH_FIRST).candidates
    none, empty = np.zeros(0, dtype=np.int64), np.zeros(0)
    limits = LoadingLimits(jobs=5, submitter_limit=100.0, room_allocated=100.0, room_usage=np.zeros(1), room_term=0,
                           concurrency_names=none, concurrency_increments=empty, concurrency_in_use=empty,
                           concurrency_limits=empty, breadth_first=False, unit_cost_legacy=False,
                           one_match_per_slot=True)
    loading = made.load(autocluster, candidates, state, limits)
    assert loading.rows.tolist() == [0, 1, 2] and loading.stop is Stop.NO_MATCH
    assert loading.cost.tolist() == [1.0, 1.0, 1.0] and limits.room_usage.tolist() == [3.0]
    assert not state.available.any()
    if evaluator is FastEvaluator:
        assert made.stats.loading_calls == 1      # in the kernel


# -- random pools ------------------------------------------------------------------------------------

slot_specs = st.lists(
    st.tuples(st.sampled_from(sorted(POLICIES) + ["static"]), st.integers(1, 12), st.integers(1, 16)),
    min_size=1, max_size=6,
)
job_specs = st.lists(
    st.tuples(st.sampled_from(["alice", "bob", "carol"]), st.integers(1, 12), st.sampled_from([0.5, 1, 2, 3]),
              st.sampled_from([100, 256, 700, 2000]), st.sampled_from([None, "lic", "lic:2, db"])),
    min_size=1, max_size=6,
)


@hsettings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(slot_specs, job_specs, st.sampled_from(["none", "flat", "surplus"]), st.sampled_from(list(PslotLoading)),
       st.booleans(), st.integers(1, 6))
def test_random_pools(slot_spec, job_spec, mode, loading, weights, lic):
    tree = () if mode == "none" else (group("group_a", dynamic=0.6, surplus=mode == "surplus", autoregroup=True),
                                      group("group_b", dynamic=0.4, surplus=mode == "surplus"))
    job_ads = []
    for cluster, (owner, count, cpus, memory, limits) in enumerate(job_spec, start=1):
        grp = None if mode == "none" or owner == "carol" else ("group_a" if owner == "alice" else "group_b")
        extra = {"ConcurrencyLimits": limits} if limits else {}
        job_ads += jobs(owner, count, cluster=cluster, group=grp, cpus=cpus, memory=memory, disk=10, **extra)
    config = settings(groups=tree, accept_surplus=mode == "surplus", pslot_loading=loading, use_slot_weights=weights,
                      concurrency_limits={"lic": float(lic), "db": 4.0})
    both_ways(slots_of(slot_spec), job_ads, config)
