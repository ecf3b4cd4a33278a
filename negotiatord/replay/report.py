"""What a replay writes: ``jobs.csv``, one row per job, ``summary.json``, the figures, and
``report.html``, plots of them (:mod:`negotiatord.replay.html`).

Both are functions of the trace, the config and the pool alone, so the same inputs give the same
bytes; wall-clock figures are kept apart, under ``wall_time_s`` in the summary.

Definitions:

* wait = start - submit; turnaround = finish - submit; stretch = turnaround / run time (Batsim's);
  the waits, bounded slowdown, makespan, throughput and per-user figures are defined, with their
  sources, in :mod:`negotiatord.replay.figures`.
* utilization: Cpus the matches consumed, times the seconds they held them within the replayed
  period (first submission to the last finish, or ``--until``), over the pool's Cpus times that
  period. A run that was preempted held its Cpus too: its Cpus times its seconds (HTCondor's
  badput, the work lost to the restart) count, and are also given alone.
* preemptions: per rule, as the cycles reported them; the jobs preempted at least once; the
  badput in Cpu seconds. A preempted job's row in ``jobs.csv`` is its last run, the one that
  finished (its wait includes the runs it lost).
* Jain's fairness index over groups with a quota > 0, after each cycle: with x = the group's
  usage (its subtree's, in slot-weight units) / its quota, J = (sum x)^2 / (n * sum x^2), 1 when
  every group has the same share of its quota, 1/n when one group has it all; undefined (null)
  after a cycle where no such group uses anything. Its mean weighs each cycle's value by the
  simulated time it held, up to the next cycle or the end.
* share against quota: each such group's x after each cycle, and its mean weighed the same way.
* a burst: at least ``BURST_MIN_JOBS`` jobs whose first cycle (the first grid point at or after
  their submission) is the same. Its cycles-to-first-start: grid cycles from that one to the
  first that started one of its jobs (a burst arriving at a full pool waits for slots to free).
  Its cycles-to-fill: how many grid cycles in a row, from that first start, started at least one
  of its jobs: the cycles the negotiator took to place what it could of the burst before a cycle
  placed none of it. A burst none of whose jobs started has neither (null), and is counted as
  never placed, not scored 0.
* stranded cpus: whole Cpus left in p-slots whose Memory left is below the trace's smallest
  RequestMemory, so that no job of the trace can use them (after each cycle; mean weighed by time).
* the period: from the first submission to the last job's finish (the cycle that notices it
  comes up to an interval later and is not counted), or to ``--until``, or to the last cycle of an
  interrupted replay; the time-weighted means stop there too.
* long replays: the series (each a step function: a cycle's value holds until the next cycle),
  the per-cycle lists and the bursts keep every point up to ``SERIES_POINTS`` of them; beyond,
  ``SERIES_POINTS`` + 1 times evenly spaced over the period, ``sampled_every_s`` apart, each with
  the value in force then (a per-cycle list: the cycle in force, each once). Sampling every k-th
  cycle instead would crowd the points where cycles are dense and skip long quiet stretches. The
  totals, means and percentiles are over every cycle.
"""

from __future__ import annotations

import bisect
import csv
import json
import math
import tempfile
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from negotiatord.replay.figures import (
    headline_rows,
    job_figures,
    makespan,
    throughput_per_hour,
    user_figures,
    user_fairness,
)
from negotiatord.replay.html import report_page
from negotiatord.replay.pool import SimulatedPool
from negotiatord.replay.simulate import CycleRecord, JobRun, ReplayResult
from negotiatord.replay.trace import Cleaning
from negotiatord.settings.groups import ROOT_GROUP

BURST_MIN_JOBS = 2
SERIES_POINTS = 2000
JOB_COLUMNS = ("job", "submit", "start", "finish", "wait", "turnaround", "stretch", "submitter", "group", "slot",
               "cost", "cycles_waited")
JOBS_FILE, SUMMARY_FILE, REPORT_FILE = "jobs.csv", "summary.json", "report.html"

T = TypeVar("T")


class OutputError(Exception):
    """A folder the replay's outputs cannot be written to; the message names the path."""


