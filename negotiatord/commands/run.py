"""``negotiatord run``: the daemon, in the foreground (systemd and ``condor_master`` run it the same way).

Started by ``condor_master`` (``NEGOTIATOR = .../negotiatord``, ``NEGOTIATOR_ARGS = run --config
FILE``), it takes what the master hands down (:mod:`negotiatord.cedar.inherit`), logs to
``NEGOTIATOR_LOG`` (its standard error is the master's, which is nowhere), and accepts the options
the master or an administrator may give a DaemonCore daemon: ``-p PORT`` (the command port),
``-f`` (foreground: it always is) and ``-local-name NAME``.

Exit status: 0 after a clean stop (SIGTERM, SIGQUIT, SIGINT); 2 when it cannot start (config
error, state directory, database, token or TLS file unusable, accountant and match log disagreeing,
another daemon on the state directory, address in use, a preload file that cannot be read, holds no
ads, or holds none of its kind: swapped ``--preload-slots``/``--preload-jobs``), each said in one
line naming the option or knob and the file.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import sys
import time
from pathlib import Path

import structlog

from negotiatord.accountant import AccountantStoreError
from negotiatord.ads import AdBatch, AdFormatError, read_ads
from negotiatord.cedar.inherit import InheritError, take
from negotiatord.logs import RotatingLog, configure_logging
from negotiatord.commands.input_hints import AdTally, kind_hint
from negotiatord.feed.kinds import AdKind
from negotiatord.publish.matchlog import MatchLogError
from negotiatord.service.daemon import Daemon, DaemonClock, TlsError, cycle_thread_alive
from negotiatord.service.paths import StateDirError
from negotiatord.service.replica import ReplicaRefused
from negotiatord.service.state_check import START_OVER, StateMismatch
from negotiatord.service.state_dir import StateDirInUse
from negotiatord.service.token import TokenError
from negotiatord.settings import ConfigError, load_settings
from negotiatord.settings.loader import param_value

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
    # DaemonCore's own options, as condor_master and administrators give them
    parser.add_argument("-p", dest="command_port", type=int, metavar="PORT",
                        help="the command port (HTCondor's -p; default NEGOTIATORD_COMMAND_PORT)")
    parser.add_argument("-f", dest="foreground", action="store_true", help="run in the foreground (always)")
    parser.add_argument("-local-name", dest="local_name", metavar="NAME",
                        help="the name condor_master knows the daemon by (logged; not a config prefix)")


def run(args: argparse.Namespace) -> int:
    # DaemonCore blocks every signal while it forks a daemon, and the child inherits the mask
    # through exec; a DaemonCore daemon unblocks them in its event loop (DaemonCore::Driver). The
    # master's SIGTERM, SIGQUIT and SIGHUP must reach this one too.
    signal.pthread_sigmask(signal.SIG_SETMASK, set())
    inherited = None
    logging_to_file = False
    try:
        inherited = take(os.environ)
        settings = load_settings(args.config)
        log_file = settings.service.command_port.log_file
        if inherited is not None and log_file is not None:
            configure_logging(getattr(args, "log_level", "info"), json=True,
                              file=RotatingLog(log_file, settings.service.command_port.log_max_bytes))
            logging_to_file = True
            for warning in settings.warnings:    # said at load, to a standard error that goes nowhere
                structlog.get_logger("negotiatord.settings").warning("config", config=str(args.config),
                                                                    warning=warning)
        preload = {kind: _preloaded(kind, path) for kind in AdKind
                   if (path := getattr(args, f"preload_{kind.value}")) is not None}
        daemon = Daemon(args.config.absolute(), settings, DaemonClock(args.now), preload,
                        args.accept_state_mismatch, inherited=inherited, command_port=args.command_port,
                        local_name=args.local_name)
    except (ConfigError, AdFormatError, StateDirError, TokenError, TlsError, AccountantStoreError, MatchLogError,
            StateMismatch, ReplicaRefused, StateDirInUse, InheritError, OSError, ValueError) as error:
        print(f"negotiatord: {error}", file=sys.stderr)
        if inherited is not None and not logging_to_file:
            _tell_the_masters_log(f"negotiatord: {error}")
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
        for stop in (signal.SIGTERM, signal.SIGQUIT, signal.SIGINT):
            signal.signal(stop, signal.SIG_IGN)
    if cycle_thread_alive():
        # The abandoned cycle is still computing, maybe inside classad2's C++ or a numba kernel:
        # interpreter shutdown would end its thread mid-call and abort the process. The databases
        # are closed and the logs written, so leave without finalization.
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)
    return 0


def _tell_the_masters_log(message: str) -> None:
    """Under condor_master, a daemon that cannot read its own config has no log of its own yet and
    its standard error goes nowhere: say why in the NEGOTIATOR_LOG the master's config
    (``$CONDOR_CONFIG``) names, where an administrator looks."""
    master_config = os.environ.get("CONDOR_CONFIG")
    target = param_value(Path(master_config), "NEGOTIATOR_LOG") if master_config else None
    if target is None:
        return
    line = json.dumps({"event": "negotiatord cannot start", "level": "error", "error": message,
                       "timestamp": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())})
    try:
        with open(target, "a", encoding="utf-8") as log:
            log.write(line + "\n")
    except OSError:
        pass


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
