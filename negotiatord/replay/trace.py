"""Workload traces read into jobs a replay can submit, with every dropped or adjusted job counted.

Two inputs:

* The Parallel Workloads Archive's Standard Workload Format (``.swf``, ``.swf.gz``): one job per
  line, 18 whitespace-separated numbers, ``-1`` for unknown, ``;`` header comments (``MaxNodes``,
  ``MaxProcs``, ``UnixStartTime``). Only the run time (field 4) says how long a job holds its
  slot; the requested time (field 9) may be wall or CPU time depending on the log, and is not used.
* ``condor_history -l`` dumps, read with :func:`negotiatord.ads.read_ads`.
* CSV with named columns (``job, submit, runtime, cpus, memory, user, group``), for traces from
  elsewhere.

A trace is raw material: cancelled jobs that never ran, jobs with no run time, missing requests.
Each rule that drops or adjusts a job is counted in a :class:`Cleaning` report, which the replay's
summary carries, so that every job of the input is accounted for.
"""

from __future__ import annotations

import csv
import gzip
import math
import zlib
from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path

import classad2

from negotiatord.ads import AdFormatError, read_ads
from negotiatord.classad.conversion import evaluate_number, evaluate_string

SWF_FIELDS = 18
SWF_CANCELLED = 5                      # field 11, status: cancelled
DEFAULT_MEMORY_MB_PER_CPU = 1024       # RequestMemory of a job whose trace says nothing of memory
DEFAULT_DISK_KB = 1024                 # RequestDisk of every SWF job (SWF has no disk field)
UNKNOWN_USER = "unknown"
CSV_REQUIRED = ("submit", "runtime")

# Rules that drop a job.
CANCELLED_NEVER_RAN = "cancelled_never_ran"     # SWF status 5 with run time <= 0
MISSING_SUBMIT = "missing_submit_time"
MISSING_RUNTIME = "missing_run_time"            # -1, or a history ad that never started
ZERO_RUNTIME = "zero_run_time"
# Rules that adjust a job and keep it.
CPUS_FROM_ALLOCATED = "cpus_from_allocated_processors"
CPUS_DEFAULTED = "cpus_defaulted_to_1"
MEMORY_FROM_USED = "memory_from_used_memory"
MEMORY_DEFAULTED = "memory_defaulted"
USER_UNKNOWN = "user_unknown"


class TraceError(Exception):
    """A trace that cannot be read; the message names the file and, where there is one, the line."""


@dataclass(frozen=True)
class TraceJob:
    """One job as the replay submits it: when, for how long, what it asks for, who is charged."""

    id: str
    submit: float          # seconds since the trace's first submission
    runtime: float         # seconds the job holds its slot once started
    cpus: int
    memory_mb: int
    disk_kb: int
    user: str              # submitter is "<user>@trace"
    group: str | None      # accounting group, e.g. "group_g3"; None for none


@dataclass
class Cleaning:
    """How many input records became jobs, and how many each rule dropped or adjusted."""

    records: int = 0
    dropped: Counter[str] = field(default_factory=Counter)
    adjusted: Counter[str] = field(default_factory=Counter)
    memory_default_mb_per_cpu: int = DEFAULT_MEMORY_MB_PER_CPU

    @property
    def kept(self) -> int:
        return self.records - sum(self.dropped.values())

    def document(self) -> dict[str, object]:
        return {
            "records": self.records,
            "kept": self.kept,
            "dropped": dict(sorted(self.dropped.items())),
            "adjusted": dict(sorted(self.adjusted.items())),
            "memory_default_mb_per_cpu": self.memory_default_mb_per_cpu,
        }


@dataclass
class Trace:
    jobs: list[TraceJob]                # in submission order (ties: input order)
    cleaning: Cleaning
    start_epoch: int                    # the epoch second of submit time 0, for the cycle's time()
    max_nodes: int | None = None        # SWF header MaxNodes
    max_procs: int | None = None        # SWF header MaxProcs


def read_trace(path: Path, limit: int | None = None) -> Trace:
    """The first ``limit`` job records (all if None) of the trace at ``path``: SWF when its name
    ends in ``.swf`` or ``.swf.gz``, CSV for ``.csv`` or ``.csv.gz``, else ``condor_history -l`` ads."""
    path = Path(path)
    name = path.name.lower()
    if name.endswith((".swf", ".swf.gz")):
        return read_swf(path, limit)
    if name.endswith((".csv", ".csv.gz")):
        return read_csv(path, limit)
    return read_history(path, limit)


