"""One negotiation cycle over OSPool-shaped pools: wall time, matches, memory, pair rates.

For each size (5k slots / 25k idle jobs, 15k / 85k, 45k / 255k) it generates a pool with
pool_generator.py and, each scenario in a forked child process (so each starts from the same
pool, its peak memory is its own and a run over budget is stopped, not waited for):

* cycle: Snapshot.build + negotiatord.runtime.run_cycle under benchmarks/ospool_like.conf
  (consumption policy on: p-slots take several jobs per cycle; the slot ads are in memory from
  the start, the job ads are read as they come, as from a feed, and the one-off build keeps one
  per autocluster), then "every matchable slot
  filled?": the evaluator is asked, on a sample of the slots still on offer after the cycle,
  whether any job left unmatched would still match them;
* legacy: the same cycle with CONSUMPTION_POLICY off, HTCondor's one match per p-slot per cycle:
  the baseline measured in the same run;
* daemon: cycles as the daemon runs them, the ads filed in its AdStore and snapshots from a
  SnapshotBuilder that keeps per-ad work: a first cycle, one over the same ads (unchanged ads),
  then cycles each after 5% of the ads were updated (changing ads), each cycle's clock
  ``--daemon-clock-step`` seconds after the last's (NEGOTIATOR_INTERVAL's default, 60 s: the
  OSPool's START expressions read the clock; 0 keeps it still): the steady-state cycle of a
  running daemon and its peak memory, with the store keeping the jobs of a cluster as ProcAds that
  share one ad, against the baseline of a store keeping every job ad whole, and the same cycles
  from scratch (NEGOTIATORD_INCREMENTAL_CYCLE = False: nothing kept from one cycle to the next
  but the snapshot builder's records), all in the same run;
* pairs: (autocluster, slot) assessments per second of the fast path and of the classad2
  reference evaluator on the same ads, and the ratio;
* job by job: the first cycle again with the cycle's reference loop (Settings.job_by_job: each
  job of a request offered in turn, in Python) instead of one evaluator loading call per request:
  the matchmaking phase's matches per second of both, their ratio, and whether both made the
  very same matches.

``--repeat N`` negotiates one snapshot N times in one child and prints each cycle's CPU time by
phase, nothing else: the figures to compare two versions of the code by, run at the same time
on a shared machine (``PYTHONPATH=<a checkout>`` runs this script over that checkout's code).

``--scenario fill`` negotiates pools whose p-slots are all empty (whole glideins at their real
TotalSlot* sizes, pool_generator.py's "fill"), ``--scenario mixed`` the steady state with a tenth
of the pool arriving empty; both run the cycle and the job-by-job cycle only.

The real OSPool negotiator's own figures (negotiator_cycle_stats.txt) are printed alongside.

    python benchmarks/cycle_bench.py [--size small|medium|large|all] [--evaluator fast|classad]
                                     [--scenario steady|fill|mixed] [--budget SECONDS] [--seed N]
                                     [--daemon-only] [--daemon-cycles N] [--repeat N]
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import random
import select
import signal
import sys
import time
import traceback
from collections import Counter
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any
from collections.abc import Callable, Iterator

import classad2
import numpy as np

from pool_generator import CONFIG_PATH, DATA, SCENARIOS, GeneratedPool, generate_pool

from negotiatord.accountant import AccountantState
from negotiatord.commands.negotiate import EVALUATORS
from negotiatord.cycle.negotiate import _Cycle
from negotiatord.evaluation import PairEvaluator
from negotiatord.feed import AdKind, AdStore
from negotiatord.feed.kinds import ad_key
from negotiatord.pool.builder import SnapshotBuilder, build_snapshot
from negotiatord.pool.snapshot import Snapshot
from negotiatord.runtime import garbage_collection_paused, run_cycle
from negotiatord.settings import Settings, load_settings

SIZES = {"small": (5_000, 25_000), "medium": (15_000, 85_000), "large": (45_000, 255_000)}
STATS_FILE = DATA / "ospool" / "negotiator_cycle_stats.txt"
CHECK_SLOTS = 1000          # slots on offer after the cycle asked "does a leftover job match you?"
PAIR_SECONDS = 10.0         # time per evaluator for the pair-rate measurement
CHURN = 0.05                # share of slot and job ads updated between two daemon cycles
POST_BATCH = 1000           # job ads per request posted to the daemon's store
LIFETIME = 900.0            # the ads' lifetime in the daemon's store (none expires during a scenario)

Result = dict[str, Any]


# --- isolation ------------------------------------------------------------------------------------


def isolated(work: Callable[[], Result], budget: float) -> Result:
    """Run ``work`` in a forked child; its result, its peak RSS and RSS at start, or a timeout.

    A forked child starts with the parent's pool in memory and its own peak-RSS counter at its
    RSS at fork (Linux), so its peak is ads + whatever the scenario builds.
    """
    gc.collect()
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_end)
        start_rss = _status_kib("VmRSS")
        try:
            result = work()
        except Exception as err:  # noqa: BLE001 - reported to the parent, which prints it
            where = traceback.extract_tb(err.__traceback__)[-1]
            result = {"error": f"{type(err).__name__}: {err} ({where.filename}:{where.lineno})"}
        result.update(rss_start_mib=start_rss / 1024, rss_peak_mib=_status_kib("VmHWM") / 1024)
        with os.fdopen(write_end, "w") as out:
            json.dump(result, out)
        os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end) as source:
        # the child writes once, when done: readable means finished (or dead)
        ready, _, _ = select.select([source], [], [], budget)
        if not ready:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            return {"timeout": budget}
        text = source.read()
    os.waitpid(pid, 0)
    return json.loads(text) if text else {"error": "child exited without a result"}


def _status_kib(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise RuntimeError(f"/proc/self/status has no {field}")


# --- scenarios ------------------------------------------------------------------------------------


def make_evaluator(kind: str, snapshot: Snapshot, settings: Settings, now: int) -> PairEvaluator:
    return EVALUATORS[kind](snapshot.table, settings, now)


def cpu_phases() -> dict[str, float]:
    """From now on in this process, each cycle phase's CPU time (thread_time) by name: the
    cycle's own phase figures are wall times, which on a shared machine also count the time
    other processes held the CPUs."""
    spent: dict[str, float] = {}
    wall_phase = _Cycle._phase

    @contextmanager
    def phase(cycle: _Cycle, name: str) -> Iterator[None]:
        started = time.thread_time()
        try:
            with wall_phase(cycle, name):
                yield
        finally:
            spent[name] = spent.get(name, 0.0) + time.thread_time() - started

    _Cycle._phase = phase  # type: ignore[method-assign]
    return spent


def cycle_scenario(pool: GeneratedPool, settings: Settings, evaluator_kind: str, check: bool) -> Result:
    cpu_by_phase = cpu_phases()
    started = time.perf_counter()
    snapshot = build_snapshot(pool.slot_ads, pool.job_ads, settings)
    built = time.perf_counter()
    cpu = time.thread_time()
    evaluator = make_evaluator(evaluator_kind, snapshot, settings, pool.now)
    result = run_cycle(snapshot, AccountantState(), settings, pool.now, evaluator)
    done = time.perf_counter()
    cpu = time.thread_time() - cpu
    stats = result.stats
    matchmaking = stats.phase_s.get("matchmaking", 0.0)
    matchmaking_cpu = cpu_by_phase.get("matchmaking", 0.0)
    figures: Result = {
        "matchmaking_matches_per_s": stats.matches / matchmaking if matchmaking else 0.0,
        "matchmaking_matches_per_cpu_s": stats.matches / matchmaking_cpu if matchmaking_cpu else 0.0,
        "phases_cpu_s": dict(cpu_by_phase),
        "match_digest": hash(tuple((m.job, m.slot, m.cost, tuple(m.consumed.items())) for m in result.matches)),
        "snapshot_s": built - started, "cycle_s": done - built, "cycle_stats_s": stats.duration_s, "cycle_cpu_s": cpu,
        "matches": stats.matches, "autoclusters": stats.autoclusters, "pie_spins": stats.pie_spins,
        "candidates": int(snapshot.table.candidate.sum()), "slots": stats.slots, "jobs": stats.jobs,
        "matched_slots": len({m.slot for m in result.matches}),
        "rejections": dict(Counter(r.reason for r in result.rejections)),
        "phases_s": stats.phase_s, "problems": len(result.problems),
    }
    fast_stats = getattr(evaluator, "stats", None)
    if fast_stats is not None:
        figures["fast_path"] = {"pairs": fast_stats.pairs, "fallbacks": fast_stats.fallbacks,
                                "fallback_leaves": dict(fast_stats.fallback_leaves)}
    if check:
        figures["unfilled"] = unfilled_matchable(snapshot, result, evaluator)
        figures["check_s"] = time.perf_counter() - done
    return figures


def repeated_cycles(pool: GeneratedPool, settings: Settings, evaluator_kind: str, cycles: int) -> Result:
    """One snapshot negotiated ``cycles`` times, each with a new evaluator: each cycle's CPU time
    and its phases' (the first also compiles what the kernels' disk cache lacks)."""
    cpu_by_phase = cpu_phases()
    snapshot = build_snapshot(pool.slot_ads, pool.job_ads, settings)
    runs = []
    for _ in range(cycles):
        cpu_by_phase.clear()
        cpu = time.thread_time()
        evaluator = make_evaluator(evaluator_kind, snapshot, settings, pool.now)
        result = run_cycle(snapshot, AccountantState(), settings, pool.now, evaluator)
        runs.append({"cycle_cpu_s": time.thread_time() - cpu, "phases_cpu_s": dict(cpu_by_phase),
                     "matches": result.stats.matches})
    return {"runs": runs}


def describe_repeated(figures: Result) -> list[str]:
    if "timeout" in figures or "error" in figures:
        return [f"  repeated cycles: {figures.get('error') or 'not finished within the budget'}"]
    return [f"  cycle {i}: {run['cycle_cpu_s']:.2f} s CPU, {run['matches']} matches; phases' CPU time: "
            + ", ".join(f"{k} {v:.2f} s" for k, v in run["phases_cpu_s"].items())
            for i, run in enumerate(figures["runs"], start=1)]


def daemon_scenario(pool: GeneratedPool, settings: Settings, evaluator_kind: str, share_cluster_ads: bool,
                    cycles: int = 3, clock_step: int = 0) -> Result:
    """``cycles`` cycles as the daemon runs them: the ads filed in an AdStore
    (``share_cluster_ads``: the jobs of a cluster kept as ProcAds sharing one ad; else every job ad
    whole), its SnapshotBuilder keeping per-ad work between cycles and the fast path what it read
    of the ads and compiled (the daemon's thread worker; unless ``settings`` start every cycle
    from scratch). The second cycle negotiates the very same ads (unchanged ads); before each
    later one CHURN of the slot and job ads are re-advertised as new ad objects (a collector
    update; the content is the same, so every cycle negotiates the same pool). Each cycle's clock
    is ``clock_step`` seconds after the last's. The RSS after each cycle shows whether a running
    daemon's memory stays level."""
    # imported here, not at the top: --repeat also runs over checkouts from before these
    from negotiatord.fastpath.compiler.descriptions import AdDescriptions
    from negotiatord.fastpath.interpreter.compilations import Compilations
    from negotiatord.pool.job_ads import ProcAd

    store = AdStore(share_cluster_ads=share_cluster_ads)
    store.update(AdKind.SLOT, ((ad_key(AdKind.SLOT, ad), ad) for ad in pool.slot_ads), 0.0, LIFETIME)
    for start in range(0, len(pool.job_ads), POST_BATCH):        # posted in batches, as load_bench does
        batch = pool.job_ads[start:start + POST_BATCH]
        store.update(AdKind.JOB, ((ad_key(AdKind.JOB, ad), ad) for ad in batch), 0.0, LIFETIME)
        del batch
        store.take_graveyard()      # what the daemon frees after each request
    records = list(store.view().jobs.records())
    figures: Result = {"job_records": len(records), "cluster_ads": len({id(r.cluster) for r in records
                                                                        if isinstance(r, ProcAd)}),
                       "whole_job_ads": sum(not isinstance(r, ProcAd) for r in records),
                       "rss_filed_mib": _status_kib("VmRSS") / 1024}
    del records
    builder, descriptions, compilations = SnapshotBuilder(), AdDescriptions(), Compilations()
    figures["rss_after_mib"] = []
    figures["cycles"] = []
    rng = random.Random(2)
    for number in range(cycles):
        if number >= 2:
            _churn(store, pool, rng)
        started, cpu = time.perf_counter(), time.thread_time()
        view = store.view()
        with garbage_collection_paused():       # as the daemon builds its snapshots
            snapshot = builder.build(view.slots.values(), view.jobs.records(), settings)
        built, built_cpu = time.perf_counter(), time.thread_time()
        now = pool.now + number * clock_step
        if evaluator_kind == "fast":     # what was read of the ads and compiled, kept as the daemon keeps it
            result = run_cycle(snapshot, AccountantState(), settings, now, descriptions=descriptions,
                               compilations=compilations)
        else:
            result = run_cycle(snapshot, AccountantState(), settings, now,
                               make_evaluator(evaluator_kind, snapshot, settings, now))
        figures["cycles"].append({"snapshot_s": built - started, "negotiate_s": time.perf_counter() - built,
                                  "snapshot_cpu_s": built_cpu - cpu, "negotiate_cpu_s": time.thread_time() - built_cpu,
                                  "matches": result.stats.matches})
        del view, snapshot, result
        figures["rss_after_mib"].append(_status_kib("VmRSS") / 1024)
    return figures


