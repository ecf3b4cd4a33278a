"""The fair-sharing rule on its own: what one preemption decision costs on a full pool.

Builds a pool of partitionable slots, all busy, with a two-level group tree (GROUP_RESOURCE_QUOTA
in cpus and memory, random weights) and several dynamic-slot jobs per slot, then times:

* usage: GroupUsage built and every running job charged, once per cycle (the baseline);
* decide: choose_victims for jobs of the least busy groups (a victim is usually found on one of
  the first slots) and of the busiest group (refused everywhere, after every slot: the worst
  case);

and prints both and their ratio, measured in the same run. The cycle does not call the rule yet,
so this is the cost the cycle will pay per job that finds no free slot.

    python benchmarks/fair_sharing_bench.py [--slots N] [--jobs-per-slot N] [--decisions N] [--seed N]
"""

from __future__ import annotations

import argparse
import random
import time

from negotiatord.cycle.fair_sharing import GroupUsage, RunningJob, choose_victims, nominal_shares
from negotiatord.settings import GroupSettings
from negotiatord.settings.groups import GroupTree

STRATEGIES = ("LessThanOrEqualToFinalShare", "LessThanInitialShare")


def build_pool(slots: int, per_slot: int, rng: random.Random) -> tuple[GroupTree, list[str], dict, list[RunningJob]]:
    names = []
    groups = []
    for top in range(6):
        groups.append(GroupSettings(f"g{top}", None, None, False, False, None,
                                    fairshare_weight=rng.choice([0.5, 1.0, 2.0])))
        for child in range(3):
            name = f"g{top}.c{child}"
            names.append(name)
            groups.append(GroupSettings(name, None, None, False, False, None,
                                        resource_quota={"cpus": slots * 16 / 18, "memory": slots * 64000 / 18},
                                        fairshare_weight=rng.choice([0.5, 1.0, 2.0])))
    tree = GroupTree(groups)
    running = []
    for slot in range(slots):
        cpus_left, memory_left = 16, 64000
        for index in range(per_slot):
            cpus = min(cpus_left, rng.choice([1, 1, 2, 4]))
            memory = min(memory_left, cpus * rng.choice([2000, 4000]))
            if cpus <= 0:
                break
            cpus_left -= cpus
            memory_left -= memory
            # the busiest groups hold most of the pool, so some of them borrow
            group = names[min(int(rng.expovariate(0.3)), len(names) - 1)]
            running.append(RunningJob(f"{slot}.{index}", f"{group}.u@site", group,
                                      {"cpus": cpus, "memory": memory}, rng.randint(0, 5),
                                      1_000_000 - rng.randint(0, 86400), f"slot{slot}@node"))
    free = {f"slot{slot}@node": {"cpus": 16.0, "memory": 64000.0} for slot in range(slots)}
    for job in running:
        for resource, amount in job.resources.items():
            free[job.slot][resource] -= amount
    return tree, names, free, running


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--slots", type=int, default=5000)
    parser.add_argument("--jobs-per-slot", type=int, default=6)
    parser.add_argument("--decisions", type=int, default=20)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    tree, names, free, running = build_pool(args.slots, args.jobs_per_slot, rng)
    pool = {"cpus": 16.0 * args.slots, "memory": 64000.0 * args.slots}

    started = time.perf_counter()
    usage = GroupUsage(tree, nominal_shares(tree, pool, {}))
    for job in running:
        usage.admit(job.group, job.resources)
    usage_s = time.perf_counter() - started

    def time_decisions(askers: list[str]) -> tuple[float, int]:
        victims = 0
        started = time.perf_counter()
        for _ in range(args.decisions):
            request = {"cpus": rng.choice([1.0, 2.0]), "memory": 2000.0}
            found = choose_victims(usage, rng.choice(askers), request, free, running, STRATEGIES)
            victims += len(found.victims) if found else 0
        return (time.perf_counter() - started) / args.decisions, victims

    # The least busy groups usually find a victim on one of the first slots; the busiest group
    # is refused everywhere, after looking at every slot: the worst case.
    found_s, found_victims = time_decisions(names[-6:])
    refused_s, refused_victims = time_decisions(names[:1])

    print(f"pool: {args.slots} partitionable slots, {len(running)} running jobs, {len(names)} leaf groups")
    print(f"usage (baseline): {usage_s * 1000:.1f} ms per cycle")
    print(f"decide, light groups: {found_s * 1000:.1f} ms per job ({args.decisions} jobs, "
          f"{found_victims} victims); ratio to usage {found_s / usage_s:.2f}")
    print(f"decide, busiest group: {refused_s * 1000:.1f} ms per job ({args.decisions} jobs, "
          f"{refused_victims} victims); ratio to usage {refused_s / usage_s:.2f}")


if __name__ == "__main__":
    main()
