"""The scheduling figures users of HPC simulators read first, as the literature defines them.

* wait = start - submit, over the jobs that started: mean, median (``p50``), 95th percentile and
  maximum (percentiles by numpy's linear interpolation).
* bounded slowdown = max(1, (wait + run time) / max(run time, 10 s)): Feitelson, Rudolph,
  Schwiegelshohn, Sevcik and Wong, "Theory and Practice in Parallel Job Scheduling" (JSSPP 1997,
  LNCS 1291), whose 10 s bound keeps very short jobs from dominating the mean; its mean over the
  jobs that started.
* makespan: from the first job's submission to the last job's finish, as Batsim's
  ``schedule.csv`` gives it ("the time that elapses from the submission time of the first job to
  the finish time of the last job").
* throughput: jobs finished per hour of the makespan.
* per user (each submitter): the same wait and bounded slowdown figures.
* per-user fairness: Jain's fairness index (Jain, Chiu and Hawe, "A Quantitative Measure of
  Fairness and Discrimination for Resource Allocation in Shared Computer Systems", DEC-TR-301,
  1984), J = (sum x)^2 / (n * sum x^2), over the users' mean bounded slowdowns x: 1 when every
  user's jobs were slowed alike, lower the more their slowdowns differ. Users with no job
  started are left out.

``HEADLINE`` names these figures where ``summary.json`` holds them, with what each one is: the
table atop ``report.html`` and the comparison of p-slot loading policies show them.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from negotiatord.replay.simulate import JobRun, ReplayResult

SLOWDOWN_BOUND_S = 10.0
HOUR = 3600.0

# (label, where in summary.json, what it is)
HEADLINE: tuple[tuple[str, tuple[str, ...], str], ...] = (
    ("jobs submitted", ("jobs", "submitted"), "kept jobs submitted within the period"),
    ("jobs finished", ("jobs", "finished_by_end"), "by the end of the period"),
    ("jobs never started", ("jobs", "never_started"), "submitted, never matched"),
    ("wait mean s", ("all", "wait_mean_s"), "start - submit, over the jobs that started"),
    ("wait median s", ("all", "wait_p50_s"), ""),
    ("wait p95 s", ("all", "wait_p95_s"), ""),
    ("wait max s", ("all", "wait_max_s"), ""),
    ("bounded slowdown mean", ("all", "bounded_slowdown_mean"),
     "max(1, (wait + run) / max(run, 10 s)), Feitelson et al. 1997"),
    ("makespan s", ("makespan_s",), "first submission to last finish, as Batsim's"),
    ("throughput jobs/h", ("throughput_jobs_per_hour",), "jobs finished per hour of the makespan"),
    ("utilization", ("utilization",), "cpu-seconds held over the pool's, in the period"),
    ("user fairness", ("user_fairness", "jain"),
     "Jain's index over the users' mean bounded slowdowns (1: alike), Jain et al. 1984"),
    ("users", ("user_fairness", "users"), "submitters with a job started"),
    ("group fairness mean", ("jain", "mean"), "Jain's index over the groups' usage / quota, time-weighted"),
)


def job_figures(runs: Sequence[JobRun]) -> dict[str, object]:
    """Waits (mean and percentiles) and the mean bounded slowdown of the jobs of ``runs`` that
    started."""
    started = [(run.start - run.job.submit, run.job.runtime) for run in runs if run.start is not None]
    waits = np.array([wait for wait, _ in started], dtype=np.float64)
    slowdowns = [bounded_slowdown(wait, runtime) for wait, runtime in started]
    return {
        "jobs": len(runs),
        "started": len(started),
        "wait_mean_s": float(waits.mean()) if len(started) else None,
        "wait_p50_s": float(np.percentile(waits, 50)) if len(started) else None,
        "wait_p95_s": float(np.percentile(waits, 95)) if len(started) else None,
        "wait_max_s": float(waits.max()) if len(started) else None,
        "bounded_slowdown_mean": float(np.mean(slowdowns)) if slowdowns else None,
    }


def bounded_slowdown(wait: float, runtime: float) -> float:
    return max(1.0, (wait + runtime) / max(runtime, SLOWDOWN_BOUND_S))


def makespan(result: ReplayResult) -> float | None:
    """First submission to the last finish by the end of the period; None when no job finished."""
    finishes = [run.finish for run in result.runs if run.finish is not None and run.finish <= result.end]
    return max(finishes) - result.origin if finishes else None


def throughput_per_hour(result: ReplayResult) -> float | None:
    span = makespan(result)
    finished = sum(run.finish is not None and run.finish <= result.end for run in result.runs)
    return finished / (span / HOUR) if span else None


def user_figures(runs: Sequence[JobRun]) -> dict[str, dict[str, object]]:
    """:func:`job_figures` per submitter, by name."""
    by_user: dict[str, list[JobRun]] = defaultdict(list)
    for run in runs:
        by_user[run.submitter].append(run)
    return {name: job_figures(user_runs) for name, user_runs in sorted(by_user.items())}


def user_fairness(users: Mapping[str, Mapping[str, Any]]) -> dict[str, object]:
    """Jain's index over the mean bounded slowdowns of ``users`` (:func:`user_figures`) that
    started a job."""
    slowdowns = [figures["bounded_slowdown_mean"] for figures in users.values()
                 if figures["bounded_slowdown_mean"] is not None]
    squares = sum(x * x for x in slowdowns)
    jain = sum(slowdowns) ** 2 / (len(slowdowns) * squares) if squares > 0 else None
    return {"jain": jain, "users": len(slowdowns), "of": "bounded_slowdown_mean"}


def headline_rows(summary: Mapping[str, Any]) -> list[tuple[str, str, str]]:
    """(label, value as text, what it is) of each ``HEADLINE`` figure in ``summary``."""
    return [(label, cell_text(value_at(summary, path)), meaning) for label, path, meaning in HEADLINE]


def value_at(document: Mapping[str, Any], path: tuple[str, ...]) -> Any:
    value: Any = document
    for key in path:
        value = value[key]
    return value


def cell_text(value: object) -> str:
    """A figure as a table shows it: 3 decimals below 100, none above, ``-`` for none."""
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.3f}" if abs(value) < 100 else f"{value:.0f}"
    return str(value)