def _churn(store: AdStore, pool: GeneratedPool, rng: random.Random) -> None:
    """CHURN of the slot and job ads re-advertised as new ad objects of the same content."""
    slot_ads = list(pool.slot_ads)
    picked = rng.sample(range(len(slot_ads)), int(CHURN * len(slot_ads)))
    store.update(AdKind.SLOT, [(ad_key(AdKind.SLOT, slot_ads[i]), classad2.parseOne(
        slot_ads[i].printOld(), classad2.ParserType.Old)) for i in picked], 1.0, LIFETIME)
    picked = rng.sample(range(len(pool.job_ads)), int(CHURN * len(pool.job_ads)))
    store.update(AdKind.JOB, [(ad_key(AdKind.JOB, ad), ad) for ad in map(pool.job_ads.__getitem__, picked)],
                 1.0, LIFETIME)
    store.take_graveyard()


def unfilled_matchable(snapshot: Snapshot, result, evaluator: PairEvaluator) -> Result:
    """On a sample of the slots still on offer, how many some job left unmatched would match.

    The slots' amounts are replayed from the matches (a consumption-policy slot loses what each
    match consumed; any other matched slot is gone), as the cycle's own state had them.
    """
    table = snapshot.table
    row_of = {slot.name: row for row, slot in enumerate(table.slots)}
    amounts = table.amounts.copy()
    offered = table.candidate.copy()
    for match in result.matches:
        row = row_of[match.slot]
        if not table.consumption_policy[row]:
            offered[row] = False
            continue
        for asset, amount in match.consumed.items():
            amounts[row, table.asset_column(asset)] -= amount
    rows = np.flatnonzero(offered)
    sample = np.array(sorted(random.Random(0).sample(list(rows), min(CHECK_SLOTS, len(rows)))), dtype=np.int64)
    matched_jobs = {m.job for m in result.matches}
    leftovers = [ac for ac in snapshot.autoclusters if any(job.id not in matched_jobs for job in ac.jobs)]
    still = np.zeros(len(sample), dtype=bool)
    by: Counter = Counter()
    for autocluster in leftovers:
        if not len(sample):
            break
        assessment = evaluator.assess(autocluster, sample, amounts[sample])
        fresh = assessment.matched & ~still
        if fresh.any():
            by[autocluster.submitter] += int(fresh.sum())
        still |= assessment.matched
    return {"offered": int(len(rows)), "sampled": int(len(sample)), "still_matchable": int(still.sum()),
            "leftover_autoclusters": len(leftovers), "top_submitters": by.most_common(3)}


