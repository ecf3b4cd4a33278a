"""One ad-sized stretch of input and what classad2 made of it: the unit the format readers
(longform, bracketed) hand to `reader`, with what they share to make one.

Positions are assigned by `reader`, so that every format numbers its ads the same way.

Only two calls go into classad2's parser (`parse_one`, `failure_message`), so that its failure
conventions are handled in one place. classad2.parseNext signals a bad ad either by returning None
or by raising ValueError ("Unable to parse input stream into a ClassAd."), depending on where in
the C++ parser it failed; its detailed message is only available from the process-global
classad2.lastError(), which is never cleared and often not set at all (the long-form reader sets
none), so a message read after a failure may belong to an earlier one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

import classad2
from classad2 import ParserType

# A parse that is sure to fail with a known message; see failure_message().
if TYPE_CHECKING:
    from .batch import RepeatedAd

_PROBE_TEXT = "no open brace"
_PROBE_PARSER = ParserType.JSON


class Piece(NamedTuple):
    line: int  # 1-based line where the stretch starts
    ad: classad2.ClassAd | RepeatedAd | None  # None when the stretch was rejected
    reason: str  # why it was rejected; "" for an accepted ad
    # a rejected ad's other attributes, when only some were beyond the limits (ads.limits), so
    # that the ad can be named by its key
    readable: classad2.ClassAd | None = None


def parse_one(text: str, parser: ParserType) -> classad2.ClassAd | None:
    """The first ad in `text` as classad2 reads it, or None if it cannot."""
    try:
        return classad2.parseNext(text, parser)
    except (ValueError, classad2.ClassAdException):
        return None


def failure_message(text: str, parser: ParserType) -> str:
    """classad2's own explanation of why `text` does not parse, or "" if it
    gives none.  The global last-error slot is first overwritten by a probe
    with a known message, so a stale message is never mistaken for this one."""
    parse_one(_PROBE_TEXT, _PROBE_PARSER)
    probe_message = classad2.lastError()
    parse_one(text, parser)
    message = classad2.lastError().strip()
    return "" if message == probe_message.strip() else message


def snippet(text: str, limit: int = 60) -> str:
    """A short quotable excerpt of offending input for an error message."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


class LineCounter:
    """1-based line numbers for ascending offsets into one text, counted
    incrementally so that numbering every ad of a large input stays linear."""

    def __init__(self, text: str, line_at_start: int = 1) -> None:
        self._text = text
        self._offset = 0
        self._line = line_at_start

    def line_at(self, offset: int) -> int:
        self._line += self._text.count("\n", self._offset, offset)
        self._offset = offset
        return self._line
