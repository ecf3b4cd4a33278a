"""Autoclusters: jobs whose significant attributes are identical are matched as one request.

An attribute is significant when a slot-side expression the negotiator evaluates (Requirements,
Consumption<Res>, the pre/post job ranks) or the job's own Requirements/Rank can read it. Slot
expressions are first flattened against their own ad, so references in branches the slot's own values
already decide (``MY.GPUs > 0 ? TARGET.RequestGPUs : 0`` on a GPU-less slot) do not count; what is
left after flattening can only read the job (``TARGET.x``, or a bare ``x`` the slot does not define).
Attributes an expression-valued significant attribute reads (``RequestMemory = MemoryUsage ...``) are
significant too.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Sequence

import classad2

from negotiatord.pool.jobs import Job
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


def slot_side_references(slots: Iterable[Slot], rank_exprs: Sequence[classad2.ExprTree]) -> set[str]:
    """Job attributes that candidate slots' flattened expressions can read."""
    seen: set[str] = set()
    names: set[str] = set()
    for slot in slots:
        exprs = [slot.requirements, *rank_exprs, *(slot.consumption or {}).values()]
        for expr in exprs:
            if expr is None:
                continue
            flat = slot.ad.flatten(expr)
            if not isinstance(flat, classad2.ExprTree):
                continue  # flattened to a value: reads nothing from the job
            text = str(flat)
            if text in seen:
                continue
            seen.add(text)
            names.update(_target_name(ref) for ref in slot.ad.externalRefs(flat))
    names.discard("")
    return names


def significant_attributes(slot_references: set[str], assets: Iterable[str], jobs: Sequence[Job]) -> tuple[str, ...]:
    """The full significant set: slot-side references, job-side expressions, requests, and closure."""
    wanted = {n.lower(): n for n in slot_references}
    for name in (*JOB_SIDE_ATTRIBUTES, *(f"Request{a}" for a in assets)):
        wanted.setdefault(name.lower(), name)
    frontier = list(wanted.values())
    seen_texts: set[str] = set()
    while frontier:
        additions: list[str] = []
        for job in jobs:
            for name in frontier:
                expr = job.ad.lookup(name) if name in job.ad else None
                if expr is None:
                    continue
                text = str(expr)
                if text in seen_texts:
                    continue
                seen_texts.add(text)
                for ref in job.ad.internalRefs(expr):
                    if ref and ref.lower() not in wanted:  # a literal's refs come back as ['']
                        wanted[ref.lower()] = ref
                        additions.append(ref)
        frontier = additions
    return tuple(sorted(wanted.values(), key=str.lower))


def form_autoclusters(jobs: Sequence[Job], significant: Sequence[str]) -> list[Autocluster]:
    """Group each submitter's jobs by the text of their significant attributes.

    Autocluster ids follow first appearance in job order, so the same input gives the same ids.
    """
    members: dict[tuple, list[Job]] = {}
    for job in sorted(jobs, key=lambda j: (j.submitter, j.order)):
        key = (job.submitter, *(_text(job.ad, name) for name in significant))
        members.setdefault(key, []).append(job)
    return [
        Autocluster(id=index, submitter=group[0].submitter, jobs=tuple(group))
        for index, group in enumerate(members.values())
    ]


def _text(ad: classad2.ClassAd, name: str) -> str | None:
    return str(ad.lookup(name)) if name in ad else None


def _target_name(ref: str) -> str:
    scope, dot, attr = ref.partition(".")
    if not dot:
        return ref
    if scope.lower() == "target":
        return attr
    return ""  # MY.x the slot lacks, or a nested record: not a job attribute
