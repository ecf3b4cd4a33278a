"""One negotiation cycle with preemption considered, against the same cycle without, in one run.

The pool is cycle_bench.py's OSPool-shaped steady state (pool_generator.py: most p-slots carved
into claimed dynamic slots running the generated submitters' work, plus claimed static slots)
under benchmarks/ospool_like.conf. The customers get random real priorities (seeded), so some
are much worse than others. Three scenarios, each in a forked child over the same pool:

* off: NEGOTIATOR_CONSIDER_PREEMPTION = False, claimed slots are usage only (the baseline);
* default: NEGOTIATOR_CONSIDER_PREEMPTION = True with HTCondor's default PREEMPTION_REQUIREMENTS
  (False): only slots whose Rank could exceed their CurrentRank are considered;
* uwcs: PREEMPTION_REQUIREMENTS = HTCondor's UWCS example policy (condor_config.annotated:
  same group, running over an hour, RemoteUserPrio 1.2 times the submitter's), so every claimed
  dynamic or static slot is a candidate and the policy is evaluated;
* fair_sharing: NEGOTIATORD_FAIR_SHARING = True with HTCondor's preemption off: after
  matchmaking, jobs still unmatched ask the Dominant Resource Share rule for a claimed slot
  (once per autocluster while it answers, the groups' HGQ quotas as nominal shares).

    python benchmarks/preemption_bench.py [--large | --size small|medium] [--evaluator fast|classad]
        [--budget S] [--seed N] [--repeat N] [--kept] [--scenarios off default ...]

The default pool is 5,000 slots / 25,000 idle jobs; ``--size medium`` is 15,000 / 85,000 and
``--large`` the 45,000 / 255,000 pool. With ``--repeat N`` the scenarios run N times in turn and
each one's fastest cycle counts. With ``--kept`` each scenario's cycle is the second of two over
the same ads, negotiated with what the first kept (the snapshot builder's records, the ads'
descriptions, the compilations and the match space) and a minute later on the clock, as a
running daemon's next cycle is; the default is a cycle from scratch, a daemon's first.
"""

from __future__ import annotations

import argparse
import random
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import replace

from cycle_bench import SIZES, isolated, make_evaluator
from pool_generator import CONFIG_PATH, GeneratedPool, generate_pool

from negotiatord.accountant import AccountantState
from negotiatord.accountant.records import CustomerRecord
from negotiatord.commands.negotiate import EVALUATORS
from negotiatord.cycle.result import CycleResult
from negotiatord.fastpath.compiler.descriptions import AdDescriptions
from negotiatord.fastpath.interpreter.compilations import Compilations
from negotiatord.pool.builder import SnapshotBuilder, build_snapshot
from negotiatord.runtime import run_cycle
from negotiatord.settings import Settings, load_settings

UWCS = ("((TARGET.SubmitterGroup =?= RemoteGroup) && ((time() - EnteredCurrentState) > (1 * 3600)) "
        "&& (RemoteUserPrio > TARGET.SubmitterUserPrio * 1.2)) || (MY.NiceUser == True)")
TARGET_RATIO = 2.0
SCENARIOS: dict[str, Callable[[Settings], Settings]] = {
    "off": lambda s: replace(s, consider_preemption=False),
    "default": lambda s: replace(s, consider_preemption=True),
    "uwcs": lambda s: replace(s, consider_preemption=True, preemption_requirements=UWCS),
    "fair_sharing": lambda s: replace(s, consider_preemption=False, fair_sharing=True),
}


def accountant(pool: GeneratedPool, seed: int) -> AccountantState:
    """Every customer with a real priority drawn between 0.5 and 500 (log-uniform)."""
    rng = random.Random(seed)
    return AccountantState([CustomerRecord(name, 0.5 * 1000 ** rng.random(), None, 0.0, 0.0, None, None, pool.now)
                            for name in pool.submitters])


def scenario(pool: GeneratedPool, settings: Settings, state: AccountantState, evaluator_kind: str) -> dict:
    started = time.perf_counter()
    snapshot = build_snapshot(pool.slot_ads, pool.job_ads, settings)
    built = time.perf_counter()
    evaluator = make_evaluator(evaluator_kind, snapshot, settings, pool.now)
    result = run_cycle(snapshot, state, settings, pool.now, evaluator)
    return _figures(result, built - started, time.perf_counter() - built)


