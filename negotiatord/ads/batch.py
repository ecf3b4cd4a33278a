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
