"""What the job on a claimed slot holds, as the fair-sharing and quota rules account it.

A claimed static or dynamic slot's job holds the whole slot: each of the slot's assets
(lower-cased, as group quotas name them) and its SlotWeight as :data:`WEIGHT_UNIT`. Read from
the slot ad: the claim's customer, ``GlobalJobId`` (else ``JobId``; the slot's name when neither
is published), ``JobPrio`` (0 when missing) and ``JobStart`` (0 when missing: the oldest).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from negotiatord.cycle.result import Match
from negotiatord.pool.slots import Slot
from negotiatord.settings.groups import WEIGHT_UNIT


@dataclass(frozen=True)
class RunningJob:
    """The job on a claimed slot, as the rules that pick victims without a slot to fill (fair
    sharing, quota enforcement) see it."""

    job_id: str                        # GlobalJobId, else JobId, else the slot's name
    submitter: str                     # the claim's customer (AccountingGroup, else RemoteUser)
    group: str                         # the accounting group it is charged to
    resources: Mapping[str, float]     # what it holds on its slot (and its WEIGHT_UNIT charge)
    prio: int                          # JobPrio (an integer in HTCondor): lower is preempted first
    start: float                       # JobStart, epoch seconds: the youngest is preempted first
    slot: str                          # the claimed slot's name; for fair sharing under
                                       # ALLOW_PSLOT_PREEMPTION, its p-slot's (where it gives back)


def slot_resources(slot: Slot, weight: float) -> dict[str, float]:
    """The resources a claimed slot's job holds, ``weight`` being the slot's SlotWeight."""
    held = {asset.lower(): float(amount) for asset, amount in zip(slot.assets, slot.amounts)}
    held[WEIGHT_UNIT] = weight
    return held


def running_job(slot: Slot, weight: float, group: str, partitionable: str | None = None) -> RunningJob:
    """A claimed slot's job as a fair-sharing victim candidate charged to ``group``; on
    ``partitionable`` (its p-slot's name) when its resources go back there once preempted."""
    claim = slot.claim
    assert claim is not None     # asked of claimed slots only
    return RunningJob(claim.job or slot.name, claim.customer, group, slot_resources(slot, weight),
                      int(claim.job_prio or 0), float(claim.job_start or 0.0), partitionable or slot.name)


def match_resources(match: Match) -> dict[str, float]:
    """What a match of this cycle takes: the assets it consumes and its cost as :data:`WEIGHT_UNIT`."""
    resources = {asset.lower(): float(amount) for asset, amount in match.consumed.items()}
    resources[WEIGHT_UNIT] = match.cost
    return resources