def pair_rate_scenario(pool: GeneratedPool, settings: Settings, kinds: list[str]) -> Result:
    """Assessments per second of each evaluator, same autoclusters and candidate slots."""
    snapshot = build_snapshot(pool.slot_ads, pool.job_ads, settings)
    rows = np.flatnonzero(snapshot.table.candidate)
    amounts = snapshot.table.amounts[rows]
    autoclusters = list(snapshot.autoclusters)
    random.Random(1).shuffle(autoclusters)
    figures: Result = {"candidates": int(len(rows))}
    for kind in kinds:
        evaluator = make_evaluator(kind, snapshot, settings, pool.now)
        warm = time.perf_counter()
        evaluator.assess(autoclusters[0], rows, amounts)      # first call: compilation / caches
        warmup = time.perf_counter() - warm
        pairs, started = 0, time.perf_counter()
        for autocluster in autoclusters[1:]:
            evaluator.assess(autocluster, rows, amounts)
            pairs += len(rows)
            if time.perf_counter() - started > PAIR_SECONDS:
                break
        seconds = time.perf_counter() - started
        figures[kind] = {"pairs": pairs, "seconds": seconds, "pairs_per_s": pairs / seconds if seconds else 0.0,
                         "warmup_s": warmup}
    return figures


# --- the real OSPool negotiator -------------------------------------------------------------------


