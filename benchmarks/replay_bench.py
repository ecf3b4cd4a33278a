"""A replay of the KTH-SP2 trace (Parallel Workloads Archive) through real negotiation cycles:
wall time, simulated days per wall-clock hour, cycles, matches, peak RSS.

The pool is the trace header's (100 one-cpu nodes), the config config/cpu_centric.conf (the
CPU-centric consumption policy, HTCondor's NEGOTIATOR_INTERVAL of 60 s). Outputs land in a
temporary directory; the figures are printed.

    python benchmarks/replay_bench.py [--jobs N | --full] [--config FILE] [--out DIR]
"""

from __future__ import annotations

import argparse
import resource
import tempfile
from pathlib import Path

from negotiatord.replay import SimulatedPool, default_pool, fit_to_node, read_trace, replay, write_outputs
from negotiatord.settings import load_settings

ROOT = Path(__file__).resolve().parents[1]
KTH = ROOT.parent / "shared" / "data" / "traces" / "KTH-SP2-1996-2.1-cln.swf.gz"
CONFIG = ROOT / "config" / "cpu_centric.conf"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=5000, help="the trace's first N job records (default 5000)")
    parser.add_argument("--full", action="store_true", help="the whole trace (28,476 jobs)")
    parser.add_argument("--config", type=Path, default=CONFIG)
    parser.add_argument("--out", type=Path, help="keep jobs.csv and summary.json here")
    args = parser.parse_args()

    settings = load_settings(args.config)
    trace = read_trace(KTH, None if args.full else args.jobs)
    count, shape = default_pool(trace)
    trace.jobs = fit_to_node(trace.jobs, shape, trace.cleaning)
    pool = SimulatedPool(count, shape)
    result = replay(trace, settings, pool)
    with tempfile.TemporaryDirectory() as scratch:
        summary = write_outputs(args.out or Path(scratch), result, trace.cleaning, pool, KTH.name)
    wall = summary["wall_time_s"]
    print(f"KTH-SP2, {trace.cleaning.records} records, {len(trace.jobs)} jobs kept, {count} nodes x {shape.cpus} cpu, "
          f"NEGOTIATOR_INTERVAL {result.interval:.0f} s")
    print(f"  simulated: {summary['period']['seconds'] / 86400:.1f} days")
    print(f"  wall time: {wall['replay']:.1f} s   simulated days per wall-clock hour: "
          f"{wall['simulated_days_per_wall_hour']:.0f}")
    print(f"  cycles: {summary['cycles']['run']} run, {summary['cycles']['skipped']} skipped (quiet); "
          f"matches: {summary['cycles']['matches']}")
    print(f"  utilization {summary['utilization']:.3f}; wait p50/p95/max "
          f"{summary['all']['wait_p50_s']:.0f}/{summary['all']['wait_p95_s']:.0f}/{summary['all']['wait_max_s']:.0f} s")
    print(f"  peak RSS: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")


if __name__ == "__main__":
    main()
