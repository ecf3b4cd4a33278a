"""``negotiatord replay``: a workload trace run through the real negotiation cycle on a simulated
clock, written to ``--out`` as ``jobs.csv``, ``summary.json`` and ``report.html``
(:mod:`negotiatord.replay`), on a pool of ``--nodes`` alike nodes, the SWF header's, or the slots
of a ``--pool`` file (``condor_status -l``); with ``--policies``, once per p-slot loading policy into
``--out/<policy>/``, with a table comparing them on the terminal and in ``--out``.

Every output folder is made and checked before the replay starts, so an ``--out`` that cannot be
written is said at once, not after the work. Ctrl-C stops the replay: what it did is written,
marked partial (``"partial": true`` in ``summary.json``, a line atop ``report.html``); stopped
before the replay began or while writing, it says what was (not) written.

Exit status: 0; 2 when the input cannot be used (a config error, a trace that cannot be read,
named with its file and line, a pool that cannot be built, a pool file's bad ad, named likewise) or
the outputs cannot be written; argparse's 2 for arguments that cannot go together; 130 after Ctrl-C.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from dataclasses import replace
from functools import partial
from pathlib import Path

import structlog
from tqdm import tqdm

from negotiatord.replay import (
    NodeShape,
    PoolSpecError,
    ReplayResult,
    SimulatedPool,
    Trace,
    TraceError,
    TraceJob,
    alike_nodes,
    default_pool,
    fit_to_nodes,
    read_pool,
    read_trace,
    replay,
    write_outputs,
)
from negotiatord.replay.compare import comparison, text_table, write_comparison
from negotiatord.replay.pool import pool_that_fits
from negotiatord.replay.report import OutputError, prepare_outputs
from negotiatord.settings import ConfigError, PslotLoading, Settings, load_settings

EXIT_UNUSABLE = 2
EXIT_INTERRUPTED = 130       # 128 + SIGINT: what a shell reports for a command stopped by Ctrl-C
PROGRESS_EVERY_S = 10.0      # wall seconds between progress lines when stderr is not a terminal

log = structlog.get_logger("negotiatord.replay")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", type=Path, required=True, help="condor-style config file")
    parser.add_argument("--trace", type=Path, required=True,
                        help="workload trace: SWF (.swf, .swf.gz), CSV with named columns (.csv, .csv.gz: job, "
                             "submit, runtime, cpus, memory, user, group) or condor_history -l ads (any other name)")
    parser.add_argument("--pool", type=Path, action=_OnePool,
                        help="the pool's slots: a condor_status -l file (plain or .gz), one node per "
                             "partitionable or static slot, of its size (not with --nodes/--node)")
    parser.add_argument("--nodes", type=_positive, action=_OnePool,
                        help="number of nodes (default: the SWF header's MaxNodes/MaxProcs)")
    parser.add_argument("--node", action=_OnePool,
                        help='each node\'s p-slot, e.g. "Cpus=4, Memory=8192, Disk=100000000" '
                             "(Memory in MB, Disk in KB; with --nodes)")
    parser.add_argument("--out", type=Path, required=True,
                        help="directory for jobs.csv (one row per job), summary.json (the figures) and report.html "
                             "(a table of the figures and plots, one self-contained page); made if missing and "
                             "checked before the replay starts")
    parser.add_argument("--until", type=float, help="stop negotiating after this many simulated seconds")
    parser.add_argument("--jobs", type=_positive, help="replay only the trace's first N job records")
    parser.add_argument("--policies", type=_policies,
                        help="replay once per p-slot loading policy and compare them, e.g. "
                             f"{','.join(policy.value for policy in PslotLoading)} (outputs in --out/<policy>/)")


def run(args: argparse.Namespace) -> int:
    try:
        for folder in _output_folders(args):
            prepare_outputs(folder)
    except OutputError as error:
        print(f"negotiatord: --out {args.out}: {error}", file=sys.stderr)
        return EXIT_UNUSABLE
    try:
        settings = load_settings(args.config)
        if settings.negotiator_interval <= 0:
            raise ConfigError(f"{settings.source}: NEGOTIATOR_INTERVAL = {settings.negotiator_interval:g}: a replay "
                              f"runs a cycle every NEGOTIATOR_INTERVAL seconds of simulated time; give it a value > 0")
        trace = read_trace(args.trace, args.jobs)
        make_pool = _pool_maker(args, trace)
        pool = make_pool()
    except (ConfigError, TraceError, PoolSpecError, OSError) as error:
        print(f"negotiatord: {error}", file=sys.stderr)
        return EXIT_UNUSABLE
    except KeyboardInterrupt:
        print("negotiatord: interrupted before the replay began; nothing was written", file=sys.stderr)
        return EXIT_INTERRUPTED
    fitted = fit_to_nodes(trace.jobs, pool.shapes, trace.cleaning)
    warnings = _clamped_warning(trace, fitted, pool)
    trace.jobs = fitted
    log.info("replay", trace=str(args.trace), jobs=len(trace.jobs), nodes=pool.count, shapes=len(pool.shapes),
             cpus=pool.cpus, cleaning=trace.cleaning.document())
    for warning in warnings:
        log.warning(warning)
    if args.policies is None:
        return _replay_once(args, trace, settings, pool, args.out, warnings)
    results: dict[str, ReplayResult] = {}
    summaries: dict[str, dict] = {}
    for policy in args.policies:
        log.info("replay policy", policy=policy.value)
        folder = args.out / policy.value
        status = _replay_once(args, trace, replace(settings, pslot_loading=policy), make_pool(), folder, warnings,
                              results, summaries)
        if status == EXIT_INTERRUPTED:
            print(f"negotiatord: the policies after {policy.value} were not replayed and {args.out} holds no "
                  f"comparison", file=sys.stderr)
        if status:
            return status
    try:
        write_comparison(args.out, results, summaries, args.trace.name)
    except OSError as error:
        print(f"negotiatord: cannot write the replay's outputs: {error}", file=sys.stderr)
        return EXIT_UNUSABLE
    print(text_table(*comparison(summaries, wall=True)))
    return 0


def _replay_once(args: argparse.Namespace, trace: Trace, settings: Settings, pool: SimulatedPool, out: Path,
                 warnings: list[str], results: dict[str, ReplayResult] | None = None,
                 summaries: dict[str, dict] | None = None) -> int:
    """Replay ``trace`` on ``pool`` under ``settings`` into ``out``, its outputs carrying
    ``warnings``; file the result in ``results`` and the summary written to ``out`` in
    ``summaries``, by the settings' p-slot loading policy."""
    with _Progress(len(trace.jobs)) as progress:
        result = replay(trace, settings, pool, until=args.until, progress=progress)
    try:
        document = write_outputs(out, result, trace.cleaning, pool, args.trace.name, warnings)
    except OSError as error:
        print(f"negotiatord: cannot write the replay's outputs: {error}", file=sys.stderr)
        return EXIT_UNUSABLE
    except KeyboardInterrupt:
        print(f"negotiatord: interrupted while writing the replay's outputs; those in {out} are incomplete",
              file=sys.stderr)
        return EXIT_INTERRUPTED
    if result.interrupted:
        print(f"negotiatord: interrupted after {len(result.cycles):,} cycles "
              f"({(result.end - result.origin) / 3600:.2f} simulated hours); what was replayed is in {out}, "
              f"marked partial", file=sys.stderr)
        return EXIT_INTERRUPTED
    if results is not None:
        results[settings.pslot_loading.value] = result
    if summaries is not None:
        summaries[settings.pslot_loading.value] = document
    log.info("replayed", out=str(out), cycles=document["cycles"]["run"],
             matches=document["cycles"]["matches"], utilization=document["utilization"],
             wall_time_s=round(result.wall_time_s, 3),
             simulated_days_per_wall_hour=document["wall_time_s"]["simulated_days_per_wall_hour"])
    return 0