def real_ospool() -> Result:
    """The real OSPool negotiator's last three cycles (the Negotiator ad with the whole pool)."""
    chunks = [c for c in STATS_FILE.read_text().split("### ad") if c.strip()]
    ads = [classad2.parseOne(chunk, classad2.ParserType.Old) for chunk in chunks]
    ad = max(ads, key=lambda a: a.get("LastNegotiationCycleTotalSlots0", 0))

    def three(name: str) -> list:
        return [ad.get(f"LastNegotiationCycle{name}{i}") for i in range(3)]
    return {name: three(name) for name in (
        "Duration", "CpuTime", "TotalSlots", "CandidateSlots", "NumIdleJobs", "NumJobsConsidered", "Matches",
        "Rejections", "ActiveSubmitterCount", "PieSpins")}


# --- report ---------------------------------------------------------------------------------------


def describe_cycle(name: str, figures: Result) -> list[str]:
    if "timeout" in figures:
        return [f"  {name}: not finished within the {figures['timeout']:.0f} s budget (stopped; raise --budget)"]
    if "error" in figures:
        return [f"  {name}: failed: {figures['error']}"]
    lines = [
        f"  {name}: snapshot {figures['snapshot_s']:.2f} s, cycle {figures['cycle_s']:.2f} s "
        f"(evaluator setup {figures['cycle_s'] - figures['cycle_stats_s']:.2f} s + negotiate "
        f"{figures['cycle_stats_s']:.2f} s); "
        f"{figures['matches']} matches on {figures['matched_slots']} slots "
        f"(of {figures['candidates']} candidates); {figures['autoclusters']} autoclusters; "
        f"{figures['pie_spins']} pie spins",
        f"      matchmaking phase: {figures['matchmaking_matches_per_s']:,.0f} matches/s "
        f"({figures['matchmaking_matches_per_cpu_s']:,.0f} per CPU second); the cycle's CPU time "
        f"{figures['cycle_cpu_s']:.2f} s (its wall time is longer when other processes share the CPUs)",
        "      phases' CPU time: " + ", ".join(f"{k} {v:.2f} s" for k, v in figures["phases_cpu_s"].items()),
        f"      peak RSS {figures['rss_peak_mib']:.0f} MiB (slot ads at start {figures['rss_start_mib']:.0f} MiB, "
        f"snapshot + cycle +{figures['rss_peak_mib'] - figures['rss_start_mib']:.0f} MiB)",
        "      phases: " + ", ".join(f"{k} {v:.2f} s" for k, v in figures["phases_s"].items()),
        "      rejections: " + (", ".join(f"{k}: {v}" for k, v in figures["rejections"].items()) or "none"),
    ]
    if "fast_path" in figures:
        fp = figures["fast_path"]
        lines.append(f"      fast path: {fp['pairs']} pairs, {fp['fallbacks']} classad2 fallback evaluations "
                     f"{fp['fallback_leaves'] or ''}")
    if "unfilled" in figures:
        u = figures["unfilled"]
        verdict = "yes" if u["still_matchable"] == 0 else "NO"
        lines.append(f"      every matchable slot filled? {verdict}: {u['still_matchable']} of {u['sampled']} sampled "
                     f"slots still on offer ({u['offered']} in all) match a leftover job "
                     f"({u['leftover_autoclusters']} autoclusters left; check {figures['check_s']:.1f} s)"
                     + (f"; most by {u['top_submitters']}" if u["top_submitters"] else ""))
    return lines