def kept_scenario(pool: GeneratedPool, settings: Settings, state: AccountantState) -> dict:
    """The second of two cycles over the same ads, a minute after the first on the clock (as a
    daemon's next cycle, NEGOTIATOR_INTERVAL's default), with what the first kept (the fast
    path's)."""
    builder, descriptions, compilations = SnapshotBuilder(), AdDescriptions(), Compilations()
    job_ads = list(pool.job_ads)
    for number in range(2):
        started = time.perf_counter()
        snapshot = builder.build(pool.slot_ads, job_ads, settings)
        built = time.perf_counter()
        result = run_cycle(snapshot, state, settings, pool.now + 60 * number, descriptions=descriptions,
                           compilations=compilations)
    return _figures(result, built - started, time.perf_counter() - built)


def _figures(result: CycleResult, snapshot_s: float, cycle_s: float) -> dict:
    stats = result.stats
    return {"snapshot_s": snapshot_s, "cycle_s": cycle_s, "matches": stats.matches,
            "claimed_slots": stats.claimed_slots, "preemptions": dict(Counter(p.rule for p in result.preemptions)),
            "pairs": stats.pairs, "fallbacks": stats.classad_fallbacks, "phases_s": stats.phase_s}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--large", action="store_true", help="the 45,000-slot / 255,000-job pool")
    parser.add_argument("--size", choices=("small", "medium"), default="small",
                        help="the pool without --large: small (5,000 / 25,000) or medium (15,000 / 85,000)")
    parser.add_argument("--evaluator", choices=sorted(EVALUATORS), default="fast")
    parser.add_argument("--budget", type=float, default=600.0,
                        help="seconds each scenario may take before it is stopped (default 600)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeat", type=int, default=1,
                        help="runs of each scenario, interleaved; the fastest cycle of each is reported")
    parser.add_argument("--kept", action="store_true",
                        help="a daemon's next cycle over the same ads, with the kept state (fast evaluator only)")
    parser.add_argument("--scenarios", nargs="+", choices=SCENARIOS, default=list(SCENARIOS),
                        help="the scenarios to run (default: all; off is the baseline of the ratios)")
    args = parser.parse_args(argv)
    if args.kept and args.evaluator != "fast":
        parser.error("--kept keeps the fast path's state: it takes the fast evaluator only")
    slots, jobs = SIZES["large" if args.large else args.size]
    settings = load_settings(CONFIG_PATH)
    pool = generate_pool(slots, jobs, args.seed)
    state = accountant(pool, args.seed)
    print(f"{slots} slots, {jobs} idle jobs (seed {args.seed}), {args.evaluator} evaluator, "
          f"generated in {pool.generation_s:.1f} s; "
          f"{'a daemon next cycle, with the kept state' if args.kept else 'a cycle from scratch'}")
    configs = {label: changes(settings) for label, changes in SCENARIOS.items() if label in args.scenarios}
    figures: dict[str, dict] = {}
    # scenarios interleaved, each one's fastest cycle kept: on a shared machine, load that comes
    # and goes then weighs on every scenario alike
    for _ in range(args.repeat):
        for label, config in configs.items():
            run = (lambda c=config: kept_scenario(pool, c, state)) if args.kept else \
                (lambda c=config: scenario(pool, c, state, args.evaluator))
            found = isolated(run, args.budget)
            kept = figures.get(label)
            if kept is None or ("cycle_s" in found and found["cycle_s"] < kept.get("cycle_s", float("inf"))):
                figures[label] = found
    for label, found in figures.items():
        if "cycle_s" not in found:
            print(f"  {label}: {found}")
            continue
        phases = ", ".join(f"{k} {v:.2f}" for k, v in found["phases_s"].items())
        print(f"  {label:8s} cycle {found['cycle_s']:.2f} s (snapshot {found['snapshot_s']:.2f} s), "
              f"{found['matches']} matches, {found['claimed_slots']} claimed slots considered, "
              f"preemptions {found['preemptions']}, {found['pairs']} pairs, {found['fallbacks']} fallbacks; "
              f"phases: {phases}")
    base = figures.get("off", {}).get("cycle_s")
    for label in [name for name in figures if name != "off"]:
        value = figures[label].get("cycle_s")
        if base and value:
            print(f"  ratio {label} / off: {value / base:.2f}x (target <= {TARGET_RATIO:g}x)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
