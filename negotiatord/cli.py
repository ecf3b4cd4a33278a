"""The ``negotiatord`` command line."""

from __future__ import annotations

import argparse
import os
import sys

from negotiatord import __version__
from negotiatord.commands import negotiate, replay, run, userprio
from negotiatord.logs import configure_logging

COMMANDS = {
    "negotiate": (negotiate, "run one negotiation cycle over ad files and print the result"),
    "replay": (replay, "run a workload trace through negotiation cycles on a simulated clock"),
    "run": (run, "run the daemon: ads in over HTTP, periodic cycles, matches out"),
    "userprio": (userprio, "show user priorities or set factors and reset usage, like condor_userprio"),
}
# What a shell reports for a command killed by SIGPIPE (128 + 13): the status `cat big | head`
# leaves for cat, so `set -o pipefail` scripts see the output was cut short, as with other tools.
EXIT_BROKEN_PIPE = 141


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="negotiatord", description="An HTCondor-style negotiator daemon.")
    parser.add_argument("--version", action="version", version=f"negotiatord {__version__}")
    parser.add_argument("--log-level", default="info", choices=("debug", "info", "warning", "error"))
    sub = parser.add_subparsers(dest="command", required=True)
    for name, (module, help_text) in COMMANDS.items():
        module.add_arguments(sub.add_parser(name, help=help_text, description=help_text))
    args = parser.parse_args(argv)
    configure_logging(args.log_level)
    try:
        status = COMMANDS[args.command][0].run(args)
        sys.stdout.flush()  # a reader gone away shows here, not at interpreter exit
    except BrokenPipeError:
        # The reader of our output (`| head`) has stopped reading: stop quietly, as Unix tools do.
        # Python's recommended handling (library/signal.html, "Note on SIGPIPE"): point stdout at
        # devnull so the interpreter's own final flush cannot fail again.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_BROKEN_PIPE
    return status
