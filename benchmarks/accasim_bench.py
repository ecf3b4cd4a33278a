"""KTH-SP2 replayed by negotiatord and by AccaSim, an independent HPC simulator, on the same jobs
and pool in the same run: CPU and wall time, jobs started, the CPU ratio negotiatord / AccaSim,
and whether both start every job at the same second.

AccaSim (benchmarks/requirements.txt) is event-driven: at each second where a job is submitted or
ends, it frees the ending jobs' nodes, then dispatches the queue. Its FirstInFirstOut dispatcher
(skip_jobs_on_allocation: a job that does not fit is passed over) with FirstFit is what a cycle
does for one submitter: jobs in the schedd's order (ClusterId: submission order), each that fits
matched. negotiatord runs config/cpu_centric.conf at NEGOTIATOR_INTERVAL = 1 s; its grid starts at
the first submission and KTH's times are whole seconds, so it too negotiates each job in the
second it is submitted and offers a node in the second it is freed. The schedules should agree.

Both get the jobs negotiatord's replay makes of the first --jobs records (read_trace's cleaning),
all of one submitter ("kth": the users' priorities would reorder a queue AccaSim keeps FIFO), on
the header's 100 one-cpu nodes. negotiatord, as HTCondor, runs a job on one machine and clamps a
wider job to one cpu (fit_to_nodes); AccaSim would spread it over nodes, so it gets the jobs as
clamped. So clamped, KTH's jobs seldom find the pool full: the printout says how many waited; if
none did, every start is the job's submission whatever the queue order. --one-node uses the
machine's 100 processors as one node instead (widths kept; AccaSim packs a job on that node):
jobs then wait, and the FIFO-with-skip order decides every start.

AccaSim runs in a child process (--accasim-python: another interpreter), away from negotiatord's,
on a plain SWF file and system config in a temporary directory that also takes its outputs. Its
CPU: the Simulator built and run (its reader, dispatcher and event loop), as negotiatord's is
replay() (after a short replay that loads numba's kernels, timed apart), each schedule left in
memory; the processes AccaSim forks to write its dispatching plan are counted apart. CPU time is
the figure to read; wall time counts what else the machine runs.

    python benchmarks/accasim_bench.py [--jobs N | --full] [--one-node] [--accasim-python PATH] [--show N]
"""

from __future__ import annotations

import argparse
import json
import math
import resource
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, replace
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from negotiatord.replay import NodeShape, TraceJob

ROOT = Path(__file__).resolve().parents[1]
TRACE = ROOT.parent / "shared" / "data" / "traces" / "KTH-SP2-1996-2.1-cln.swf.gz"
CONFIG = ROOT / "config" / "cpu_centric.conf"
REQUIREMENTS = Path(__file__).resolve().with_name("requirements.txt")
SUBMITTER = "kth"
ONE_NODE_CPUS = 100             # KTH's SP2: 100 processors
WARM_UP_JOBS = 200

WORKLOAD = "kth.swf"            # AccaSim names its outputs after the workload file: sched-kth.swf, ...
SYSTEM = "system.json"
RESULTS = "results"
RUN_FILE = "accasim_run.json"   # what the child reports: times, counts, or that accasim is missing
MISSING = 3                     # the child's exit status when accasim cannot be imported
# AccaSim's dispatching plan, one line per job as it ends: its id and its times in whole seconds
# (AccaSim's default prints them as local date-times)
SCHEDULE_OUTPUT = {
    "format": "{job_id};{queue_time};{start_time};{end_time}",
    "attributes": {
        "job_id": ("id", "str"),
        "queue_time": ("queued_time", "int"),
        "start_time": ("start_time", "int"),
        "end_time": ("end_time", "int"),
    },
}