def _clamped_warning(trace: Trace, fitted: list[TraceJob], pool: SimulatedPool) -> list[str]:
    """A warning when most of the trace's jobs had to be clamped to fit ``pool``'s nodes (``fitted``
    holds a new job for each one clamped), naming a pool that fits; none otherwise."""
    clamped = sum(job is not original for job, original in zip(fitted, trace.jobs))
    if clamped * 2 <= len(fitted):
        return []
    shape = ""
    if len(pool.shapes) == 1:
        [node] = pool.shapes
        shape = f" ({node.cpus} cpu{'s' if node.cpus != 1 else ''}, {node.memory_mb} MB)"
    count, fits = pool_that_fits(trace.jobs, trace.max_procs, pool.cpus)
    disk = f", Disk={fits.disk_kb}" if fits.disk_kb != NodeShape.with_cpus(fits.cpus).disk_kb else ""
    return [f"{clamped:,} of {len(fitted):,} jobs were clamped to fit the pool's nodes{shape}: their waits measure "
            f"no contention. Give a pool that fits, e.g. --nodes {count} --node "
            f"\"Cpus={fits.cpus}, Memory={fits.memory_mb}{disk}\""]


def _output_folders(args: argparse.Namespace) -> list[Path]:
    """Where the replay writes: ``--out``, and with ``--policies`` a folder per policy in it."""
    if args.policies is None:
        return [args.out]
    return [args.out, *(args.out / policy.value for policy in args.policies)]


