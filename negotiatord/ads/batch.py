"""What reading a stream of ClassAds produces: the ads that parsed, and one
problem per ad that did not.

A pool administrator feeding us a 200k-ad dump must not lose 199,999 good ads
to one bad one, and must be told exactly which ad was bad and where it starts;
hence a batch carries both lists, and `positions` ties every accepted ad back
to its place in the input.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import classad2
from classad2 import ParserType

from .piece import parse_one


class AdFormatError(Exception):
    """The input as a whole cannot be read as ClassAds (damaged gzip data, XML,
    or JSON whose top level is neither an object nor a list), so there is no ad
    to report a problem against."""


@dataclass(frozen=True)
class AdProblem:
    """One ad of the input that was not accepted, and why."""

    source: str  # file name, "<http body>", ...
    position: int  # 1-based index of the ad in the input (accepted and rejected ads count)
    line: int | None  # 1-based line where the bad ad starts
    reason: str  # human-readable; carries classad2's own message when it gives one
    # what could be read of the ad, without the attributes beyond the limits (ads.limits)
    readable: classad2.ClassAd | None = field(default=None, compare=False, repr=False)
    key: str | None = None  # the key the ad would be filed under, once a reader of one kind names it

    def __str__(self) -> str:
        where = self.source if self.line is None else f"{self.source}:{self.line}"
        named = f", {self.key}" if self.key else ""
        return f"{where} (ad {self.position}{named}): {self.reason}"


@dataclass(frozen=True)
class AdBatch:
    """The accepted ads in input order, with their input positions and lines, and the problems."""

    ads: list[classad2.ClassAd]
    problems: list[AdProblem]
    positions: list[int]  # 1-based input position of each accepted ad (parallel to ads)
    lines: list[int]  # 1-based line where each accepted ad starts (parallel to ads), for refusals after parsing


@dataclass(frozen=True, slots=True)
class RepeatedAd:
    """An ad whose text is an earlier ad's but for the lines of a few per-job attributes, asked
    for by name (the jobs of one cluster in a ``condor_q -l`` dump differ only in ``ProcId`` and
    ``GlobalJobId``): the earlier ad, and this one's own values of those attributes, read without
    reading the rest of its text again. Read whole, it is ``ad`` with ``own``'s values in place."""

    ad: classad2.ClassAd    # the earlier ad, as read (shared by all that repeat it)
    own: classad2.ClassAd   # this ad's lines that differ from the earlier ad's, as classad2 reads them
    text: str               # this ad's own text, for a reader that needs the ad itself

    def whole(self) -> classad2.ClassAd:
        """The ad itself, as classad2 reads its text."""
        ad = parse_one(self.text, ParserType.Old)
        assert ad is not None   # the earlier ad's text read cleanly and the differing lines did too
        return ad
