"""The ``negotiatord`` command line.

The subcommands' modules are imported inside :func:`main` (numba, matplotlib and the cycle take a
second or two), so that a Ctrl-C while they load ends the command like one during its work: a
line on stderr and status 130, never a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys

from negotiatord import __version__
from negotiatord.classad.interrupts import caused_by_interrupt

COMMANDS = {
    "negotiate": "run one negotiation cycle over ad files and print the result",
    "replay": "run a workload trace through negotiation cycles on a simulated clock",
    "run": "run the daemon: ads in over HTTP, periodic cycles, matches out",
    "userprio": "show user priorities or set factors and reset usage, like condor_userprio",
}
# What a shell reports for a command killed by SIGPIPE (128 + 13): the status `cat big | head`
# leaves for cat, so `set -o pipefail` scripts see the output was cut short, as with other tools.
EXIT_BROKEN_PIPE = 141
# What a shell reports for a command stopped by SIGINT (128 + 2), Ctrl-C.
EXIT_INTERRUPTED = 130


def main(argv: list[str] | None = None) -> int:
    try:
        return _main(argv)
    except (KeyboardInterrupt, SystemError) as error:
        # A command with something to save on Ctrl-C (replay, the daemon) handles it itself; here
        # nothing was finished, and a traceback would tell the user nothing.
        if not caused_by_interrupt(error):
            raise
        print("negotiatord: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED


def _main(argv: list[str] | None) -> int:
    from negotiatord.logs import configure_logging

    parser = argparse.ArgumentParser(prog="negotiatord", description="An HTCondor-style negotiator daemon.")
    parser.add_argument("--version", action="version", version=f"negotiatord {__version__}")
    parser.add_argument("--log-level", default="info", choices=("debug", "info", "warning", "error"))
    sub = parser.add_subparsers(dest="command", required=True)
    modules = {name: importlib.import_module(f"negotiatord.commands.{name}") for name in COMMANDS}
    for name, help_text in COMMANDS.items():
        modules[name].add_arguments(sub.add_parser(name, help=help_text, description=help_text))
    args = parser.parse_args(argv)
    configure_logging(args.log_level)
    try:
        status = modules[args.command].run(args)
        sys.stdout.flush()  # a reader gone away shows here, not at interpreter exit
    except BrokenPipeError:
        # The reader of our output (`| head`) has stopped reading: stop quietly, as Unix tools do.
        # Python's recommended handling (library/signal.html, "Note on SIGPIPE"): point stdout at
        # devnull so the interpreter's own final flush cannot fail again.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_BROKEN_PIPE
    return int(status)