def prepare_outputs(out: Path) -> None:
    """Make ``out`` if missing and check that ``jobs.csv``, ``summary.json`` and ``report.html`` can
    be written there, before a replay spends its time: a folder that cannot be made or written to,
    or an output's name already taken by something other than a file, is an ``OutputError``."""
    try:
        out.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=out):
            pass
    except OSError as error:
        raise OutputError(f"{out}: cannot write the replay's outputs there: {error.strerror or error}") from None
    for name in (JOBS_FILE, SUMMARY_FILE, REPORT_FILE):
        path = out / name
        if path.exists() and not path.is_file():
            raise OutputError(f"{path}: cannot write the replay's {name} there: not a file")


def write_outputs(out: Path, result: ReplayResult, cleaning: Cleaning, pool: SimulatedPool,
                  trace_name: str, warnings: Sequence[str] = ()) -> dict[str, Any]:
    """Write ``jobs.csv``, ``summary.json`` and ``report.html`` into ``out`` (made if missing),
    both of the latter with ``warnings`` about the replay up front; returns the summary."""
    out.mkdir(parents=True, exist_ok=True)
    with (out / JOBS_FILE).open("w", newline="") as file:
        writer = csv.writer(file, lineterminator="\n")
        writer.writerow(JOB_COLUMNS)
        writer.writerows(job_rows(result))
    document = summary(result, cleaning, pool, trace_name, warnings)
    (out / SUMMARY_FILE).write_text(json.dumps(document, indent=1) + "\n")
    (out / REPORT_FILE).write_text(report_page(result, f"negotiatord replay of {trace_name}",
                                               headline_rows(document), document["users"], warnings))
    return document


def job_rows(result: ReplayResult) -> Iterable[list[str]]:
    """One row per job, in submission order; times, wait and the rest empty for a job that never
    started."""
    for run in result.runs:
        start, finish, start_cycle = run.start, run.finish, run.start_cycle
        if start is None or finish is None or start_cycle is None:
            yield [run.job.id, _number(run.job.submit), "", "", "", "", "", run.submitter, _group(run), "", "", ""]
            continue
        turnaround = finish - run.job.submit
        yield [run.job.id, _number(run.job.submit), _number(start), _number(finish),
               _number(start - run.job.submit), _number(turnaround), _number(turnaround / run.job.runtime),
               run.submitter, _group(run), run.slot or "", _number(run.cost),
               str(cycles_waited(run.job.submit, start_cycle, result))]


def cycles_waited(submit: float, start_cycle: int, result: ReplayResult) -> int:
    """Cycles (run or skipped) from the first at or after the job's submission to the one that
    matched it (``start_cycle``)."""
    return start_cycle - math.ceil((submit - result.origin) / result.interval)


def summary(result: ReplayResult, cleaning: Cleaning, pool: SimulatedPool, trace_name: str,
            warnings: Sequence[str] = ()) -> dict[str, Any]:
    by_group: dict[str, list[JobRun]] = defaultdict(list)
    for run in result.runs:
        by_group[_group(run)].append(run)
    users = user_figures(result.runs)
    period = result.end - result.origin
    simulated_days = period / 86400
    wall = result.wall_time_s
    return {
        "trace": trace_name,
        "partial": result.interrupted,
        "warnings": list(warnings),
        "pool": pool.document(),
        "negotiator_interval_s": result.interval,
        "period": {"start": result.origin, "end": result.end, "seconds": period, "start_epoch": result.start_epoch},
        "cleaning": cleaning.document(),
        "jobs": {
            "kept": len(result.runs),
            "submitted": result.submitted,
            "started": sum(run.start is not None for run in result.runs),
            "finished_by_end": sum(run.finish is not None and run.finish <= result.end for run in result.runs),
            "never_started": sum(run.start is None for run in result.runs[:result.submitted]),
            "not_submitted": len(result.runs) - result.submitted,
        },
        "all": job_figures(result.runs),
        "makespan_s": makespan(result),
        "throughput_jobs_per_hour": throughput_per_hour(result),
        "groups": {name: job_figures(runs) for name, runs in sorted(by_group.items())},
        "users": users,
        "user_fairness": user_fairness(users),
        "utilization": utilization(result),
        "preemptions": {
            "by_rule": result.preemptions_by_rule(),
            "jobs_preempted": sum(run.preempted > 0 for run in result.runs),
            "badput_cpu_s": sum(run.badput_cpu_s for run in result.runs),
        },
        "jain": jain_summary(result.cycles, result.end),
        "share_of_quota": share_summary(result.cycles, result.end),
        "bursts": burst_summary(result),
        "stranded_cpus": stranded_summary(result.cycles, result.end),
        "cycles": {
            "run": len(result.cycles),
            "skipped": result.skipped_cycles,
            "matches": sum(cycle.matches for cycle in result.cycles),
            "sampled_every_s": _sampling_step(_times(result.cycles), result.end),
            "per_cycle": [_cycle_document(cycle, result.start_epoch)
                          for cycle in _in_force(result.cycles, _times(result.cycles), result.end)],
        },
        "wall_time_s": {
            "replay": wall,
            "simulated_days_per_wall_hour": simulated_days / (wall / 3600) if wall > 0 else None,
            "cycle_duration": _spread([cycle.duration_s for cycle in result.cycles]),
            "cycle_snapshot": _spread([cycle.snapshot_s for cycle in result.cycles]),
            "sampled_every_s": _sampling_step(_times(result.cycles), result.end),
            "LastNegotiationCycleDuration": _series([(cycle.time, cycle.duration_s) for cycle in result.cycles],
                                                    result.end),
        },
    }


