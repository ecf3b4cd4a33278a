"""Holding what a daemon's cycle matched: holds_for + apply_holds after a fill cycle.

After each committed cycle the daemon holds every matched job and slot (negotiatord.publish.holds):
a fill cycle over empty glideins matches thousands of jobs at once, most of them kept by the store
as ProcAds sharing their cluster's ad. For each size this generates a "fill" pool
(pool_generator.py), files it in an AdStore, runs the daemon's cycle over it once, and then holds
that cycle's matches:

* current: this tree's store and holds;
* baseline: the store and holds modules as they were at ``--baseline`` (a git revision, read with
  ``git show``), in the same process, over the same ads and matches.

Each variant holds the matches over a fresh store of its own (best of ``--repeats``), timed apart
for holds_for (the cycle's thread) and apply_holds (the event loop). An untimed pass counts, per
held job, how often a job ad was made whole (``ProcAd.whole``) and how often ``ad_version`` ran.

    python benchmarks/hold_bench.py [--matches 1000 20000] [--repeats 3] [--baseline REV]
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import Any

import classad2

from pool_generator import CONFIG_PATH, generate_pool
from negotiatord.accountant import AccountantState
from negotiatord.cycle.result import Match
from negotiatord.feed import AdKind
from negotiatord.feed import store as current_store
from negotiatord.feed.kinds import ad_key
from negotiatord.pool.builder import SnapshotBuilder
from negotiatord.pool.job_ads import ProcAd
from negotiatord.publish import holds as current_holds
from negotiatord.runtime import run_cycle
from negotiatord.settings import load_settings

ROOT = Path(__file__).resolve().parents[1]
LIFETIME = 900.0
# (slots, idle jobs) of a fill pool whose cycle makes about that many matches
POOLS = {1000: (100, 3_000), 20000: (2_000, 80_000)}
# the last revision whose holds made each held compact job whole and digested it more than once
DEFAULT_BASELINE = "cec79d3"


def baseline_modules(revision: str) -> tuple[ModuleType, ModuleType]:
    """negotiatord/feed/store.py and negotiatord/publish/holds.py as they were at ``revision``,
    the latter importing the former."""
    def source(path: str) -> str:
        return subprocess.run(["git", "show", f"{revision}:{path}"], cwd=ROOT, check=True,
                              capture_output=True, text=True).stdout

    def load(name: str, path: str) -> ModuleType:
        spec = importlib.util.spec_from_loader(name, loader=None)
        assert spec is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module       # dataclasses look their module up
        exec(compile(source(path), f"{revision}:{path}", "exec"), module.__dict__)
        return module

    store = load("baseline_store", "negotiatord/feed/store.py")
    saved = sys.modules["negotiatord.feed.store"]
    sys.modules["negotiatord.feed.store"] = store      # what the old holds module imports
    try:
        holds = load("baseline_holds", "negotiatord/publish/holds.py")
    finally:
        sys.modules["negotiatord.feed.store"] = saved
    return store, holds


def filled(store_module: ModuleType, slots: list[classad2.ClassAd], jobs: list[classad2.ClassAd]) -> Any:
    store = store_module.AdStore()
    store.update(AdKind.SLOT, [(ad_key(AdKind.SLOT, ad), ad) for ad in slots], 0.0, LIFETIME)
    store.update(AdKind.JOB, [(ad_key(AdKind.JOB, ad), ad) for ad in jobs], 0.0, LIFETIME)
    store.take_graveyard()
    return store


def hold_once(store_module: ModuleType, holds_module: ModuleType, slots: list[classad2.ClassAd],
              jobs: list[classad2.ClassAd], matches: list[Match]) -> tuple[float, float, int]:
    """Seconds of holds_for and of apply_holds over a fresh store; how many holds were filed."""
    store = filled(store_module, slots, jobs)
    view = store.view()
    gc.collect()
    started = time.perf_counter()
    holds = holds_module.holds_for(view, matches)
    made = time.perf_counter()
    holds_module.apply_holds(store, holds)
    applied = time.perf_counter()
    held = sum(store.held().values())
    store.take_graveyard()
    return made - started, applied - made, held


@contextmanager
def counted(store_module: ModuleType, holds_module: ModuleType) -> Iterator[dict[str, int]]:
    """Counts of ProcAd.whole and ad_version calls (from the store and the holds) while open."""
    counts = {"whole": 0, "ad_version": 0}
    whole, version = ProcAd.whole, store_module.ad_version

    def counting_whole(record: ProcAd) -> classad2.ClassAd:
        counts["whole"] += 1
        return whole(record)

    def counting_version(ad: Any) -> str:
        counts["ad_version"] += 1
        return version(ad)

    ProcAd.whole = counting_whole      # type: ignore[method-assign]
    store_module.ad_version = holds_module.ad_version = counting_version
    try:
        yield counts
    finally:
        ProcAd.whole = whole           # type: ignore[method-assign]
        store_module.ad_version = holds_module.ad_version = version


def per_held_job(store_module: ModuleType, holds_module: ModuleType, slots: list[classad2.ClassAd],
                 jobs: list[classad2.ClassAd], matches: list[Match]) -> tuple[float, float]:
    store = filled(store_module, slots, jobs)
    view = store.view()
    compact = sum(isinstance(view.jobs.by_key.get(m.job), ProcAd) for m in matches)
    with counted(store_module, holds_module) as counts:
        holds_module.apply_holds(store, holds_module.holds_for(view, matches))
    slots_held = len({m.slot for m in matches})
    # the slots' own versions are read once each in both trees; the rest is the jobs'
    return counts["whole"] / compact, (counts["ad_version"] - slots_held) / len(matches)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--matches", type=int, nargs="+", choices=sorted(POOLS), default=sorted(POOLS))
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--baseline", default=DEFAULT_BASELINE, help="git revision of the baseline")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    settings = load_settings(CONFIG_PATH)
    old_store, old_holds = baseline_modules(args.baseline)
    variants: dict[str, tuple[ModuleType, ModuleType]] = {
        f"baseline ({args.baseline})": (old_store, old_holds), "current": (current_store, current_holds)}
    for target in args.matches:
        slot_count, job_count = POOLS[target]
        pool = generate_pool(slot_count, job_count, seed=args.seed, scenario="fill")
        slots, jobs = pool.slot_ads, list(pool.job_ads)
        store = filled(current_store, slots, jobs)
        view = store.view()
        result = run_cycle(SnapshotBuilder().build(view.slots.values(), view.jobs.records(), settings),
                           AccountantState(), settings, pool.now)
        matches = list(result.matches)
        del store, view, result
        print(f"fill pool: {slot_count:,} slots, {job_count:,} idle jobs -> {len(matches):,} matches "
              f"on {len({m.slot for m in matches}):,} slots")
        totals: dict[str, float] = {}
        for label, (store_module, holds_module) in variants.items():
            runs = [hold_once(store_module, holds_module, slots, jobs, matches) for _ in range(args.repeats)]
            made, applied, held = min(runs, key=lambda run: run[0] + run[1])
            wholes, versions = per_held_job(store_module, holds_module, slots, jobs, matches)
            totals[label] = made + applied
            print(f"  {label:<22} holds_for {made * 1e3:8.1f} ms  apply_holds {applied * 1e3:8.1f} ms  "
                  f"total {(made + applied) * 1e3:8.1f} ms  ({(made + applied) / len(matches) * 1e6:6.1f} us/match, "
                  f"{held:,} held)  per held job: {wholes:.2f} made whole, {versions:.2f} ad_version")
        baseline, current = totals.values()
        print(f"  speed-up {baseline / current:.1f}x (best of {args.repeats})")


if __name__ == "__main__":
    main()
