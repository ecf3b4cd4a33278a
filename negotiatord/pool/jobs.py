"""Idle jobs as the negotiator sees them: identity, submitter, order, concurrency limits."""

from __future__ import annotations

from dataclasses import dataclass

import classad2

from negotiatord.classad.conversion import evaluate_number, evaluate_string
from negotiatord.pool.problems import LeftOut

IDLE = 1

# PreJobPrio1, PreJobPrio2, PostJobPrio1, PostJobPrio2 of a job that sets none (the schedd reads a
# missing one as 0: qmgmt.cpp get_job_prio); one tuple shared by all such jobs
NO_DAG_PRIOS = (0, 0, 0, 0)
_DAG_PRIOS = ("PreJobPrio1", "PreJobPrio2", "PostJobPrio1", "PostJobPrio2")


@dataclass(frozen=True, slots=True)        # 255k of them: no per-job __dict__
class Job:
    id: str                                   # GlobalJobId, else ClusterId.ProcId
    submitter: str
    prio: int                                 # JobPrio
    queue_order: tuple[int, int, int]         # (ClusterId, ProcId, position in input)
    concurrency_limits: tuple[tuple[str, float], ...]
    schedd: str = ""                          # the schedd GlobalJobId names ("" without one)
    dag_prios: tuple[int, int, int, int] = NO_DAG_PRIOS   # PreJobPrio1/2, PostJobPrio1/2

    def at(self, position: int) -> Job:
        """This job at another position in the input (an earlier ad left or joined). Made
        directly, not by dataclasses.replace: a daemon moves most of its queue's jobs a cycle."""
        cluster, proc, _ = self.queue_order
        return Job(self.id, self.submitter, self.prio, (cluster, proc, position), self.concurrency_limits,
                   self.schedd, self.dag_prios)

    @property
    def order(self) -> tuple[int, ...]:
        """The schedd's order within a submitter (qmgmt.cpp ``prio_compar``): higher PreJobPrio1,
        PreJobPrio2, JobPrio, PostJobPrio1, PostJobPrio2 first, then ClusterId and ProcId; input
        position breaks ties between schedds."""
        pre1, pre2, post1, post2 = self.dag_prios
        return (-pre1, -pre2, -self.prio, -post1, -post2, *self.queue_order)


def schedd_of(global_job_id: str) -> str:
    """The schedd's name in a GlobalJobId (``<schedd>#<cluster>.<proc>#<qdate>``)."""
    return global_job_id.partition("#")[0] if "#" in global_job_id else ""


def _dag_prios(ad: classad2.ClassAd) -> tuple[int, int, int, int]:
    """The job's PreJobPrio1/2 and PostJobPrio1/2, read as JobPrio is; 0 where missing or not a
    number (the schedd's ``LookupInteger``)."""
    if not any(name in ad for name in _DAG_PRIOS):
        return NO_DAG_PRIOS
    pre1, pre2, post1, post2 = (int(evaluate_number(ad, name) or 0) for name in _DAG_PRIOS)
    return (pre1, pre2, post1, post2)


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
        schedd=schedd_of(identity),
        dag_prios=_dag_prios(ad),
    )


def with_identity(job: Job, proc: int, global_id: str, position: int) -> Job:
    """``job`` for an ad that is ``job``'s but for its ``ProcId`` and ``GlobalJobId`` (literal
    ``proc`` and ``global_id``), at ``position``: what :func:`prepare_job` reads of that ad, where
    nothing else in it reads them."""
    return Job(global_id, job.submitter, job.prio, (job.queue_order[0], proc, position), job.concurrency_limits,
               schedd_of(global_id), job.dag_prios)