def describe_daemon(label: str, figures: Result, baseline: Result | None = None,
                    from_scratch: Result | None = None) -> list[str]:
    if "timeout" in figures or "error" in figures:
        return [f"  daemon cycles, {label}: {figures.get('error') or 'not finished within the budget'}"]
    ratio = ""
    if baseline is not None and "rss_peak_mib" in baseline:
        ratio = f" ({figures['rss_peak_mib'] / baseline['rss_peak_mib']:.2f}x the store keeping every job ad)"
    lines = [f"  daemon cycles, {label}: {figures['job_records']} jobs filed as {figures['cluster_ads']} "
             f"shared cluster ads + {figures['whole_job_ads']} whole ads; RSS once filed "
             f"{figures['rss_filed_mib']:.0f} MiB (slot ads at start {figures['rss_start_mib']:.0f} MiB)"]
    scratch = from_scratch["cycles"] if from_scratch and "cycles" in from_scratch else None
    for number, cycle in enumerate(figures["cycles"]):
        kind = ("first" if number == 0 else "unchanged ads" if number == 1
                else f"after {CHURN:.0%} of the ads were updated")
        cpu = cycle["snapshot_cpu_s"] + cycle["negotiate_cpu_s"]
        line = (f"      cycle {number + 1} ({kind}): snapshot {cycle['snapshot_s']:.2f} s + negotiate "
                f"{cycle['negotiate_s']:.2f} s = {cycle['snapshot_s'] + cycle['negotiate_s']:.2f} s "
                f"(CPU {cpu:.2f} s), {cycle['matches']} matches")
        if scratch is not None and number < len(scratch):
            other = scratch[number]["snapshot_cpu_s"] + scratch[number]["negotiate_cpu_s"]
            line += f"; from scratch CPU {other:.2f} s, this {cpu / other:.2f}x of it"
        lines.append(line)
    lines.append(f"      peak RSS {figures['rss_peak_mib']:.0f} MiB{ratio}")
    return [*lines, *_rss_by_cycle(figures["rss_after_mib"])]


