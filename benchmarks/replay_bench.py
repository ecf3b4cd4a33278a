"""A replay of a Parallel Workloads Archive trace through real negotiation cycles: wall and CPU
time, simulated days per wall-clock hour, cycles, matches, where a cycle's time goes, peak RSS.

KTH-SP2 (28,476 jobs, 11 months; the header's 100 one-cpu nodes) by default, its first 5,000
jobs unless --full; --trace lcg for LCG (188,041 jobs, 15 days; the header's 24,515 processors,
one-cpu nodes). The config is config/cpu_centric.conf (the CPU-centric consumption policy,
HTCondor's NEGOTIATOR_INTERVAL of 60 s), under --policy's p-slot loading. Outputs land in a
temporary directory unless --out; the figures are printed. CPU time is printed beside wall time
because a loaded machine stretches the wall time alone. --baseline also replays the trace offering
every slot of the pool each cycle (no stand-ins for empty nodes or claims, spent p-slots offered),
in the same run, and prints the CPU ratio and whether the jobs' starts are the same. --pool replays
on the slots of a condor_status -l file instead of the header's nodes (one node per partitionable
or static slot, of its size; ../shared/data/ospool/pool_sample.ads.gz is the OSPool sample's 27).

    python benchmarks/replay_bench.py [--trace kth|lcg] [--jobs N | --full] [--policy P] [--pool FILE]
                                      [--out DIR] [--baseline]
"""

from __future__ import annotations

import argparse
import resource
import tempfile
import time
from dataclasses import replace
from functools import partial
from pathlib import Path

import numpy as np

from negotiatord.replay import (
    SimulatedPool,
    default_pool,
    fit_to_nodes,
    read_pool,
    read_trace,
    replay,
    write_outputs,
)
from negotiatord.settings import PslotLoading, load_settings

ROOT = Path(__file__).resolve().parents[1]
TRACES = ROOT.parent / "shared" / "data" / "traces"
FILES = {"kth": TRACES / "KTH-SP2-1996-2.1-cln.swf.gz", "lcg": TRACES / "LCG.swf.gz"}
CONFIG = ROOT / "config" / "cpu_centric.conf"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trace", choices=sorted(FILES), default="kth")
    parser.add_argument("--jobs", type=int, default=5000, help="the trace's first N job records (default 5000)")
    parser.add_argument("--full", action="store_true", help="the whole trace")
    parser.add_argument("--policy", choices=[policy.value for policy in PslotLoading], default="depth_first")
    parser.add_argument("--config", type=Path, default=CONFIG)
    parser.add_argument("--pool", type=Path, help="the pool's slots: a condor_status -l file (default: the header's)")
    parser.add_argument("--out", type=Path, help="keep jobs.csv, summary.json and report.html here")
    parser.add_argument("--baseline", action="store_true", help="also replay offering every slot, and compare")
    args = parser.parse_args()

    settings = replace(load_settings(args.config), pslot_loading=PslotLoading(args.policy))
    path = FILES[args.trace]
    trace = read_trace(path, None if args.full else args.jobs)
    make_pool = partial(SimulatedPool.alike, *default_pool(trace)) if args.pool is None else read_pool(args.pool).pool
    pool = make_pool()
    trace.jobs = fit_to_nodes(trace.jobs, pool.shapes, trace.cleaning)
    cpu = time.process_time()
    result = replay(trace, settings, pool)
    cpu = time.process_time() - cpu
    replay_peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024   # before the report is drawn
    with tempfile.TemporaryDirectory() as scratch:
        summary = write_outputs(args.out or Path(scratch), result, trace.cleaning, pool, path.name)
    wall = summary["wall_time_s"]
    days = summary["period"]["seconds"] / 86400
    durations = np.array([cycle.duration_s for cycle in result.cycles])
    snapshots = np.array([cycle.snapshot_s for cycle in result.cycles])
    print(f"{path.name}, {trace.cleaning.records} records, {len(trace.jobs)} jobs kept, {pool.count} nodes of "
          f"{len(pool.shapes)} shapes, {pool.cpus} cpus, NEGOTIATOR_INTERVAL {result.interval:.0f} s, {args.policy}")
    print(f"  simulated: {days:.1f} days")
    print(f"  wall time: {wall['replay']:.1f} s (CPU {cpu:.1f} s)   simulated days per wall-clock hour: "
          f"{wall['simulated_days_per_wall_hour']:.0f} (per CPU hour: {days / (cpu / 3600):.0f})")
    print(f"  cycles: {summary['cycles']['run']} run, {summary['cycles']['skipped']} skipped (quiet); "
          f"matches: {summary['cycles']['matches']}")
    if len(durations):
        per_cycle = 1000 * wall["replay"] / len(durations)
        print(f"  per cycle run: {per_cycle:.1f} ms of replay wall time: snapshot {1000 * snapshots.mean():.1f} ms, "
              f"negotiation {1000 * (durations - snapshots).mean():.1f} ms (cycle p95 "
              f"{1000 * np.percentile(durations, 95):.1f}, max {1000 * durations.max():.0f}), the rest (accountant, "
              f"jobs starting and ending, the pool's ads) {per_cycle - 1000 * durations.mean():.1f} ms")
    print(f"  utilization {summary['utilization']:.3f}; wait p50/p95/max "
          f"{summary['all']['wait_p50_s']:.0f}/{summary['all']['wait_p95_s']:.0f}/{summary['all']['wait_max_s']:.0f} s;"
          f" cycles to fill a burst: mean {summary['bursts']['cycles_to_fill']['mean']}")
    preemptions = summary["preemptions"]
    if preemptions["jobs_preempted"]:
        print(f"  preemptions: {preemptions['by_rule']}, {preemptions['jobs_preempted']} jobs, "
              f"badput {preemptions['badput_cpu_s'] / 3600:.1f} cpu-hours")
    print(f"  peak RSS: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB"
          f" ({replay_peak:.0f} MiB before the outputs were written)")
    if args.baseline:
        every = time.process_time()
        offering_every_slot = replay(trace, settings, make_pool(), stand_in_empty_nodes=False)
        every = time.process_time() - every
        same = [(run.start, run.slot) for run in offering_every_slot.runs] == [
            (run.start, run.slot) for run in result.runs]
        print(f"  baseline, every slot offered: CPU {every:.1f} s, {every / cpu:.2f}x this replay's; "
              f"the same starts and slots: {same}")


if __name__ == "__main__":
    main()
