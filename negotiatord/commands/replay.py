"""``negotiatord replay``: a workload trace run through the real negotiation cycle on a simulated
clock, written to ``--out`` as ``jobs.csv`` and ``summary.json`` (:mod:`negotiatord.replay`).

Exit status: 0; 2 when the input cannot be used (a config error, a trace that cannot be read,
named with its file and line, a pool that cannot be built) or the outputs cannot be written.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import structlog
from tqdm import tqdm

from negotiatord.replay import (
    NodeShape,
    PoolSpecError,
    SimulatedPool,
    Trace,
    TraceError,
    default_pool,
    fit_to_node,
    read_trace,
    replay,
    write_outputs,
)
from negotiatord.settings import ConfigError, load_settings

EXIT_UNUSABLE = 2
PROGRESS_EVERY_S = 10.0      # wall seconds between progress lines when stderr is not a terminal

log = structlog.get_logger("negotiatord.replay")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", type=Path, required=True, help="condor-style config file")
    parser.add_argument("--trace", type=Path, required=True,
                        help="workload trace: SWF (.swf, .swf.gz) or condor_history -l ads")
    parser.add_argument("--nodes", type=_positive, help="number of nodes (default: the SWF header's MaxNodes/MaxProcs)")
    parser.add_argument("--node", help='each node\'s p-slot, e.g. "Cpus=4, Memory=8192, Disk=100000000" '
                                       "(Memory in MB, Disk in KB; with --nodes)")
    parser.add_argument("--out", type=Path, required=True, help="directory for jobs.csv and summary.json")
    parser.add_argument("--until", type=float, help="stop negotiating after this many simulated seconds")
    parser.add_argument("--jobs", type=_positive, help="replay only the trace's first N job records")


def run(args: argparse.Namespace) -> int:
    try:
        settings = load_settings(args.config)
        trace = read_trace(args.trace, args.jobs)
        count, shape = _pool(args, trace)
        pool = SimulatedPool(count, shape)
    except (ConfigError, TraceError, PoolSpecError, OSError) as error:
        print(f"negotiatord: {error}", file=sys.stderr)
        return EXIT_UNUSABLE
    trace.jobs = fit_to_node(trace.jobs, shape, trace.cleaning)
    log.info("replay", trace=str(args.trace), jobs=len(trace.jobs), nodes=count, node=str(shape),
             cleaning=trace.cleaning.document())
    with _Progress(len(trace.jobs)) as progress:
        result = replay(trace, settings, pool, until=args.until, progress=progress)
    try:
        document = write_outputs(args.out, result, trace.cleaning, pool, args.trace.name)
    except OSError as error:
        print(f"negotiatord: cannot write the replay's outputs: {error}", file=sys.stderr)
        return EXIT_UNUSABLE
    log.info("replayed", out=str(args.out), cycles=document["cycles"]["run"],
             matches=document["cycles"]["matches"], utilization=document["utilization"],
             wall_time_s=round(result.wall_time_s, 3),
             simulated_days_per_wall_hour=document["wall_time_s"]["simulated_days_per_wall_hour"])
    return 0


def _positive(text: str) -> int:
    value = int(text) if text.strip().isdigit() else 0
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a whole number > 0, got {text!r}")
    return value


def _pool(args: argparse.Namespace, trace: Trace) -> tuple[int, NodeShape]:
    if args.nodes is None and args.node is None:
        return default_pool(trace)
    if args.nodes is None or args.node is None:
        raise PoolSpecError("give --nodes and --node together (or neither, for the SWF header's pool)")
    return args.nodes, NodeShape.parse(args.node)


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
