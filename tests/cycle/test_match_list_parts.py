"""Candidate lists made a part at a time give the very cycle whole lists give.

A match list holds only as many candidates as its request can use and is refilled when it runs
dry (matchlist.py, RankedOffer). The order must stay the one a whole list has: HTCondor's
matchmaker sorts an autocluster's candidates by NEGOTIATOR_PRE_JOB_RANK, the job's Rank and
NEGOTIATOR_POST_JOB_RANK, higher first (matchmaker.cpp, MatchListType::sort), ties in slot-table
order here. Each pool below is negotiated with whole lists (every candidate ranked at once, as
the cycle did before) and with lists cut as short as they go (no margin, one slot assessed at
first, no list sorted whole however few slots match), both ways (job by job and loaded request
by request, test_loading.py's ``both_ways``), and every match, rejection and charge must be the
same; the short lists must have been refilled.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import classad2
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings as hsettings, strategies as st

from benchmarks.pool_generator import CONFIG_PATH, generate_pool
from negotiatord.ads.reader import read_ads
from negotiatord.cycle import matchlist
from negotiatord.cycle.matchlist import MatchList
from negotiatord.cycle.result import CycleResult
from negotiatord.cycle.state import PoolState
from negotiatord.evaluation import ClassAdEvaluator
from negotiatord.evaluation.loading import Candidates
from negotiatord.fastpath.interpreter.evaluator import FastEvaluator
from negotiatord.pool.builder import build_snapshot
from negotiatord.settings import PslotLoading, Settings, load_settings
from tests.builders import group, jobs, pslot, settings
from tests.commands import test_negotiate as ospool
from tests.cycle.test_loading import CPU_POLICY, NOW, SAMPLE_NOW, both_ways, job_specs, slot_specs
from tests.cycle.test_properties import slots_of

ROOT = Path(__file__).resolve().parents[2]
WHOLE = 10**9


def whole_and_in_parts(monkeypatch: pytest.MonkeyPatch, slot_ads: list[classad2.ClassAd],
                       job_ads: list[classad2.ClassAd], config: Settings, now: int = NOW,
                       evaluator: str = "fast") -> tuple[CycleResult, int]:
    """The cycle with whole lists and with the shortest lists; returns the latter and how many
    times its lists were refilled."""
    results = []
    refills = 0
    original = Candidates.refill

    def counted(candidates: Candidates) -> bool:
        nonlocal refills
        refilled = original(candidates)
        refills += refilled
        return refilled

    for margin, first_chunk, whole_list in ((WHOLE, WHOLE, WHOLE), (0, 1, 0)):
        with monkeypatch.context() as patch:
            patch.setattr(matchlist, "MARGIN", margin)
            patch.setattr(matchlist, "FIRST_CHUNK", first_chunk)
            patch.setattr(matchlist, "WHOLE_LIST", whole_list)
            patch.setattr(Candidates, "refill", counted)
            refills = 0
            results.append(both_ways(slot_ads, job_ads, config, now, evaluator))
    whole, parts = results
    assert parts.matches == whole.matches
    assert parts.rejections == whole.rejections
    assert parts.usage == whole.usage and parts.charges == whole.charges
    assert parts.submitters == whole.submitters and parts.groups == whole.groups
    return parts, refills


def ranked_by_memory(job_ads: list[classad2.ClassAd]) -> list[classad2.ClassAd]:
    """The jobs with ``Rank = TARGET.Memory``: the slot with the most memory left first, a rank
    that changes as a p-slot is loaded."""
    for ad in job_ads:
        ad["Rank"] = classad2.ExprTree("TARGET.Memory")
    return job_ads


@pytest.mark.parametrize("evaluator", ["fast", "classad"])
def test_the_bundled_sample(monkeypatch, evaluator):
    config = load_settings(ROOT / "config" / "default.conf")
    slot_ads = list(read_ads(ROOT / "samples" / "slots.ads").ads)
    job_ads = list(read_ads(ROOT / "samples" / "jobs.ads").ads)
    result, _ = whole_and_in_parts(monkeypatch, slot_ads, job_ads, config, SAMPLE_NOW, evaluator)
    assert result.matches


def test_the_ospool_sample(monkeypatch):
    real = ospool.real_job_ads()
    job_ads = real + [ospool.as_ospool_user_would_submit(ad) for ad in real
                      if "GlobalJobId" in ad and "PoolName" in str(ad.get("Requirements"))]
    slot_ads = [ad for ad in read_ads(ospool.POOL).ads if ad.get("MyType") == "Machine"]
    result, _ = whole_and_in_parts(monkeypatch, slot_ads, job_ads, load_settings(ospool.CONFIG), ospool.NOW)
    assert result.matches


@pytest.mark.parametrize("slot_ranks", ["htcondor_defaults", "none"])
@pytest.mark.parametrize("scenario, slots, jobs_count", [("steady", 160, 700), ("fill", 40, 1500),
                                                          ("mixed", 120, 900)])
def test_generated_ospool_shaped_pools(monkeypatch, scenario, slots, jobs_count, slot_ranks):
    """HTCondor's default NEGOTIATOR_PRE_JOB_RANK and NEGOTIATOR_POST_JOB_RANK (they read the
    slot's Cpus, Memory, SlotID, ...: every slot assessed, the best kept), and none at all (no job
    Rank either: every slot ranks alike, lists found slot by slot in table order)."""
    pool = generate_pool(slots, jobs_count, seed=0, now=NOW, scenario=scenario)
    config = load_settings(CONFIG_PATH)
    if slot_ranks == "none":
        config = replace(config, pre_job_rank=None, post_job_rank=None)
    result, refills = whole_and_in_parts(monkeypatch, pool.slot_ads, list(pool.job_ads), config, pool.now)
    assert result.matches
    if scenario == "fill":      # requests take each other's best slots: lists run dry
        assert refills


@pytest.mark.parametrize("loading", list(PslotLoading))
def test_ranks_that_read_the_slot(monkeypatch, loading):
    """Job Rank = TARGET.Memory and NEGOTIATOR_PRE_JOB_RANK reading the slot's Cpus: every slot is
    assessed to place it, only the best are kept, the next part is taken after the last one."""
    pool = generate_pool(40, 1500, seed=1, now=NOW, scenario="fill")
    config = replace(load_settings(CONFIG_PATH), pre_job_rank="MY.Cpus >= 8", pslot_loading=loading)
    result, refills = whole_and_in_parts(monkeypatch, pool.slot_ads, ranked_by_memory(list(pool.job_ads)), config,
                                         pool.now)
    assert result.matches and refills


def test_breadth_first_with_constant_ranks(monkeypatch):
    """Breadth-first moves a p-slot with room left behind every candidate of its rank, so a list
    of equal ranks is made whole."""
    config = replace(load_settings(CONFIG_PATH), pslot_loading=PslotLoading.BREADTH_FIRST)
    pool = generate_pool(40, 1500, seed=0, now=NOW, scenario="fill")
    result, _ = whole_and_in_parts(monkeypatch, pool.slot_ads, list(pool.job_ads), config, pool.now)
    assert result.matches


def drained(match_list: MatchList) -> list[tuple[int, float, float]]:
    """(row, job rank, cost) of every candidate the list hands out, head after head."""
    order = []
    while (head := match_list.best()) is not None:
        order.append((head.row, head.rank[1], head.cost))
        match_list.candidates.head += 1
    return order


def nine_slots(evaluator: type, job_ads: list[classad2.ClassAd]) -> tuple[MatchList, PoolState, FastEvaluator]:
    """Nine 4-core p-slots, every third with 2 GiB, the others 4 GiB; a list for the one job."""
    config = settings()
    slot_ads = [pslot(f"s{i}", cpus=4, memory=4096 if i % 3 else 2048, **CPU_POLICY) for i in range(9)]
    snapshot = build_snapshot(slot_ads, job_ads, config)
    made = evaluator(snapshot.table, config, NOW)
    state = PoolState(snapshot.table, made.slot_weights(np.arange(9), snapshot.table.amounts))
    [autocluster] = snapshot.autoclusters
    match_list = MatchList(autocluster, made, state, PslotLoading.DEPTH_FIRST, slot_ranked=False)
    # another request then takes a core and 1 GiB of s1 and s4, and all of s2
    taken = np.zeros(len(snapshot.table.assets))
    taken[snapshot.table.asset_column("Cpus")] = 1.0
    taken[snapshot.table.asset_column("Memory")] = 1024.0
    for row in (1, 4):
        state.take(row, taken, 1.0)
    state.withdraw(2)
    return match_list, state, made


@pytest.mark.parametrize("evaluator", [FastEvaluator, ClassAdEvaluator])
def test_a_list_refilled_after_matches_changed_its_slots(monkeypatch, evaluator):
    """Job Rank = TARGET.Memory. Drained while another request loads its slots, a one-entry list
    hands out the whole list's candidates in its order, ranked as they were when it was made
    (s1 and s4 keep their 4 GiB rank though 3 GiB is left), and a changed slot is re-assessed
    on reaching the head."""
    monkeypatch.setattr(matchlist, "MARGIN", 0)
    monkeypatch.setattr(matchlist, "WHOLE_LIST", 0)
    match_list, _, _ = nine_slots(evaluator, ranked_by_memory(jobs("alice", 1, memory=1000)))
    assert len(match_list.candidates.rows) == 1         # one job, no margin: one candidate
    order = drained(match_list)
    assert [row for row, _, _ in order] == [1, 4, 5, 7, 8, 0, 3, 6]
    assert [rank for _, rank, _ in order] == [4096.0] * 5 + [2048.0] * 3
    assert [cost for _, _, cost in order] == [1.0] * 8       # SlotWeight = Cpus: the job's one core


def test_a_refill_assesses_a_slot_only_when_it_reaches_the_head(monkeypatch):
    """Job Rank = TARGET.Memory. A part after the first hands out the next slots on offer with
    the ranks they were listed with, marked to be assessed again (version -1), as a slot a match
    changed is: refilling assesses nothing, and each slot is assessed as it reaches the head
    (most of a part, twice as long as the one before, is never reached)."""
    monkeypatch.setattr(matchlist, "MARGIN", 0)
    monkeypatch.setattr(matchlist, "WHOLE_LIST", 0)
    match_list, _, made = nine_slots(FastEvaluator, ranked_by_memory(jobs("alice", 1, memory=1000)))
    candidates = match_list.candidates
    assert candidates.rows.tolist() == [1] and made.stats.pairs == 9     # every slot assessed once
    candidates.head = 1                                                   # the first part spent
    assert candidates.refill()
    # the next two on offer (s2 was withdrawn): s4, which a match changed, and s5, which none did
    assert candidates.rows.tolist() == [4, 5] and candidates.version.tolist() == [-1, -1]
    assert candidates.rank[:, 1].tolist() == [4096.0, 4096.0] and made.stats.pairs == 9
    head = match_list.best()
    assert head is not None and (head.row, head.cost) == (4, 1.0) and made.stats.pairs == 10


@pytest.mark.parametrize("evaluator", [FastEvaluator, ClassAdEvaluator])
def test_constant_ranks_assess_only_the_slots_a_list_needs(monkeypatch, evaluator):
    """No job Rank: slot-row order, found by assessing one slot at first, then twice as many."""
    monkeypatch.setattr(matchlist, "MARGIN", 0)
    monkeypatch.setattr(matchlist, "FIRST_CHUNK", 1)
    match_list, _, made = nine_slots(evaluator, jobs("alice", 1, memory=1000))
    assert match_list.candidates.rows.tolist() == [0] and made.stats.pairs == 1
    assert [row for row, _, _ in drained(match_list)] == [0, 1, 3, 4, 5, 6, 7, 8]


@pytest.mark.parametrize("whole_list", [matchlist.WHOLE_LIST, 0])
def test_a_list_is_exhausted_only_when_nothing_is_left_to_hand_out(monkeypatch, whole_list):
    """The cycle sends a request whose list is exhausted job by job. A list is exhausted once its
    slots left the offer and no part is to come; while a part is to come it is not, and asking
    assesses nothing (the part is made when the loading call needs it, as before)."""
    monkeypatch.setattr(matchlist, "MARGIN", 0)
    monkeypatch.setattr(matchlist, "WHOLE_LIST", whole_list)
    match_list, state, made = nine_slots(FastEvaluator, ranked_by_memory(jobs("alice", 1, memory=1000)))
    listed = match_list.candidates.rows.tolist()
    assert len(listed) == (9 if whole_list else 1)       # the whole list, or one entry with no margin
    for row in listed:
        state.withdraw(row)
    pairs = made.stats.pairs
    assert match_list.exhausted() is bool(whole_list)
    assert made.stats.pairs == pairs
    assert (match_list.best() is None) is bool(whole_list)


@hsettings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(slot_specs, job_specs, st.sampled_from(list(PslotLoading)), st.sampled_from([None, "Memory", "-Cpus"]),
       st.booleans())
def test_random_pools(slot_spec, job_spec, loading, job_rank, groups):
    """test_loading.py's random pools (every consumption policy, static slots, concurrency limits,
    groups), with a job Rank that reads the slot or none."""
    tree = (group("group_a", dynamic=0.6), group("group_b", dynamic=0.4)) if groups else ()
    job_ads = []
    for cluster, (owner, count, cpus, memory, limits) in enumerate(job_spec, start=1):
        grp = ("group_a" if owner == "alice" else "group_b") if groups else None
        extra = {"ConcurrencyLimits": limits} if limits else {}
        job_ads += jobs(owner, count, cluster=cluster, group=grp, cpus=cpus, memory=memory, disk=10, **extra)
    if job_rank is not None:
        for ad in job_ads:
            ad["Rank"] = classad2.ExprTree(job_rank)
    config = settings(groups=tree, pslot_loading=loading, concurrency_limits={"lic": 3.0, "db": 4.0})
    with pytest.MonkeyPatch.context() as patch:
        whole_and_in_parts(patch, slots_of(slot_spec), job_ads, config)