def _rss_by_cycle(after: list[float]) -> list[str]:
    """The RSS after each cycle, and how much each cycle from the second on added."""
    if len(after) < 3:
        return []
    growth = (after[-1] - after[1]) / (len(after) - 2)
    return [f"      RSS after each cycle: {', '.join(f'{mib:.0f}' for mib in after)} MiB; "
            f"from the second cycle on, {growth:+.1f} MiB a cycle"]


def describe_pairs(figures: Result) -> list[str]:
    if "timeout" in figures or "error" in figures:
        return [f"  pair rate: {figures.get('error') or 'not finished within the budget'}"]
    lines = []
    for kind in ("fast", "classad"):
        if kind in figures:
            f = figures[kind]
            lines.append(f"  pair rate {kind:7s}: {f['pairs_per_s']:>12,.0f} pairs/s ({f['pairs']} pairs over "
                         f"{figures['candidates']} candidate slots in {f['seconds']:.1f} s; "
                         f"first call {f['warmup_s']:.2f} s)")
    if "fast" in figures and "classad" in figures and figures["classad"]["pairs_per_s"]:
        ratio = figures["fast"]["pairs_per_s"] / figures["classad"]["pairs_per_s"]
        lines.append(f"  ratio fast / classad2: {ratio:.0f}x")
    return lines


