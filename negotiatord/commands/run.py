"""``negotiatord run``: the daemon, in the foreground (systemd runs it the same way).

Exit status: 0 after a clean stop (SIGTERM, SIGINT); 2 when it cannot start (config error, state
directory, database, token or TLS file unusable, accountant and match log disagreeing, another
daemon on the state directory, address in use, a preload file that cannot be read, holds no ads,
or holds none of its kind: swapped ``--preload-slots``/``--preload-jobs``), each said in one line
naming the option or knob and the file.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sys
from pathlib import Path

from negotiatord.accountant import AccountantStoreError
from negotiatord.ads import AdBatch, AdFormatError, read_ads
from negotiatord.commands.input_hints import AdTally, kind_hint
from negotiatord.feed.kinds import AdKind
from negotiatord.publish.matchlog import MatchLogError
from negotiatord.service.daemon import Daemon, DaemonClock, TlsError, cycle_thread_alive
from negotiatord.service.paths import StateDirError
from negotiatord.service.state_check import START_OVER, StateMismatch
from negotiatord.service.state_dir import StateDirInUse
from negotiatord.service.token import TokenError
from negotiatord.settings import ConfigError, load_settings

EXIT_CANNOT_START = 2
# How long a thread may hold the GIL before another waiting one gets it (CPython's default: 5 ms).
# The cycle thread computes for seconds; at 2 ms the event loop waits less than half as long for
# its turn, so status requests stay fast during a cycle, and the cycle is no slower
# (benchmarks/load_bench.py).
SWITCH_INTERVAL_S = 0.002


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", type=Path, required=True, help="condor-style config file")
    for kind in AdKind:
        parser.add_argument(f"--preload-{kind.value}", type=Path, metavar="FILE",
                            help=f"{kind.my_type} ads filed at start-up; they never expire")
    parser.add_argument(START_OVER, action="store_true",
                        help="start even though the accountant and the match log disagree (one was lost or "
                             "restored from an older copy): cycle ids and sequence numbers go on after the "
                             "highest either holds")
    parser.add_argument("--now", type=float, metavar="EPOCH",
                        help="start the daemon's clock at EPOCH (for replaying captured ads and for "
                             "tests; default: the real time)")


def run(args: argparse.Namespace) -> int:
    try:
        settings = load_settings(args.config)
        preload = {kind: _preloaded(kind, path) for kind in AdKind
                   if (path := getattr(args, f"preload_{kind.value}")) is not None}
        daemon = Daemon(args.config.absolute(), settings, DaemonClock(args.now), preload,
                        args.accept_state_mismatch)
    except (ConfigError, AdFormatError, StateDirError, TokenError, TlsError, AccountantStoreError, MatchLogError,
            StateMismatch, StateDirInUse, OSError, ValueError) as error:
        print(f"negotiatord: {error}", file=sys.stderr)
        return EXIT_CANNOT_START
    sys.setswitchinterval(SWITCH_INTERVAL_S)
    try:
        asyncio.run(daemon.serve())
    except OSError as error:  # the address is in use, the TLS files cannot be read, ...
        print(f"negotiatord: cannot serve: {error}", file=sys.stderr)
        return EXIT_CANNOT_START
    except (AccountantStoreError, MatchLogError) as error:   # recovering at start-up failed
        print(f"negotiatord: {error}", file=sys.stderr)
        return EXIT_CANNOT_START
    finally:
        # The loop has restored the default handlers; a repeated stop signal during interpreter
        # shutdown must not turn a clean stop into death by signal.
        for stop in (signal.SIGTERM, signal.SIGINT):
            signal.signal(stop, signal.SIG_IGN)
    if cycle_thread_alive():
        # The abandoned cycle is still computing, maybe inside classad2's C++ or a numba kernel:
        # interpreter shutdown would end its thread mid-call and abort the process. The databases
        # are closed and the logs written, so leave without finalization.
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)
    return 0


def _preloaded(kind: AdKind, path: Path) -> AdBatch:
    """The ads of ``--preload-<kind>``. A file that cannot be read, holds no ads, or holds none of
    the kind while it holds some (the other file's, when the two are swapped) is a ``ValueError``
    naming the option and the file: the daemon would otherwise run on an empty pool."""
    option = f"--preload-{kind.value}"
    try:
        batch = read_ads(path)
    except OSError as error:
        raise ValueError(f"{option} {path}: cannot read it: {error.strerror or error}") from None
    if not batch.ads and not batch.problems:
        raise ValueError(f"{option} {path}: the file holds no ads")
    tally = AdTally(kind.my_type)
    for ad in batch.ads:
        tally.count(ad)
    other = {AdKind.SLOT: AdKind.JOB, AdKind.JOB: AdKind.SLOT}.get(kind)
    hint = kind_hint(option, tally, kind.my_type, "--preload-slots and --preload-jobs",
                     other.my_type if other else None)
    if hint is not None:
        raise ValueError(f"{path}: {hint}")
    return batch