def _positive(text: str) -> int:
    value = int(text) if text.strip().isdigit() else 0
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a whole number > 0, got {text!r}")
    return value


def _policies(text: str) -> list[PslotLoading]:
    names = [name.strip().lower() for name in text.split(",") if name.strip()]
    choices = ", ".join(policy.value for policy in PslotLoading)
    try:
        policies = [PslotLoading(name) for name in names]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected p-slot loading policies among {choices}, got {text!r}") from None
    if not policies or len(set(policies)) != len(policies):
        raise argparse.ArgumentTypeError(f"expected distinct p-slot loading policies among {choices}, got {text!r}")
    return policies


def _pool_maker(args: argparse.Namespace, trace: Trace) -> Callable[[], SimulatedPool]:
    """What makes the pool afresh, for each replay: ``--pool``'s slots, ``--nodes`` of ``--node``,
    or the SWF header's nodes."""
    if args.pool is not None:
        return read_pool(args.pool).pool
    if args.nodes is None and args.node is None:
        nodes = alike_nodes(*default_pool(trace))
    elif args.nodes is None or args.node is None:
        raise PoolSpecError("give --nodes and --node together (or neither, for the SWF header's pool)")
    else:
        nodes = alike_nodes(args.nodes, NodeShape.parse(args.node))
    return partial(SimulatedPool, nodes)


class _OnePool(argparse.Action):
    """Stores its option's value; ``--pool`` beside ``--nodes`` or ``--node`` (in either order) is
    an argparse error naming both: a pool file describes the whole pool."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: object,
                 option_string: str | None = None) -> None:
        others = ("nodes", "node") if self.dest == "pool" else ("pool",)
        given = [f"--{other}" for other in others if getattr(namespace, other, None) is not None]
        if given:
            raise argparse.ArgumentError(self, f"not allowed with {' or '.join(given)}")
        setattr(namespace, self.dest, values)


class _Progress:
    """Jobs started so far: a tqdm bar on a terminal, else a log line every few wall seconds."""

    def __init__(self, total: int) -> None:
        self._bar = tqdm(total=total, unit="job", dynamic_ncols=True) if sys.stderr.isatty() else None
        self._total, self._shown, self._last = total, 0, time.monotonic()

    def __enter__(self) -> _Progress:
        return self

    def __exit__(self, *_: object) -> None:
        if self._bar is not None:
            self._bar.close()

    def __call__(self, simulated_s: float, started: int) -> None:
        if self._bar is not None:
            self._bar.update(started - self._shown)
            self._shown = started
            return
        if time.monotonic() - self._last >= PROGRESS_EVERY_S:
            self._last = time.monotonic()
            log.info("replay progress", simulated_s=simulated_s, started=started, jobs=self._total)
