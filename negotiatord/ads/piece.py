"""The unit the format readers hand to `reader`: one ad-sized stretch of input
and what classad2 made of it.  Positions are assigned by `reader`, so that
every format numbers its ads the same way."""

from __future__ import annotations

from typing import NamedTuple

import classad2


class Piece(NamedTuple):
    line: int  # 1-based line where the stretch starts
    ad: classad2.ClassAd | None  # None when the stretch was rejected
    reason: str  # why it was rejected; "" for an accepted ad


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