def describe_real(real: Result) -> list[str]:
    def span(name: str) -> str:
        values = [v for v in real[name] if v is not None]
        low, high = min(values), max(values)
        fmt = (lambda v: f"{v:.1f}") if any(isinstance(v, float) for v in values) else str
        return fmt(low) if low == high else f"{fmt(low)}-{fmt(high)}"
    return [
        "Real OSPool negotiator (negotiator_cycle_stats.txt, last three cycles, HTCondor 25.12):",
        f"  {span('Duration')} s per cycle ({span('CpuTime')} s CPU), {span('TotalSlots')} slots "
        f"({span('CandidateSlots')} candidates), {span('NumIdleJobs')} idle jobs, "
        f"{span('ActiveSubmitterCount')} submitters, {span('NumJobsConsidered')} jobs considered, "
        f"{span('Matches')} matches, {span('Rejections')} rejections, {span('PieSpins')} pie spins",
    ]


# --- main -----------------------------------------------------------------------------------------


def describe_loading(loaded: Result, job_by_job: Result) -> list[str]:
    """The whole-request loading against the job-by-job loop of the same run."""
    if any(k in f for f in (loaded, job_by_job) for k in ("timeout", "error")):
        return ["  whole-request loading / job by job: not comparable (a run did not finish)"]
    same = loaded["match_digest"] == job_by_job["match_digest"]
    rate, reference = loaded["matchmaking_matches_per_cpu_s"], job_by_job["matchmaking_matches_per_cpu_s"]
    return [f"  whole-request loading / job by job: matchmaking {rate:,.0f} / {reference:,.0f} matches per CPU "
            f"second = {rate / reference if reference else float('inf'):.1f}x, cycle {loaded['cycle_s']:.2f} / "
            f"{job_by_job['cycle_s']:.2f} s = {job_by_job['cycle_s'] / loaded['cycle_s']:.1f}x faster (CPU "
            f"{loaded['cycle_cpu_s']:.2f} / {job_by_job['cycle_cpu_s']:.2f} s); "
            f"the same matches in the same order: {'yes' if same else 'NO'}"]


