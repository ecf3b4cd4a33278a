"""The pool snapshot a cycle negotiates over: a slot table, idle jobs in autoclusters, problems.

A snapshot is immutable. The cycle copies the few columns it changes (asset amounts of
partitionable slots, availability) into its own working state.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Iterator, Sequence

import classad2
import numpy as np

from negotiatord.pool.autoclusters import Autocluster, form_autoclusters, significance, slot_side_reads
from negotiatord.pool.jobs import Job, prepare_job
from negotiatord.pool.problems import LeftOut
from negotiatord.pool.slots import Slot, prepare_slot
from negotiatord.settings import Settings


@dataclass(frozen=True)
class SlotTable:
    """Slots in columns: one row per slot, one asset column per resource any slot has."""

    slots: tuple[Slot, ...]
    assets: tuple[str, ...]          # union of slot assets, spelled as first seen
    amounts: np.ndarray              # float64[slots, assets]; NaN where a slot lacks the asset
    candidate: np.ndarray            # bool[slots]: unclaimed, offered to idle jobs
    consumption_policy: np.ndarray   # bool[slots]

    @classmethod
    def from_slots(cls, slots: Sequence[Slot]) -> SlotTable:
        assets: dict[str, str] = {}
        for slot in slots:
            for asset in slot.assets:
                assets.setdefault(asset.lower(), asset)
        column = {lower: i for i, lower in enumerate(assets)}
        amounts = np.full((len(slots), len(assets)), np.nan)
        for row, slot in enumerate(slots):
            for asset, amount in zip(slot.assets, slot.amounts):
                amounts[row, column[asset.lower()]] = amount
        amounts.setflags(write=False)
        return cls(
            slots=tuple(slots),
            assets=tuple(assets.values()),
            amounts=amounts,
            candidate=np.array([s.is_candidate for s in slots], dtype=bool),
            consumption_policy=np.array([s.has_consumption_policy for s in slots], dtype=bool),
        )

    def asset_column(self, asset: str) -> int:
        return [a.lower() for a in self.assets].index(asset.lower())

    def __len__(self) -> int:
        return len(self.slots)


@dataclass(frozen=True)
class Snapshot:
    table: SlotTable
    jobs: tuple[Job, ...]                       # idle jobs only
    autoclusters: tuple[Autocluster, ...]
    significant_attributes: tuple[str, ...]
    problems: tuple[LeftOut, ...]
    non_idle_jobs: int

    @classmethod
    def build(
        cls, slot_ads: Iterable[classad2.ClassAd], job_ads: Iterable[classad2.ClassAd], settings: Settings
    ) -> Snapshot:
        problems: list[LeftOut] = []
        slots_by_name: dict[str, Slot] = {}
        for ad in _of_type(slot_ads, "Machine"):
            slot = prepare_slot(ad, settings)
            if isinstance(slot, LeftOut):
                problems.append(slot)
                continue
            if slot.name in slots_by_name:
                problems.append(LeftOut("slot", slot.name, "Name", "appears more than once; the last ad is used"))
            slots_by_name[slot.name] = slot
        slots = list(slots_by_name.values())
        jobs_by_id: dict[str, Job] = {}
        non_idle = 0
        for position, ad in enumerate(_of_type(job_ads, "Job"), start=1):
            job = prepare_job(ad, position)
            if job is None:
                non_idle += 1
            elif isinstance(job, LeftOut):
                problems.append(job)
            else:
                if job.id in jobs_by_id:
                    problems.append(LeftOut("job", job.id, "GlobalJobId", "appears more than once; the last ad is used"))
                jobs_by_id[job.id] = job
        jobs = list(jobs_by_id.values())
        table = SlotTable.from_slots(slots)
        rank_exprs = [classad2.ExprTree(e) for e in (settings.pre_job_rank, settings.post_job_rank) if e]
        reads = slot_side_reads((s for s in slots if s.is_candidate), rank_exprs)
        autoclusters, significant = form_autoclusters(jobs, significance(reads, table.assets))
        return cls(
            table=table,
            jobs=tuple(jobs),
            autoclusters=tuple(autoclusters),
            significant_attributes=significant.names,
            problems=tuple(problems),
            non_idle_jobs=non_idle,
        )


def _of_type(ads: Iterable[classad2.ClassAd], my_type: str) -> Iterator[classad2.ClassAd]:
    """Ads of ``my_type``, or with no MyType at all: a ``condor_status -any`` dump also carries
    Submitter, Negotiator, Collector... ads, which a cycle does not negotiate over."""
    for ad in ads:
        kind = ad.get("MyType")
        if not isinstance(kind, str) or kind.lower() == my_type.lower():
            yield ad
