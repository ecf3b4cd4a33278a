"""Group trees, running jobs and slots for fair-sharing tests, stated the way Kueue's tests state
ClusterQueues, cohorts and admitted workloads."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from negotiatord.cycle.fair_sharing import GroupUsage, RunningJob, nominal_shares
from negotiatord.settings import GroupSettings
from negotiatord.settings.groups import GroupTree

SLOT = "slot1@node"


def fair_group(name: str, cpus: float | None = None, *, weight: float = 1.0,
               borrowing_limit: Mapping[str, float] | None = None, **resources: float) -> GroupSettings:
    """A group with ``GROUP_RESOURCE_QUOTA_<name> = Cpus:<cpus>`` (plus other resources), its
    ``GROUP_FAIRSHARE_WEIGHT`` and ``GROUP_BORROWING_LIMIT``; no HGQ quota of its own."""
    quota = ({"cpus": cpus} if cpus is not None else {}) | resources
    return GroupSettings(name, None, None, False, False, None, resource_quota=quota or None,
                         borrowing_limit=borrowing_limit, fairshare_weight=weight)


def job(job_id: str, group: str, cpus: float = 1.0, prio: int = 0, start: float = 1000.0,
        slot: str = SLOT, **resources: float) -> RunningJob:
    held = {"cpus": cpus} if cpus else {}
    return RunningJob(job_id, f"{group}.user@site", group, held | resources, prio, start, slot)


@dataclass
class Pool:
    """A group tree, its usage with ``running`` charged, and the free resources per slot."""

    tree: GroupTree
    usage: GroupUsage
    running: list[RunningJob]
    free: dict[str, dict[str, float]]


def pool(groups: Sequence[GroupSettings], capacity: Mapping[str, float], running: Sequence[RunningJob],
         slots: Mapping[str, Mapping[str, float]] | None = None) -> Pool:
    """``running`` charged to their groups; by default one partitionable slot holding all of
    ``capacity``, its free part what the running jobs leave."""
    tree = GroupTree(groups)
    usage = GroupUsage(tree, nominal_shares(tree, capacity, {}))
    for held in running:
        usage.admit(held.group, held.resources)
    slot_sizes = slots if slots is not None else {SLOT: capacity}
    free = {
        slot: {r: size - sum(j.resources.get(r, 0.0) for j in running if j.slot == slot)
               for r, size in sizes.items()}
        for slot, sizes in slot_sizes.items()
    }
    return Pool(tree, usage, list(running), free)