@dataclass
class Outcome:
    """One simulator's run: its times, and each job's start (seconds on the trace's clock) by id."""

    cpu_s: float
    wall_s: float
    starts: dict[str, float]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=5000, help="the trace's first N job records (default 5000)")
    parser.add_argument("--full", action="store_true", help="the whole trace")
    parser.add_argument("--one-node", action="store_true",
                        help=f"one node of {ONE_NODE_CPUS} cpus instead of the header's one-cpu nodes")
    parser.add_argument("--accasim-python", type=Path, default=Path(sys.executable),
                        help="the interpreter that runs AccaSim (default: this one)")
    parser.add_argument("--show", type=int, default=5, help="how many differing jobs to print (default 5)")
    parser.add_argument("--accasim-child", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.accasim_child is not None:
        return accasim_child(args.accasim_child)
    return compare(args)


def compare(args: argparse.Namespace) -> int:
    from negotiatord.replay import NodeShape, SimulatedPool, default_pool, fit_to_nodes, read_trace, replay
    from negotiatord.replay.pool import CPUS_CLAMPED
    from negotiatord.settings import load_settings

    trace = read_trace(TRACE, None if args.full else args.jobs)
    users = len({job.user for job in trace.jobs})
    trace.jobs = [replace(job, user=SUBMITTER, group=None) for job in trace.jobs]
    count, shape = (1, NodeShape.with_cpus(ONE_NODE_CPUS)) if args.one_node else default_pool(trace)
    trace.jobs = fit_to_nodes(trace.jobs, [shape], trace.cleaning)
    settings = replace(load_settings(CONFIG), negotiator_interval=1.0)
    dropped = ", ".join(f"{rule} {n}" for rule, n in sorted(trace.cleaning.dropped.items())) or "none"
    print(f"{TRACE.name}, {trace.cleaning.records:,} records: {len(trace.jobs):,} jobs (dropped: {dropped}), "
          f"one submitter for the trace's {users} users")
    clamped = trace.cleaning.adjusted.get(CPUS_CLAMPED, 0)
    print(f"  pool: {count} node{'s' * (count > 1)} of {shape.cpus} cpu{'s' * (shape.cpus > 1)}, "
          f"{shape.memory_mb} MB; {clamped:,} jobs wider than a node clamped to it, for both simulators")

    with tempfile.TemporaryDirectory(prefix="accasim-bench-") as scratch:
        workdir = Path(scratch)
        write_workload(workdir / WORKLOAD, trace.jobs, trace.start_epoch)
        write_system(workdir / SYSTEM, count, shape, trace.start_epoch)
        accasim, report = run_accasim(args.accasim_python, workdir, trace.start_epoch)
        if accasim is None:
            return 2

    # numba's kernels loaded from their cache (compiled, on a checkout's first run) by a replay of
    # the first jobs: a cost once per process, timed apart
    warm_up = time.process_time()
    replay(replace(trace, jobs=trace.jobs[:WARM_UP_JOBS]), settings, SimulatedPool.alike(count, shape))
    warm_up = time.process_time() - warm_up
    cpu, wall = time.process_time(), time.perf_counter()
    result = replay(trace, settings, SimulatedPool.alike(count, shape))
    negotiatord = Outcome(time.process_time() - cpu, time.perf_counter() - wall,
                          {run.job.id: run.start for run in result.runs if run.start is not None})

    print(f"  negotiatord: NEGOTIATOR_INTERVAL {result.interval:g} s, {settings.pslot_loading.value}: "
          f"CPU {negotiatord.cpu_s:.2f} s, wall {negotiatord.wall_s:.2f} s; {len(negotiatord.starts):,} jobs "
          f"started; {len(result.cycles):,} cycles run, {result.skipped_cycles:,} skipped (quiet); before it, a "
          f"replay of the first {WARM_UP_JOBS} jobs to load the kernels: CPU {warm_up:.2f} s")
    writers = float(report["writers_cpu_s"])
    print(f"  AccaSim {report['version']} (FirstInFirstOut, skip_jobs_on_allocation; FirstFit): CPU "
          f"{accasim.cpu_s:.2f} s (the processes it forks to write its dispatching plan: {writers:.2f} s more; the "
          f"child process in all, interpreter and imports included: {report['child_cpu_s']:.2f} s), wall "
          f"{accasim.wall_s:.2f} s; {len(accasim.starts):,} jobs started, {report['loaded']:,} loaded, "
          f"{report['rejected']:,} rejected")
    print(f"  CPU ratio negotiatord / AccaSim: {negotiatord.cpu_s / accasim.cpu_s:.1f}x (target <= 3x); "
          f"{negotiatord.cpu_s / (accasim.cpu_s + writers):.1f}x with AccaSim's plan writers counted")
    print_agreement(trace.jobs, negotiatord, accasim, args.show)
    return 0


def write_workload(path: Path, jobs: list[TraceJob], start_epoch: int) -> None:
    """The jobs as an SWF file AccaSim's reader takes: id, submit, run time, processors (requested
    and allocated), memory in KB per processor (requested), status 1, user 1; the rest unknown.
    SWF's fields are whole numbers to AccaSim's parser."""
    lines = [f"; {len(jobs)} jobs of {TRACE.name} as negotiatord replays them", f"; UnixStartTime: {start_epoch}"]
    for job in jobs:
        if not (float(job.submit).is_integer() and float(job.runtime).is_integer()):
            raise SystemExit(f"job {job.id}: submit {job.submit} or run time {job.runtime} is not whole seconds")
        memory_kb = math.ceil(job.memory_mb * 1024 / job.cpus)
        lines.append(f"{job.id} {int(job.submit)} -1 {int(job.runtime)} {job.cpus} -1 -1 {job.cpus} -1 {memory_kb} "
                     f"1 1 -1 -1 -1 -1 -1 -1")
    path.write_text("\n".join(lines) + "\n")


def write_system(path: Path, count: int, shape: NodeShape, start_epoch: int) -> None:
    """AccaSim's system config: ``count`` nodes of ``shape``'s cores and memory (KB, as the SWF's),
    one core per SWF processor, its clock at the trace's UnixStartTime."""
    path.write_text(json.dumps({
        "groups": {"node": {"core": shape.cpus, "mem": shape.memory_mb * 1024}},
        "resources": {"node": count},
        "equivalence": {"processor": {"core": 1}},
        "start_time": start_epoch,
    }, indent=1))


def run_accasim(python: Path, workdir: Path, start_epoch: int) -> tuple[Outcome | None, dict[str, object]]:
    """AccaSim run by ``python`` in a child process on the files in ``workdir``: its outcome and
    the child's report; None, with a line printed, when it cannot run."""
    before = _children_cpu()
    try:
        status = subprocess.run([str(python), str(Path(__file__).resolve()), "--accasim-child", str(workdir)],
                                check=False).returncode
    except OSError as error:
        print(f"cannot run {python}: {error.strerror}", file=sys.stderr)
        return None, {}
    child_cpu = _children_cpu() - before
    report_file = workdir / RUN_FILE
    report = json.loads(report_file.read_text()) if report_file.exists() else {}
    if status == MISSING:
        print(f"AccaSim is not importable by {python} ({report.get('missing')}): install it with "
              f"{python} -m pip install -r {REQUIREMENTS.relative_to(ROOT)}", file=sys.stderr)
        return None, report
    if status != 0:
        print(f"AccaSim stopped with status {status} (its output is above)", file=sys.stderr)
        return None, report
    report["child_cpu_s"] = child_cpu
    starts = {}
    for line in (workdir / RESULTS / f"sched-{WORKLOAD}").read_text().splitlines():
        job_id, _, start, _ = line.split(";")
        starts[job_id] = int(start) - start_epoch
    return Outcome(float(report["simulation_cpu_s"]), float(report["wall_s"]), starts), report


def print_agreement(jobs: list[TraceJob], negotiatord: Outcome, accasim: Outcome, show: int) -> None:
    """How many jobs start at the same second in both, the first ``show`` that do not, and how many
    waited in each (a schedule where nothing waits agrees whatever the queue order)."""
    differing = [job for job in jobs if negotiatord.starts.get(job.id) != accasim.starts.get(job.id)]
    print(f"  start times: {len(jobs) - len(differing):,} of {len(jobs):,} jobs start at the same second in both")
    for job in differing[:show]:
        print(f"    job {job.id} ({job.cpus} cpu{'s' * (job.cpus > 1)}), submitted at {job.submit:.0f} s: "
              f"negotiatord {_when(negotiatord.starts.get(job.id))}, AccaSim {_when(accasim.starts.get(job.id))}")
    if len(differing) > show:
        print(f"    ... and {len(differing) - show:,} more")
    anyone_waited = False
    for name, outcome in (("negotiatord", negotiatord), ("AccaSim", accasim)):
        waits = [outcome.starts[job.id] - job.submit for job in jobs if job.id in outcome.starts]
        waited = sum(wait > 0 for wait in waits)
        anyone_waited = anyone_waited or waited > 0
        mean = sum(waits) / len(waits) if waits else 0.0
        print(f"  {name}: {waited:,} jobs waited, mean wait {mean:.1f} s, max {max(waits, default=0):.0f} s")
    if not anyone_waited:
        print("  no job waited in either: every start is the job's submission, whatever the queue's order "
              "(--one-node makes jobs wait)")


def _when(start: float | None) -> str:
    return "never started" if start is None else f"{start:.0f} s"


def accasim_child(workdir: Path) -> int:
    """Run AccaSim on ``workdir``'s workload and system config; write its times and counts to
    ``workdir``/RUN_FILE. Imports nothing of negotiatord: ``--accasim-python`` may lack it."""
    report_file = workdir / RUN_FILE
    try:
        accasim, simulator_class, scheduler_class, allocator_class = _import_accasim()
    except ImportError as error:
        report_file.write_text(json.dumps({"missing": str(error)}))
        return MISSING
    cpu, wall, writers = time.process_time(), time.perf_counter(), _children_cpu()
    dispatcher = scheduler_class.FirstInFirstOut(allocator_class.FirstFit(), skip_jobs_on_allocation=True)
    simulator = simulator_class.Simulator(
        str(workdir / WORKLOAD), str(workdir / SYSTEM), dispatcher, RESULTS_FOLDER_PATH=str(workdir / RESULTS),
        show_statistics=False, LOG_LEVEL="WARNING", SCHEDULE_OUTPUT=SCHEDULE_OUTPUT)
    simulator.start_simulation()
    report_file.write_text(json.dumps({
        "version": accasim.__version__,
        "simulation_cpu_s": time.process_time() - cpu,
        "writers_cpu_s": _children_cpu() - writers,   # AccaSim forks a process per batch of plan lines
        "wall_s": time.perf_counter() - wall,
        "loaded": simulator.loaded_jobs,
        "rejected": simulator.rejected_jobs,
    }))
    return 0


def _import_accasim() -> tuple[ModuleType, ModuleType, ModuleType, ModuleType]:
    """accasim and its simulator, scheduler and allocator modules. AccaSim imports
    ``collections.Mapping``, one of the aliases of ``collections.abc`` that Python 3.10 removed:
    they are put back first."""
    import collections
    import collections.abc

    for name in collections.abc.__all__:
        if not hasattr(collections, name):
            setattr(collections, name, getattr(collections.abc, name))
    import accasim
    from accasim.base import allocator_class, scheduler_class, simulator_class

    return accasim, simulator_class, scheduler_class, allocator_class


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


if __name__ == "__main__":
    sys.exit(main())
