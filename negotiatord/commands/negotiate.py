"""``negotiatord negotiate``: one cycle over ad files, printed as JSON or a table (a dry run).

Exit status: 0 when every ad was read, 3 when some ads were malformed (reported on stderr, the
rest negotiated), 2 when the input cannot be used at all (config error, unreadable or empty file,
an accountant that is not one; each named with its option). Input
that reads well but is probably not what was meant (swapped files, no idle job, glideins past
their end of life) is said in the result's problems and on stderr (see input_hints).
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import json
import sys
import time
from pathlib import Path
from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

import classad2
import structlog

from negotiatord.accountant import AccountantState, AccountantStore, AccountantStoreError
from negotiatord.ads import AdFormatError, AdProblem, RepeatedAd, stream_ads
from negotiatord.commands.input_hints import AdTally, input_hints
from negotiatord.evaluation import ClassAdEvaluator
from negotiatord.fastpath.interpreter.evaluator import FastEvaluator
from negotiatord.pool.builder import build_snapshot
from negotiatord.pool.job_ads import IDENTITY
from negotiatord.publish.report import cycle_document, cycle_table
from negotiatord.runtime import run_cycle
from negotiatord.settings import ConfigError, load_settings

EVALUATORS = {"fast": FastEvaluator, "classad": ClassAdEvaluator}
EXIT_BAD_ADS = 3
EXIT_UNUSABLE = 2

log = structlog.get_logger("negotiatord.negotiate")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", type=Path, required=True, help="condor-style config file")
    parser.add_argument("--slots", type=Path, required=True, help="slot ads (condor_status -l, [...] or JSON)")
    parser.add_argument("--jobs", type=Path, required=True, help="job ads (condor_q -l, [...] or JSON)")
    parser.add_argument("--accountant", type=Path, help="accountant database to read priorities from")
    parser.add_argument("--now", type=int, help="the cycle's time() as epoch seconds (default: now)")
    parser.add_argument("--format", choices=("json", "table"), default="json")
    parser.add_argument("--evaluator", choices=sorted(EVALUATORS), default="fast",
                        help="fast: the compiled fast path (default); classad: classad2 pair by pair, "
                             "the reference, to cross-check a cycle")


def run(args: argparse.Namespace) -> int:
    try:
        settings = load_settings(args.config)
        # the jobs of a cluster, alike but for their identity, are not read one by one
        slots = _Ads(_opened("--slots", args.slots, stream_ads), "Machine")
        jobs = _Ads(_opened("--jobs", args.jobs, lambda path: stream_ads(path, IDENTITY)), "Job")
        slot_ads = list(slots)
        accountant = _accountant(args.accountant)
    except (ConfigError, AdFormatError, AccountantStoreError, OSError, ValueError) as err:
        print(f"negotiatord: {err}", file=sys.stderr)
        return EXIT_UNUSABLE
    now = args.now if args.now is not None else int(time.time())
    snapshot = build_snapshot(slot_ads, jobs, settings)        # job ads are let go once read
    evaluator = EVALUATORS[args.evaluator](snapshot.table, settings, now)
    result = run_cycle(snapshot, accountant, settings, now, evaluator)
    for problem in result.problems:
        log.warning("left out of the cycle", problem=problem)
    hints = input_hints(slots.tally, jobs.tally, slot_ads, result.stats, now, args.now is not None)
    for hint in hints:
        log.warning("the input is probably not what was meant", hint=hint)
    result = dataclasses.replace(result, problems=(*result.problems, *hints))
    log.info("cycle", **{k: v for k, v in cycle_document(result)["cycle"].items() if k != "phases_s"})
    if args.format == "json":
        print(json.dumps(cycle_document(result), indent=1))
    else:
        print(cycle_table(result))
    return EXIT_BAD_ADS if slots.malformed or jobs.malformed else 0


_Ad = TypeVar("_Ad", classad2.ClassAd, classad2.ClassAd | RepeatedAd)
_Outcomes = Iterator[tuple[int, _Ad | AdProblem]]


def _opened(option: str, path: Path, stream: Callable[[Path], _Outcomes[_Ad]]) -> _Outcomes[_Ad]:
    """The ads of the file ``option`` names, as ``stream`` reads them; a file that cannot be read,
    or holds no ad at all (an empty ``condor_status -l``), is a ``ValueError`` naming both."""
    try:
        outcomes = stream(path)
    except OSError as error:
        raise ValueError(f"{option} {path}: cannot read it: {error.strerror or error}") from None
    first = next(outcomes, None)
    if first is None:
        raise ValueError(f"{option} {path}: the file holds no ads")
    return itertools.chain([first], outcomes)


class _Ads(Generic[_Ad]):
    """The ads of a file, one at a time, each malformed one reported and counted as it goes by,
    each good one tallied by kind: a 255k-job file is negotiated without holding its ads
    (gigabytes as ClassAds)."""

    def __init__(self, outcomes: _Outcomes[_Ad], wanted: str) -> None:
        self._outcomes: _Outcomes[_Ad] = outcomes
        self.malformed = 0
        self.tally = AdTally(wanted)

    def __iter__(self) -> Iterator[_Ad]:
        for _, outcome in self._outcomes:
            if isinstance(outcome, AdProblem):
                log.error("malformed ad skipped", problem=str(outcome))
                self.malformed += 1
            else:
                self.tally.count(outcome.ad if isinstance(outcome, RepeatedAd) else outcome)
                yield outcome


def _accountant(path: Path | None) -> AccountantState:
    if path is None:
        return AccountantState()
    if not path.exists():
        raise ValueError(f"--accountant {path}: accountant database does not exist")
    try:
        store = AccountantStore(path)
    except AccountantStoreError as error:
        raise AccountantStoreError(f"--accountant {error}") from None
    try:
        return store.load()
    finally:
        store.close()
