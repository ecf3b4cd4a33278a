"""One negotiation cycle under NEGOTIATORD_SUBMITTER_ORDER = admission_fair_sharing, against the
same cycle under HTCondor's priority order (the baseline, measured in the same run).

Each order runs on the same generated OSPool-shaped pool (pool_generator.py), with an accountant
state that gives every submitter an admission usage history (so the scores differ), in a forked
child process as cycle_bench.py runs its scenarios. Also timed: the accountant's admission sample
after the cycle (what the daemon adds per cycle), and with quota preemption on, the per-group
usage that feeds the quota preemption timers.

    python benchmarks/submitter_order_bench.py [--slots N] [--jobs N] [--seed N] [--repeat N]
"""

from __future__ import annotations

import argparse
import time
from dataclasses import replace

from cycle_bench import isolated
from pool_generator import CONFIG_PATH, GeneratedPool, generate_pool

from negotiatord.accountant import AccountantState
from negotiatord.accountant.admission import AdmissionUsage, sample_admission_usage
from negotiatord.accountant.quota_timers import group_resources
from negotiatord.pool.builder import build_snapshot
from negotiatord.pool.jobs import submitter_of
from negotiatord.runtime import run_cycle
from negotiatord.settings import Settings, SubmitterOrder, load_settings


def history(pool: GeneratedPool) -> AccountantState:
    """Every submitter with a decayed usage of a few cpus, different for each."""
    names = sorted({name for name in map(submitter_of, pool.job_ads) if name is not None})
    return AccountantState(admission={name: AdmissionUsage({"cpus": 1.0 + k % 17}, pool.now - 60)
                                      for k, name in enumerate(names)})


def scenario(pool: GeneratedPool, settings: Settings, repeat: int) -> dict[str, float]:
    snapshot = build_snapshot(pool.slot_ads, pool.job_ads, settings)
    accountant = history(pool)
    cycles, samples = [], []
    for _ in range(repeat):
        started = time.perf_counter()
        result = run_cycle(snapshot, accountant, settings, pool.now)
        cycles.append(time.perf_counter() - started)
        started = time.perf_counter()
        if settings.submitter_order is SubmitterOrder.ADMISSION_FAIR_SHARING:
            sample_admission_usage(accountant, pool.now, result.held, settings.admission_half_life_s)
        if settings.quota_preemption:
            group_resources(settings.group_tree, result.held)
        samples.append(time.perf_counter() - started)
    return {"cycle_s": min(cycles), "after_s": min(samples), "matches": len(result.matches),
            "pie_spins": result.stats.pie_spins, "submitters": len(result.submitters)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--slots", type=int, default=5_000)
    parser.add_argument("--jobs", type=int, default=25_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeat", type=int, default=3, help="cycles per order; the fastest is shown")
    args = parser.parse_args(argv)
    base = load_settings(CONFIG_PATH)
    pool = generate_pool(args.slots, args.jobs, args.seed)
    print(f"{args.slots} slots, {args.jobs} idle jobs, {len(pool.submitters)} submitters (seed {args.seed})")
    orders = {
        "priority (baseline)": base,
        "admission_fair_sharing": replace(base, submitter_order=SubmitterOrder.ADMISSION_FAIR_SHARING,
                                          admission_resource_weights={"cpus": 1.0, "gpus": 5.0}),
        "admission_fair_sharing + quota timers": replace(
            base, submitter_order=SubmitterOrder.ADMISSION_FAIR_SHARING, quota_preemption=True),
    }
    baseline = None
    for label, settings in orders.items():
        figures = isolated(lambda s=settings: scenario(pool, s, args.repeat), 600.0)
        baseline = baseline or figures["cycle_s"]
        print(f"  {label:40s} cycle {figures['cycle_s']:.3f} s ({figures['cycle_s'] / baseline:.2f}x), "
              f"accountant after it {figures['after_s'] * 1000:.1f} ms, {figures['matches']} matches, "
              f"{figures['pie_spins']} turns, {figures['submitters']} submitters")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
