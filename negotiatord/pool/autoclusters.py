"""Autoclusters: jobs whose significant attributes are identical are matched as one request.

A job attribute is significant when an expression the negotiator evaluates can read it: a
candidate slot's Requirements, Consumption<Res> or the pre/post job ranks (see
:mod:`negotiatord.pool.significance` for how branches guarded by job-side conditions are
handled), the job's own Requirements/Rank and the attributes they read, its Request<Res> and
ConcurrencyLimits, and whatever an expression-valued significant attribute reads in turn
(``RequestMemory = ifThenElse(MemoryUsage =!= undefined, ...)``).

Jobs are grouped first by the attributes read unconditionally, then each group is split by the
guarded attributes its jobs actually reach, until what a group's first job reaches is shared by all.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Sequence

import classad2

from negotiatord.pool.jobs import Job
from negotiatord.pool.significance import ANY_ATTRIBUTE, JobRead, job_reads
from negotiatord.pool.slots import Slot

JOB_SIDE_ATTRIBUTES = ("Requirements", "Rank", "ConcurrencyLimits")


@dataclass(frozen=True)
class Autocluster:
    id: int
    submitter: str
    jobs: tuple[Job, ...]           # in the submitter's job order

    @property
    def ad(self) -> classad2.ClassAd:
        """The representative job ad: every job here evaluates identically against every slot."""
        return self.jobs[0].ad


@dataclass(frozen=True)
class Significance:
    unconditional: tuple[str, ...]          # read whatever the job's values
    guarded: tuple[JobRead, ...]            # read only when job-side guards are open

    @property
    def names(self) -> tuple[str, ...]:
        guarded = {r.attribute for r in self.guarded}
        return tuple(sorted({*self.unconditional, *guarded}, key=str.lower))


def slot_side_reads(slots: Iterable[Slot], rank_exprs: Sequence[classad2.ExprTree]) -> set[JobRead]:
    """Job attributes candidate slots' expressions can read, with their job-side guards."""
    reads: set[JobRead] = set()
    for slot in slots:
        for expr in (slot.requirements, *rank_exprs, *(slot.consumption or {}).values()):
            reads |= job_reads(expr, slot.ad)
    return reads


def significance(slot_reads: set[JobRead], assets: Iterable[str], jobs: Sequence[Job]) -> Significance:
    """Unconditional attributes (slot reads without guards, job-side attributes, requests, and
    what expression-valued ones read), and the guarded reads not already among them."""
    wanted = {r.attribute.lower(): r.attribute for r in slot_reads if not r.guards}
    for name in (*JOB_SIDE_ATTRIBUTES, *(f"Request{a}" for a in assets)):
        wanted.setdefault(name.lower(), name)
    frontier = list(wanted.values())
    seen_texts: set[str] = set()
    while frontier:
        additions: list[str] = []
        for job in jobs:
            for ref in _references(job.ad, frontier, seen_texts):
                if ref.lower() not in wanted:
                    wanted[ref.lower()] = ref
                    additions.append(ref)
        frontier = additions
    guarded = tuple(sorted((r for r in slot_reads if r.guards and r.attribute.lower() not in wanted),
                           key=lambda r: (r.attribute.lower(), str(r.guards))))
    return Significance(tuple(sorted(wanted.values(), key=str.lower)), guarded)


def form_autoclusters(jobs: Sequence[Job], significant: Significance) -> list[Autocluster]:
    """Group each submitter's jobs by the text of their significant attributes.

    Autocluster ids follow first appearance in job order, so the same input gives the same ids.
    """
    groups: dict[tuple, list[Job]] = {}
    for job in sorted(jobs, key=lambda j: (j.submitter, j.order)):
        key = (job.submitter, *(_text(job.ad, name) for name in significant.unconditional))
        groups.setdefault(key, []).append(job)
    known = {name.lower() for name in significant.unconditional}
    clusters = [c for group in groups.values() for c in _refine(group, significant.guarded, known)]
    clusters.sort(key=lambda c: (c[0].submitter, c[0].order))
    return [Autocluster(id=i, submitter=c[0].submitter, jobs=tuple(c)) for i, c in enumerate(clusters)]


def _refine(group: list[Job], guarded: tuple[JobRead, ...], known: set[str]) -> list[list[Job]]:
    """Split ``group`` (jobs equal in every ``known`` attribute) by the guarded attributes its first
    job reaches, until nothing new is reached; a job that may read any attribute stands alone."""
    first = group[0].ad
    live = {r.attribute for r in guarded if r.attribute.lower() not in known and r.is_live_for(first)}
    if ANY_ATTRIBUTE in live:
        return [[job] for job in group]
    reached = {*live, *_references(first, live, set())}
    new = sorted((name for name in reached if name.lower() not in known), key=str.lower)
    if not new:
        return [group]
    parts: dict[tuple, list[Job]] = {}
    for job in group:
        parts.setdefault(tuple(_text(job.ad, name) for name in new), []).append(job)
    known = known | {name.lower() for name in new}
    return [cluster for part in parts.values() for cluster in _refine(part, guarded, known)]


def _references(ad: classad2.ClassAd, names: Iterable[str], seen_texts: set[str]) -> list[str]:
    """Attributes of ``ad`` that the expression values of ``names`` read (skipping seen texts)."""
    found = []
    for name in names:
        value = ad.get(name)
        if not isinstance(value, classad2.ExprTree):
            continue
        text = str(value)
        if text in seen_texts:
            continue
        seen_texts.add(text)
        found += [ref for ref in ad.internalRefs(value) if ref]   # a literal's refs come back as ['']
    return found


def _text(ad: classad2.ClassAd, name: str) -> str | None:
    return str(ad.lookup(name)) if name in ad else None