def utilization(result: ReplayResult) -> float | None:
    period = result.end - result.origin
    if period <= 0:
        return None
    spans = ((run.cpus, run.start, run.finish) for run in result.runs)
    busy = sum(cpus * max(0.0, min(finish, result.end) - max(start, result.origin))
               for cpus, start, finish in spans if start is not None and finish is not None)
    return (busy + sum(run.badput_cpu_s for run in result.runs)) / (result.pool_cpus * period)


def jain_summary(cycles: Sequence[CycleRecord], end: float) -> dict[str, object]:
    series = [(cycle.time, cycle.jain) for cycle in cycles]
    groups = sorted({name for cycle in cycles for name in cycle.group_load})
    return {"groups": groups, "mean": time_weighted_mean(series, end),
            "sampled_every_s": _sampling_step(_times(cycles), end), "series": _series(series, end)}


def share_summary(cycles: Sequence[CycleRecord], end: float) -> dict[str, object]:
    """Each group with a quota: its usage / quota after each cycle, and the time-weighted mean."""
    groups = sorted({name for cycle in cycles for name in cycle.group_load})
    document: dict[str, object] = {}
    for name in groups:
        series = [(cycle.time, cycle.group_load.get(name, 0.0)) for cycle in cycles]
        document[name] = {"mean": time_weighted_mean(series, end), "series": _series(series, end)}
    return {"sampled_every_s": _sampling_step(_times(cycles), end), "groups": document}


def stranded_summary(cycles: Sequence[CycleRecord], end: float) -> dict[str, object]:
    series = [(cycle.time, cycle.stranded_cpus) for cycle in cycles]
    return {"mean": time_weighted_mean(series, end), "max": max((value for _, value in series), default=None),
            "sampled_every_s": _sampling_step(_times(cycles), end), "series": _series(series, end)}


def burst_summary(result: ReplayResult) -> dict[str, object]:
    """Cycles-to-first-start and cycles-to-fill of every burst of arrivals (see the module's
    definitions)."""
    arrivals: dict[int, list[JobRun]] = defaultdict(list)
    for run in result.runs[:result.submitted]:
        arrivals[math.ceil((run.job.submit - result.origin) / result.interval)].append(run)
    bursts: list[dict[str, Any]] = []
    for first, runs in sorted(arrivals.items()):
        if len(runs) < BURST_MIN_JOBS:
            continue
        starting = Counter(run.start_cycle for run in runs if run.start_cycle is not None)
        burst: dict[str, Any] = {"time": result.origin + first * result.interval, "jobs": len(runs), "placed": 0,
                                 "cycles_to_first_start": None, "cycles_to_fill": None}
        if starting:
            opening = min(starting)
            fill = 0
            while starting[opening + fill]:
                fill += 1
            burst.update(placed=sum(starting[opening + step] for step in range(fill)),
                         cycles_to_first_start=opening - first, cycles_to_fill=fill)
        bursts.append(burst)
    fills = [burst["cycles_to_fill"] for burst in bursts if burst["cycles_to_fill"] is not None]
    end, times = result.end, [burst["time"] for burst in bursts]
    return {"min_jobs": BURST_MIN_JOBS, "count": len(bursts),
            "never_placed": sum(burst["cycles_to_fill"] is None for burst in bursts),
            "cycles_to_first_start": _spread([burst["cycles_to_first_start"] for burst in bursts
                                              if burst["cycles_to_first_start"] is not None]),
            "cycles_to_fill": _spread(fills),
            "sampled_every_s": _sampling_step(times, end),
            "series": _in_force(bursts, times, end)}


