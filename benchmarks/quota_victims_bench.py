"""What holding quota victims as being preempted adds to a daemon cycle.

Before each cycle the daemon shows the slots of the quota victims that committed cycles named as
Preempting while their ads still show them running (negotiatord/publish/preempting.py). Timed
here on a generated OSPool-shaped pool: building the cycle's pool view from the ad store (the
baseline, which every cycle pays) and then applying the victims to it, for victims on 1% and 10%
of the claimed slots: the first cycle after they are named copies each victim's ad, later cycles
reuse the copies while the ads are unchanged.

    python benchmarks/quota_victims_bench.py [--slots N] [--seed N] [--repeat N]
"""

from __future__ import annotations

import argparse
import time
from dataclasses import replace

from pool_generator import CONFIG_PATH, generate_pool

from negotiatord.classad.conversion import evaluate_string
from negotiatord.cycle.result import Preemption
from negotiatord.feed import AdKind, AdStore
from negotiatord.publish.preempting import BeingPreempted
from negotiatord.settings import GroupSettings, load_settings


def best(repeat: int, work) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        work()
        times.append(time.perf_counter() - started)
    return min(times)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--slots", type=int, default=45_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeat", type=int, default=5, help="runs per figure; the fastest is shown")
    args = parser.parse_args(argv)
    pool = generate_pool(args.slots, 0, args.seed)
    settings = replace(load_settings(CONFIG_PATH), quota_preemption=True,
                       groups=(GroupSettings("group_a", None, None, False, False, None, limit={"cpus": 1},
                                             quota_preemption_delay=3600.0),))
    store = AdStore()
    store.update(AdKind.SLOT, ((evaluate_string(ad, "Name") or str(k), ad) for k, ad in enumerate(pool.slot_ads)),
                 0.0, 1e12)
    view = store.view()
    claimed = [(name, evaluate_string(ad, "GlobalJobId")) for name, ad in view.slots.items()
               if evaluate_string(ad, "State") == "Claimed" and evaluate_string(ad, "GlobalJobId")]
    baseline = best(args.repeat, store.view)
    print(f"{len(view.slots)} slot ads, {len(claimed)} claimed with a job")
    print(f"  {'pool view (baseline)':34s} {baseline * 1000:8.2f} ms (1.00x)")
    for share in (0.01, 0.10):
        victims = claimed[:max(1, int(len(claimed) * share))]
        preemptions = [Preemption(job, name, "group_a.u@site", "group_a", None, None, None, "quota")
                       for name, job in victims]

        def first(preemptions=preemptions) -> None:
            preempting = BeingPreempted()
            preempting.add(pool.now, preemptions)
            assert preempting.apply(view, settings, pool.now) is not view and len(preempting) == len(preemptions)

        steady = BeingPreempted()
        steady.add(pool.now, preemptions)
        steady.apply(view, settings, pool.now)
        for label, took in ((f"{len(victims)} victims, first cycle", best(args.repeat, first)),
                            (f"{len(victims)} victims, later cycles",
                             best(args.repeat, lambda p=steady: p.apply(view, settings, pool.now)))):
            print(f"  {label:34s} {took * 1000:8.2f} ms ({took / baseline:.2f}x of the view)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
