"""Idle jobs as the negotiator sees them: identity, submitter, order, concurrency limits."""

from __future__ import annotations

from dataclasses import dataclass

import classad2

from negotiatord.classad.conversion import evaluate_number, evaluate_string
from negotiatord.pool.problems import LeftOut

IDLE = 1


@dataclass(frozen=True, slots=True)        # 255k of them: no per-job __dict__
class Job:
    id: str                                   # GlobalJobId, else ClusterId.ProcId
    submitter: str
    prio: int                                 # JobPrio
    queue_order: tuple[int, int, int]         # (ClusterId, ProcId, position in input)
    concurrency_limits: tuple[tuple[str, float], ...]

    @property
    def order(self) -> tuple[int, int, int, int]:
        """The schedd's order within a submitter (``prio_compar``): higher JobPrio first, then
        ClusterId and ProcId; input position breaks ties between schedds."""
        return (-self.prio, *self.queue_order)


def job_id(ad: classad2.ClassAd) -> str | None:
    global_id = evaluate_string(ad, "GlobalJobId")
    if global_id:
        return global_id
    cluster, proc = evaluate_number(ad, "ClusterId"), evaluate_number(ad, "ProcId")
    if cluster is None or proc is None:
        return None
    return f"{int(cluster)}.{int(proc)}"


def submitter_of(ad: classad2.ClassAd) -> str | None:
    """The accounting customer an ad (job or claimed slot) is charged to.

    HTCondor's submitter name: ``AccountingGroup`` when set (``group_a.alice`` gains the user's
    ``@domain`` if it has none), else ``User`` (``alice@domain``), else ``Owner``.
    """
    user = evaluate_string(ad, "User")
    group = evaluate_string(ad, "AccountingGroup")
    if group:
        if "@" in group or not user or "@" not in user:
            return group
        return f"{group}@{user.split('@', 1)[1]}"
    return user or evaluate_string(ad, "Owner")


def parse_concurrency_limits(text: str) -> tuple[tuple[str, float], ...]:
    """``"License_A, db:2"`` -> ``(("license_a", 1.0), ("db", 2.0))``.

    As HTCondor's ParseConcurrencyLimit: the string is lower-cased and split on commas and
    whitespace; each entry is ``name[:increment]``, and an increment that is missing, not a number
    or not positive counts as 1.
    """
    limits = []
    for entry in text.lower().replace(",", " ").split():
        name, _, increment = entry.partition(":")
        try:
            amount = float(increment)
        except ValueError:
            amount = 1.0
        if name:
            limits.append((name, amount if amount > 0 else 1.0))
    return tuple(limits)


def prepare_job(ad: classad2.ClassAd, position: int) -> Job | LeftOut | None:
    """Read one job ad; None for jobs that are not idle (running jobs count through their slots)."""
    identity = job_id(ad)
    if identity is None:
        return LeftOut("job", f"#{position}", "GlobalJobId", "no GlobalJobId and no ClusterId/ProcId")
    if evaluate_number(ad, "JobStatus") != IDLE:
        return None
    submitter = submitter_of(ad)
    if submitter is None:
        return LeftOut("job", identity, "User", "no AccountingGroup, User or Owner to charge")
    limits_text = evaluate_string(ad, "ConcurrencyLimits")
    return Job(
        id=identity,
        submitter=submitter,
        prio=int(evaluate_number(ad, "JobPrio") or 0),
        queue_order=(
            int(evaluate_number(ad, "ClusterId") or 0),
            int(evaluate_number(ad, "ProcId") or 0),
            position,
        ),
        concurrency_limits=parse_concurrency_limits(limits_text) if limits_text else (),
    )


def with_identity(job: Job, proc: int, global_id: str, position: int) -> Job:
    """``job`` for an ad that is ``job``'s but for its ``ProcId`` and ``GlobalJobId`` (literal
    ``proc`` and ``global_id``), at ``position``: what :func:`prepare_job` reads of that ad, where
    nothing else in it reads them."""
    return Job(global_id, job.submitter, job.prio, (job.queue_order[0], proc, position), job.concurrency_limits)