def time_weighted_mean(series: Sequence[tuple[float, float | None]], end: float) -> float | None:
    """The mean of a step function up to ``end``: each value holds until the next point, the last
    until ``end``; points without a value (None), and what lies past ``end``, are left out."""
    weighted = total = 0.0
    for (at, value), following in zip(series, [*(at for at, _ in series[1:]), end]):
        held = max(0.0, min(following, end) - at)
        if value is not None:
            weighted += value * held
            total += held
    return weighted / total if total > 0 else None


def _sampling_step(times: Sequence[float], end: float) -> float | None:
    """Seconds between sampled points of what happened at ``times`` when they are more than
    ``SERIES_POINTS``; None when every one is kept."""
    if len(times) <= SERIES_POINTS:
        return None
    return (end - times[0]) / SERIES_POINTS


def _times(cycles: Sequence[CycleRecord]) -> list[float]:
    return [cycle.time for cycle in cycles]


def _sample_times(start: float, end: float) -> list[float]:
    step = (end - start) / SERIES_POINTS
    return [start + index * step for index in range(SERIES_POINTS + 1)]


def _series(series: Sequence[tuple[float, T]], end: float) -> list[list[Any]]:
    """``[[time, value], ...]`` of a step function: every point, or the value in force at
    ``SERIES_POINTS`` + 1 evenly spaced times."""
    if len(series) <= SERIES_POINTS:
        return [[at, value] for at, value in series]
    times = [at for at, _ in series]
    return [[at, series[bisect.bisect_right(times, at) - 1][1]] for at in _sample_times(series[0][0], end)]


def _in_force(items: Sequence[T], times: Sequence[float], end: float) -> list[T]:
    """``items`` (at ``times``, in order): all of them, or each one in force at one of
    ``SERIES_POINTS`` + 1 evenly spaced times, once."""
    if len(items) <= SERIES_POINTS:
        return list(items)
    indexes = dict.fromkeys(bisect.bisect_right(times, at) - 1 for at in _sample_times(times[0], end))
    return [items[index] for index in indexes]


def _spread(values: Sequence[float]) -> dict[str, float | None]:
    """Mean, median, 95th percentile and maximum (numpy's linear interpolation); None when empty."""
    if not values:
        return {"mean": None, "p50": None, "p95": None, "max": None}
    array = np.asarray(values, dtype=np.float64)
    return {"mean": float(array.mean()), "p50": float(np.percentile(array, 50)),
            "p95": float(np.percentile(array, 95)), "max": float(array.max())}


def _cycle_document(cycle: CycleRecord, start_epoch: int) -> dict[str, object]:
    return {
        "LastNegotiationCycleTime": int(start_epoch + cycle.time),
        "LastNegotiationCycleMatches": cycle.matches,
        "LastNegotiationCycleTotalSlots": cycle.total_slots,
        "LastNegotiationCycleCandidateSlots": cycle.candidate_slots,
        "LastNegotiationCycleNumIdleJobs": cycle.idle_jobs,
        "LastNegotiationCycleActiveSubmitterCount": cycle.submitters,
        "LastNegotiationCyclePieSpins": cycle.pie_spins,
        "BusyCpus": cycle.busy_cpus,
        "QueuedJobs": cycle.queued,
        "GroupLoad": cycle.group_load,
        "StrandedCpus": cycle.stranded_cpus,
        "Preemptions": sum(cycle.preemptions.values()),
    }


def _group(run: JobRun) -> str:
    return run.job.group or ROOT_GROUP


def _number(value: float | None) -> str:
    """Whole numbers without a fraction, others to 6 decimals: the same text on every platform."""
    if value is None:
        return ""
    return str(int(value)) if float(value).is_integer() else f"{value:.6f}".rstrip("0")