def bench_size(name: str, slots: int, jobs: int, args: argparse.Namespace, settings: Settings) -> None:
    print(f"\n== {name}: {slots} slots, {jobs} idle jobs, {args.scenario} (seed {args.seed}) ==")
    pool = generate_pool(slots, jobs, args.seed, scenario=args.scenario)
    print(f"  generated in {pool.generation_s:.1f} s ({len(pool.submitters)} submitters, now = {pool.now})")
    evaluator = args.evaluator
    if args.repeat:
        figures = isolated(lambda: repeated_cycles(pool, settings, evaluator, args.repeat), args.budget)
        print("\n".join(describe_repeated(figures)))
        sys.stdout.flush()
        return
    if not args.daemon_only:
        runs = [("cycle (consumption policy)", settings, True),
                ("job-by-job loop (the cycle's reference)", replace(settings, job_by_job=True), False)]
        if args.scenario == "steady":
            runs.append(("legacy baseline (no consumption policy)", replace(settings, consumption_policy=False),
                         False))
        results = []
        for label, config, check in runs:
            figures = isolated(lambda c=config, k=check: cycle_scenario(pool, c, evaluator, k), args.budget)
            results.append(figures)
            print("\n".join(describe_cycle(f"{label}, {evaluator} evaluator", figures)))
        print("\n".join(describe_loading(results[0], results[1])))
        if args.scenario != "steady":
            sys.stdout.flush()
            return
    cycles, step = args.daemon_cycles, args.daemon_clock_step
    print(f"  daemon cycles {step} s apart on the clock")
    whole = isolated(lambda: daemon_scenario(pool, settings, evaluator, False, cycles, step), cycles * args.budget)
    print("\n".join(describe_daemon("store keeping every job ad whole (baseline)", whole)))
    scratch = isolated(lambda: daemon_scenario(pool, replace(settings, incremental_cycle=False), evaluator, True,
                                               cycles, step), cycles * args.budget)
    print("\n".join(describe_daemon("from scratch, NEGOTIATORD_INCREMENTAL_CYCLE = False (baseline)", scratch)))
    shared = isolated(lambda: daemon_scenario(pool, settings, evaluator, True, cycles, step), cycles * args.budget)
    print("\n".join(describe_daemon("store sharing one ad per cluster", shared, whole, scratch)))
    if args.daemon_only:
        return
    kinds = ["fast", "classad"]
    budget = args.budget + PAIR_SECONDS * len(kinds)
    print("\n".join(describe_pairs(isolated(lambda: pair_rate_scenario(pool, settings, kinds), budget))))
    sys.stdout.flush()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", choices=(*SIZES, "all"), default="small")
    parser.add_argument("--evaluator", choices=sorted(EVALUATORS), default="fast")
    parser.add_argument("--budget", type=float, default=300.0,
                        help="seconds each scenario may take before it is stopped (default 300)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--scenario", choices=SCENARIOS, default="steady",
                        help="steady: the OSPool as sampled (default); fill: every p-slot empty; "
                             "mixed: steady with 10%% of the pool arriving empty")
    parser.add_argument("--daemon-only", action="store_true",
                        help="only the daemon's cycles over its store, compact against every job ad kept")
    parser.add_argument("--daemon-cycles", type=int, default=3, metavar="N",
                        help="cycles of the daemon scenarios, with 5%% of the ads updated before each "
                             "next one; from 3 the RSS after each is printed (default 2)")
    parser.add_argument("--daemon-clock-step", type=int, default=60, metavar="SECONDS",
                        help="seconds between the daemon scenarios' cycles on the clock (default 60, "
                             "NEGOTIATOR_INTERVAL's default; 0: the clock stands still)")
    parser.add_argument("--repeat", type=int, default=0, metavar="N",
                        help="only negotiate one snapshot N times, printing each cycle's CPU time by phase")
    args = parser.parse_args(argv)
    if args.daemon_cycles < 3:
        parser.error("--daemon-cycles: at least 3 (a first cycle, one over unchanged ads, one over changed ads)")
    settings = load_settings(CONFIG_PATH)
    print("\n".join(describe_real(real_ospool())))
    for name in (SIZES if args.size == "all" else [args.size]):
        bench_size(name, *SIZES[name], args, settings)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
