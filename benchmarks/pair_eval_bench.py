"""Pair evaluations per second: the fast path (negotiatord.fastpath) against classad2, same ads, same run.

A pair evaluation is what the cycle asks of a PairEvaluator for one (autocluster, slot): both
Requirements, the consumption of every asset, the match cost (SlotWeight before and after) and the
three ranks. Both evaluators answer whole scans (``assess`` over every candidate slot, as a
MatchList does) and single re-assessments (one slot whose amounts a match changed); answers are
checked equal on every scan both evaluators run.

    python benchmarks/pair_eval_bench.py [--slots N] [--autoclusters M] [--seed S]
                                         [--reference-seconds T] [--all-slots]

The pool comes from pool_generator.py (OSPool-shaped: real START expressions, real occupancy).
``--all-slots`` scans every slot of the pool rather than the unclaimed ones (claimed slots never
match, but they exercise the kernels at the pool's full width).
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass

import numpy as np

from pool_generator import CONFIG_PATH, count_arg, generate_pool

from negotiatord.evaluation import ClassAdEvaluator
from negotiatord.fastpath.interpreter.evaluator import FastEvaluator
from negotiatord.pool.builder import build_snapshot
from negotiatord.settings import load_settings


@dataclass
class Rate:
    pairs: int = 0
    seconds: float = 0.0

    def add(self, pairs: int, seconds: float) -> None:
        self.pairs += pairs
        self.seconds += seconds

    @property
    def per_second(self) -> float:
        return self.pairs / self.seconds if self.seconds else float("nan")


def same(a, b) -> bool:
    return all(np.array_equal(getattr(a, f), getattr(b, f), equal_nan=True)
               for f in ("matched", "consumption", "cost", "rank"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--slots", type=count_arg, default=5000, help="Machine ads in the pool (default 5000)")
    parser.add_argument("--autoclusters", type=int, default=200, help="autoclusters to scan (default 200)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--reference-seconds", type=float, default=20.0,
                        help="time budget for classad2's scans (default 20 s)")
    parser.add_argument("--all-slots", action="store_true", help="scan every slot, not only the unclaimed ones")
    args = parser.parse_args(argv)

    started = time.perf_counter()
    pool = generate_pool(args.slots, 25 * args.autoclusters, seed=args.seed)
    settings = load_settings(CONFIG_PATH)
    snapshot = build_snapshot(pool.slot_ads, pool.job_ads, settings)
    table = snapshot.table
    rows = np.arange(len(table)) if args.all_slots else np.flatnonzero(table.candidate)
    amounts = table.amounts[rows]
    autoclusters = snapshot.autoclusters[: args.autoclusters]
    print(f"pool: {len(table)} slots, {len(rows)} scanned per autocluster, {len(autoclusters)} autoclusters "
          f"(built in {time.perf_counter() - started:.1f} s)")

    build = time.perf_counter()
    fast = FastEvaluator(table, settings, pool.now)
    reference = ClassAdEvaluator(table, settings, pool.now)
    build = time.perf_counter() - build

    cold, warm, single = Rate(), Rate(), Rate()
    answers = {}
    for autocluster in autoclusters:
        t = time.perf_counter()
        answers[autocluster.id] = fast.assess(autocluster, rows, amounts)
        cold.add(len(rows), time.perf_counter() - t)
    for autocluster in autoclusters:
        t = time.perf_counter()
        fast.assess(autocluster, rows, amounts)
        warm.add(len(rows), time.perf_counter() - t)
    probes = [(ac, i) for ac in autoclusters for i in np.flatnonzero(answers[ac.id].matched)[:2]] or \
             [(ac, 0) for ac in autoclusters]
    for autocluster, i in probes:
        t = time.perf_counter()
        fast.assess(autocluster, rows[i:i + 1], amounts[i:i + 1])
        single.add(1, time.perf_counter() - t)

    reference_rate, reference_single = Rate(), Rate()
    checked = disagreements = 0
    for autocluster in autoclusters:
        if reference_rate.seconds > args.reference_seconds:
            break
        t = time.perf_counter()
        expected = reference.assess(autocluster, rows, amounts)
        reference_rate.add(len(rows), time.perf_counter() - t)
        checked += 1
        disagreements += not same(expected, answers[autocluster.id])
    for autocluster, i in probes[:200]:
        t = time.perf_counter()
        reference.assess(autocluster, rows[i:i + 1], amounts[i:i + 1])
        reference_single.add(1, time.perf_counter() - t)

    matched = sum(int(a.matched.sum()) for a in answers.values())
    print(f"evaluator construction: {build * 1000:.1f} ms (fast path and classad2 reference together)")
    print(f"matched pairs: {matched} of {len(autoclusters) * len(rows)}")
    print(f"fast path, first scan of each autocluster (compiles per job shape): {cold.per_second:,.0f} pairs/s, "
          f"{cold.seconds / len(autoclusters) * 1000:.2f} ms per scan")
    print(f"fast path, scans:                {warm.per_second:,.0f} pairs/s, "
          f"{warm.seconds / len(autoclusters) * 1000:.2f} ms per scan of {len(rows)} slots")
    print(f"fast path, single re-assessment: {single.per_second:,.0f} pairs/s "
          f"({single.seconds / single.pairs * 1e6:.0f} us per call)")
    print(f"classad2 reference, scans:       {reference_rate.per_second:,.0f} pairs/s ({checked} autoclusters)")
    print(f"classad2 reference, single:      {reference_single.per_second:,.0f} pairs/s")
    print(f"ratio, scans (warm):  {warm.per_second / reference_rate.per_second:,.0f}x")
    print(f"ratio, scans (cold):  {cold.per_second / reference_rate.per_second:,.0f}x")
    print(f"ratio, single:        {single.per_second / reference_single.per_second:,.1f}x")
    print(f"answers compared on {checked} scans: {disagreements} disagreements")
    print(f"fast path stats: {fast.stats.as_dict()}")
    return 1 if disagreements else 0


if __name__ == "__main__":
    raise SystemExit(main())
