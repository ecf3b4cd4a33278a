"""Building snapshots cycle after cycle, redoing per-ad work only for ads that changed.

A collector feed replaces an ad object when the ad is updated, so an ad object seen in the last
cycle holds the same ad: its slot or job record, the job attributes a slot's expressions read and
a job's significant-attribute values carry over. This is what keeps a daemon's snapshot cheap on
a 45k-slot, 255k-job pool (HTCondor's schedd likewise caches each job's autocluster id until a
significant attribute changes). A settings reload drops the slot work, which depends on the config.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Iterable

import classad2

from negotiatord.pool.autoclusters import form_autoclusters, signature, significance
from negotiatord.pool.jobs import Job, prepare_job
from negotiatord.pool.problems import LeftOut
from negotiatord.pool.significance import JobRead, job_reads
from negotiatord.pool.slots import Slot, prepare_slot
from negotiatord.pool.snapshot import SlotTable, Snapshot
from negotiatord.settings import Settings

DUPLICATE = "appears more than once; the last ad is used"


@dataclass
class _SlotEntry:
    ad: classad2.ClassAd
    slot: Slot | LeftOut | None              # None: not a Machine ad
    reads: set[JobRead] | None = None        # job attributes its expressions read, once asked


@dataclass
class _JobEntry:
    ad: classad2.ClassAd
    job: Job | LeftOut | None                # None: not idle, or not a Job ad
    signatures: dict[tuple[str, ...], tuple] = field(default_factory=dict)   # by attribute names


class SnapshotBuilder:
    def __init__(self) -> None:
        self._settings: Settings | None = None
        self._slots: dict[int, _SlotEntry] = {}
        self._jobs: dict[int, _JobEntry] = {}

    def build(self, slot_ads: Iterable[classad2.ClassAd], job_ads: Iterable[classad2.ClassAd],
              settings: Settings) -> Snapshot:
        if settings is not self._settings:
            self._settings, self._slots = settings, {}
        problems: list[LeftOut] = []
        slot_entries = self._slot_entries(slot_ads, settings, problems)
        jobs, non_idle = self._idle_jobs(job_ads, problems)
        table = SlotTable.from_slots([entry.slot for entry in slot_entries])
        rank_exprs = [classad2.ExprTree(e) for e in (settings.pre_job_rank, settings.post_job_rank) if e]
        reads: set[JobRead] = set()
        for entry in slot_entries:
            if entry.slot.is_candidate:
                reads |= self._reads(entry, rank_exprs)
        autoclusters, significant = form_autoclusters(jobs, significance(reads, table.assets), self._signature)
        return Snapshot(
            table=table,
            jobs=tuple(jobs),
            autoclusters=tuple(autoclusters),
            significant_attributes=significant.names,
            problems=tuple(problems),
            non_idle_jobs=non_idle,
        )

    def _slot_entries(self, ads: Iterable[classad2.ClassAd], settings: Settings,
                      problems: list[LeftOut]) -> list[_SlotEntry]:
        kept: dict[int, _SlotEntry] = {}
        by_name: dict[str, _SlotEntry] = {}
        for ad in ads:
            entry = self._slots.get(id(ad))
            if entry is None or entry.ad is not ad:
                entry = _SlotEntry(ad, prepare_slot(ad, settings) if _is_a(ad, "Machine") else None)
            kept[id(ad)] = entry
            if entry.slot is None:
                continue
            if isinstance(entry.slot, LeftOut):
                problems.append(entry.slot)
                continue
            if entry.slot.name in by_name:
                problems.append(LeftOut("slot", entry.slot.name, "Name", DUPLICATE))
            by_name[entry.slot.name] = entry
        self._slots = kept
        return list(by_name.values())

    def _idle_jobs(self, ads: Iterable[classad2.ClassAd], problems: list[LeftOut]) -> tuple[list[Job], int]:
        kept: dict[int, _JobEntry] = {}
        by_id: dict[str, Job] = {}
        non_idle = 0
        position = 0
        for ad in ads:
            entry = self._jobs.get(id(ad))
            if entry is None or entry.ad is not ad:
                if not _is_a(ad, "Job"):
                    continue
                entry = _JobEntry(ad, prepare_job(ad, position + 1))
            position += 1
            if isinstance(entry.job, Job) and entry.job.queue_order[-1] != position:
                entry.job = replace(entry.job, queue_order=(*entry.job.queue_order[:-1], position))
            kept[id(ad)] = entry
            job = entry.job
            if job is None:
                non_idle += 1
            elif isinstance(job, LeftOut):
                problems.append(job)
            else:
                if job.id in by_id:
                    problems.append(LeftOut("job", job.id, "GlobalJobId", DUPLICATE))
                by_id[job.id] = job
        self._jobs = kept
        return list(by_id.values()), non_idle

    def _reads(self, entry: _SlotEntry, rank_exprs: list[classad2.ExprTree]) -> set[JobRead]:
        if entry.reads is None:
            slot = entry.slot
            entry.reads = set()
            for expr in (slot.requirements, *rank_exprs, *(slot.consumption or {}).values()):
                entry.reads |= job_reads(expr, slot.ad)
        return entry.reads

    def _signature(self, job: Job, names: tuple[str, ...]) -> tuple:
        known = self._jobs[id(job.ad)].signatures
        if names not in known:
            known[names] = signature(job, names)
        return known[names]


def _is_a(ad: classad2.ClassAd, my_type: str) -> bool:
    """Whether ``ad`` is of ``my_type`` (or says nothing): a ``condor_status -any`` dump also carries
    Submitter, Negotiator, Collector... ads, which a cycle does not negotiate over."""
    kind = ad.get("MyType")
    return not isinstance(kind, str) or kind.lower() == my_type.lower()