def read_csv(path: Path, limit: int | None = None) -> Trace:
    """A CSV file with a header naming its columns: ``job``, ``submit`` and ``runtime`` (seconds),
    and optionally ``cpus``, ``memory`` (MB), ``user``, ``group`` (the accounting group's name as
    the config declares it); other columns are ignored. An empty cell or -1 is unknown."""
    lines = _text_lines(path, "CSV")
    rows = csv.reader(lines)
    header = [column.strip().lower() for column in next(rows, [])]
    missing = [column for column in CSV_REQUIRED if column not in header]
    if missing:
        raise TraceError(f"{path}:1: the header has no column {', '.join(missing)} (found: {', '.join(header)})")
    cleaning = Cleaning()
    jobs: list[TraceJob] = []
    for row in rows:
        if not any(cell.strip() for cell in row):
            continue
        if limit is not None and cleaning.records >= limit:
            break
        cells = dict(zip(header, (cell.strip() for cell in row)))
        number = rows.line_num
        cleaning.records += 1
        job = _cleaned(cleaning, cells.get("job") or str(number), _csv_number(cells, "submit", path, number),
                       _csv_number(cells, "runtime", path, number), _csv_number(cells, "cpus", path, number),
                       _csv_number(cells, "memory", path, number), DEFAULT_DISK_KB,
                       _csv_text(cells, "user"), _csv_text(cells, "group"))
        if job is not None:
            jobs.append(job)
    return _trace(jobs, cleaning, 0)


def read_swf(path: Path, limit: int | None = None) -> Trace:
    """Standard Workload Format, as defined by the Parallel Workloads Archive."""
    header: dict[str, str] = {}
    cleaning = Cleaning()
    jobs: list[TraceJob] = []
    for number, line in enumerate(_text_lines(path, "SWF"), start=1):
        text = line.strip()
        if not text:
            continue
        if text.startswith(";"):
            key, colon, value = text[1:].partition(":")
            if colon and key.strip() and not jobs and not cleaning.records:
                header.setdefault(key.strip(), value.strip())
            continue
        if limit is not None and cleaning.records >= limit:
            break
        fields = text.split()
        if len(fields) != SWF_FIELDS:
            raise TraceError(f"{path}:{number}: expected {SWF_FIELDS} fields, found {len(fields)}")
        try:
            values = [float(value) for value in fields]
        except ValueError:
            raise TraceError(f"{path}:{number}: a field is not a number: {text[:80]!r}") from None
        cleaning.records += 1
        job = _swf_job(values, cleaning)
        if job is not None:
            jobs.append(job)
    return _trace(jobs, cleaning, int(_header_number(header, "UnixStartTime", path) or 0),
                  _header_number(header, "MaxNodes", path), _header_number(header, "MaxProcs", path))


def read_history(path: Path, limit: int | None = None) -> Trace:
    """``condor_history -l`` ads: submitted at ``QDate``, run for ``RemoteWallClockTime`` (every
    attempt's wall time summed), else ``CompletionDate - JobStartDate``."""
    try:
        batch = read_ads(path)
    except (AdFormatError, OSError) as error:
        raise TraceError(str(error)) from None
    if batch.problems:
        raise TraceError(str(batch.problems[0]))
    cleaning = Cleaning()
    jobs: list[TraceJob] = []
    for ad, line in zip(batch.ads, batch.lines):
        if limit is not None and cleaning.records >= limit:
            break
        cleaning.records += 1
        job = _history_job(ad, path, line, cleaning)
        if job is not None:
            jobs.append(job)
    start = min((job.submit for job in jobs), default=0.0)
    return _trace([replace(job, submit=job.submit - start) for job in jobs], cleaning, int(start))


def _trace(jobs: list[TraceJob], cleaning: Cleaning, start_epoch: int, max_nodes: float | None = None,
           max_procs: float | None = None) -> Trace:
    jobs.sort(key=lambda job: job.submit)       # stable: input order among equal submit times
    return Trace(jobs, cleaning, start_epoch, _positive_int(max_nodes), _positive_int(max_procs))


def _csv_number(cells: dict[str, str], column: str, path: Path, line: int) -> float | None:
    text = cells.get(column, "")
    if text in ("", "-1"):
        return None
    try:
        return float(text)
    except ValueError:
        raise TraceError(f"{path}:{line}: {column} is not a number: {text!r}") from None


def _csv_text(cells: dict[str, str], column: str) -> str | None:
    text = cells.get(column, "")
    return None if text in ("", "-1") else text


def _text_lines(path: Path, kind: str) -> list[str]:
    try:
        data = path.read_bytes()
        if data[:2] == b"\x1f\x8b":
            data = gzip.decompress(data)
    except (OSError, EOFError, zlib.error) as error:
        raise TraceError(f"{path}: cannot read: {error}") from None
    try:
        return data.decode("ascii").splitlines()
    except UnicodeDecodeError as error:
        line = data[:error.start].count(b"\n") + 1
        raise TraceError(f"{path}:{line}: a byte that is not ASCII (expected {kind} text)") from None


