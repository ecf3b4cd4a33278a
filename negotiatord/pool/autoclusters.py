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
from typing import Callable, Iterable, Sequence

import classad2

from negotiatord.pool.jobs import Job
from negotiatord.pool.significance import ANY_ATTRIBUTE, JobRead, own_references

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


def significance(slot_reads: set[JobRead], assets: Iterable[str]) -> Significance:
    """Unconditional attributes (slot reads without guards, job-side attributes, requests) and
    the guarded reads not already among them. :func:`form_autoclusters` adds what
    expression-valued attributes read in turn."""
    wanted = {r.attribute.lower(): r.attribute for r in slot_reads if not r.guards}
    for name in (*JOB_SIDE_ATTRIBUTES, *(f"Request{a}" for a in assets)):
        wanted.setdefault(name.lower(), name)
    guarded = tuple(sorted((r for r in slot_reads if r.guards and r.attribute.lower() not in wanted),
                           key=lambda r: (r.attribute.lower(), str(r.guards))))
    return Significance(tuple(sorted(wanted.values(), key=str.lower)), guarded)


SignatureOf = Callable[[Job, tuple[str, ...]], tuple]


def signature(job: Job, names: tuple[str, ...]) -> tuple:
    """Hashable stand-ins for the values of ``names`` in ``job``: each literal with its ClassAd type
    (1, 1.0 and true differ), each expression as its canonical text."""
    return tuple(_stand_in(job.ad.get(name)) for name in names)


def _stand_in(value: object) -> object:
    if value is None or isinstance(value, (bool, int, float, classad2.Value)):
        return (type(value).__name__, value)
    if isinstance(value, str):
        return ("string", value)
    return str(value)


def form_autoclusters(jobs: Sequence[Job], significant: Significance,
                      signature_of: SignatureOf = signature) -> tuple[list[Autocluster], Significance]:
    """Group each submitter's jobs by their significant attributes' values.

    Returns the autoclusters (ids follow first appearance in job order, so the same input gives
    the same ids) and the significance grown by what expression-valued attributes read.
    ``signature_of`` may memoise :func:`signature` across cycles.
    """
    ordered = sorted(jobs, key=lambda j: (j.submitter, j.order))
    names: list[str] = []
    signatures: list[tuple] = [() for _ in ordered]
    known: set[str] = set()
    pending = tuple(significant.unconditional)
    while pending:                      # closure: RequestMemory = f(MemoryUsage) reads MemoryUsage
        known |= {name.lower() for name in pending}
        names += pending
        added: dict[str, str] = {}
        for index, job in enumerate(ordered):
            values = signature_of(job, pending)
            signatures[index] += values
            for value in values:
                if isinstance(value, str):
                    for ref in own_references(value):
                        if ref.lower() not in known:
                            added.setdefault(ref.lower(), ref)
        pending = tuple(added.values())
    groups: dict[tuple, list[Job]] = {}
    for job, values in zip(ordered, signatures):
        groups.setdefault((job.submitter, *values), []).append(job)
    clusters = [c for group in groups.values() for c in _refine(group, significant.guarded, known, signature_of)]
    clusters.sort(key=lambda c: (c[0].submitter, c[0].order))
    autoclusters = [Autocluster(id=i, submitter=c[0].submitter, jobs=tuple(c)) for i, c in enumerate(clusters)]
    return autoclusters, Significance(tuple(sorted(names, key=str.lower)), significant.guarded)


def _refine(group: list[Job], guarded: tuple[JobRead, ...], known: set[str],
            signature_of: SignatureOf) -> list[list[Job]]:
    """Split ``group`` (jobs equal in every ``known`` attribute) by the guarded attributes its first
    job reaches, until nothing new is reached; a job that may read any attribute stands alone."""
    first = group[0].ad
    live = {r.attribute for r in guarded if r.attribute.lower() not in known and r.is_live_for(first)}
    if ANY_ATTRIBUTE in live:
        return [[job] for job in group]
    reached = set(live)
    for name in live:
        value = first.get(name)
        if isinstance(value, classad2.ExprTree):
            reached |= own_references(str(value))
    new = tuple(sorted((name for name in reached if name.lower() not in known), key=str.lower))
    if not new:
        return [group]
    parts: dict[tuple, list[Job]] = {}
    for job in group:
        parts.setdefault(signature_of(job, new), []).append(job)
    known = known | {name.lower() for name in new}
    return [cluster for part in parts.values() for cluster in _refine(part, guarded, known, signature_of)]