def _swf_job(values: list[float], cleaning: Cleaning) -> TraceJob | None:
    (number, submit, _wait, runtime, allocated, _cpu, used_memory, requested, _req_time, requested_memory,
     status, user, group) = values[:13]
    if status == SWF_CANCELLED and runtime <= 0:
        cleaning.dropped[CANCELLED_NEVER_RAN] += 1
        return None
    adjusted = []
    cpus = requested if requested > 0 else allocated if allocated > 0 else None
    if requested <= 0 and cpus is not None:
        adjusted.append(CPUS_FROM_ALLOCATED)
    per_cpu_kb = requested_memory if requested_memory > 0 else used_memory if used_memory > 0 else None
    if requested_memory <= 0 and per_cpu_kb is not None:
        adjusted.append(MEMORY_FROM_USED)
    memory = None if per_cpu_kb is None else per_cpu_kb * (cpus or 1) / 1024
    job = _cleaned(cleaning, str(int(number)), submit, runtime, cpus, memory, DEFAULT_DISK_KB,
                   f"u{int(user)}" if user >= 0 else None, f"group_g{int(group)}" if group >= 0 else None)
    if job is not None:
        cleaning.adjusted.update(adjusted)
    return job


def _history_job(ad: classad2.ClassAd, path: Path, line: int, cleaning: Cleaning) -> TraceJob | None:
    """The job, submitted at its ``QDate`` (made relative by the caller)."""
    runtime = evaluate_number(ad, "RemoteWallClockTime")
    if runtime is None:
        started, completed = evaluate_number(ad, "JobStartDate"), evaluate_number(ad, "CompletionDate")
        runtime = completed - started if started and completed else None
    user = evaluate_string(ad, "Owner") or (evaluate_string(ad, "User") or "").partition("@")[0]
    group = evaluate_string(ad, "AcctGroup") or _group_part(evaluate_string(ad, "AccountingGroup"))
    identity = evaluate_string(ad, "GlobalJobId") or _cluster_proc(ad) or f"{path.name}:{line}"
    return _cleaned(cleaning, identity, evaluate_number(ad, "QDate"), runtime, evaluate_number(ad, "RequestCpus"),
                    evaluate_number(ad, "RequestMemory"), evaluate_number(ad, "RequestDisk") or DEFAULT_DISK_KB,
                    user, group)


def _cleaned(cleaning: Cleaning, identity: str, submit: float | None, runtime: float | None, cpus: float | None,
             memory_mb: float | None, disk_kb: float, user: str | None, group: str | None) -> TraceJob | None:
    """The job these values describe, after the rules every trace format shares (None or a
    negative number: unknown), each drop or default counted; None if dropped."""
    if submit is None or submit < 0:
        cleaning.dropped[MISSING_SUBMIT] += 1
        return None
    if runtime is None or runtime < 0:
        cleaning.dropped[MISSING_RUNTIME] += 1
        return None
    if runtime == 0:
        cleaning.dropped[ZERO_RUNTIME] += 1
        return None
    if cpus is None or cpus <= 0:
        cpus = 1
        cleaning.adjusted[CPUS_DEFAULTED] += 1
    if memory_mb is None or memory_mb <= 0:
        memory_mb = DEFAULT_MEMORY_MB_PER_CPU * math.ceil(cpus)
        cleaning.adjusted[MEMORY_DEFAULTED] += 1
    if not user:
        user = UNKNOWN_USER
        cleaning.adjusted[USER_UNKNOWN] += 1
    return TraceJob(identity, submit, runtime, math.ceil(cpus), math.ceil(memory_mb), math.ceil(disk_kb), user,
                    group or None)


def _group_part(accounting_group: str | None) -> str | None:
    """``group_a.b.alice`` -> ``group_a.b``: HTCondor's AccountingGroup ends with the user."""
    if not accounting_group or "." not in accounting_group:
        return None
    return accounting_group.rpartition(".")[0]


def _cluster_proc(ad: classad2.ClassAd) -> str | None:
    cluster, proc = evaluate_number(ad, "ClusterId"), evaluate_number(ad, "ProcId")
    return None if cluster is None or proc is None else f"{int(cluster)}.{int(proc)}"


def _header_number(header: dict[str, str], key: str, path: Path) -> float | None:
    if key not in header:
        return None
    try:
        return float(header[key].split()[0])
    except (ValueError, IndexError):
        raise TraceError(f"{path}: header {key}: not a number: {header[key]!r}") from None


def _positive_int(value: float | None) -> int | None:
    return int(value) if value is not None and value > 0 else None
