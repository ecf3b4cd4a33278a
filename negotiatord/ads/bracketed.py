"""The bracketed forms: new-form ads (`[ A = 1; B = "x" ]`, one after another)
and JSON (`condor_status -json`: a list of objects; also a bare object or a
stream of objects, one per line).

classad2 reads one such ad at a time but cannot split a long input cheaply:
parseAds re-reads the remaining input on every ad, which is quadratic (85k job
ads: 210 s).  So the ads are delimited here by a bracket scanner that skips
strings (and, in the new form, comments and quoted attribute names), and each
ad's own text is handed to classad2 -- its semantics, including
last-one-wins for duplicated attributes, are untouched.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from classad2 import ParserType

from .piece import LineCounter, Piece, failure_message, parse_one, snippet

_DOUBLE_QUOTED = r'"[^"\\]*+(?:\\.[^"\\]*+)*+"'
_SINGLE_QUOTED = r"'[^'\\]*+(?:\\.[^'\\]*+)*+'"
_COMMENT = r"//[^\n]*+|/\*.*?\*/"
_GAP_TRAILER = ", \t\r\n"  # separators trimmed off stray text before quoting it


@dataclass(frozen=True)
class Syntax:
    """How one bracketed form is scanned."""

    parser: ParserType
    # Everything up to and including the next bracket that is not quoted or commented.
    to_bracket: re.Pattern[str]
    # What may stand between two ads.
    gap: re.Pattern[str]
    # Whether a top-level '[' opens a list of ads (JSON) rather than an ad (new form).
    lists_hold_ads: bool
    name: str


NEW_FORM = Syntax(
    ParserType.New,
    re.compile(rf"(?:[^\"'/{{}}\[\]]++|{_DOUBLE_QUOTED}|{_SINGLE_QUOTED}|{_COMMENT}|/(?![/*]))*+([\[\]{{}}])", re.S),
    re.compile(rf"(?:\s++|{_COMMENT})*+", re.S),
    lists_hold_ads=False,
    name="new-form ClassAd",
)
JSON = Syntax(
    ParserType.JSON,
    re.compile(rf"(?:[^\"{{}}\[\]]++|{_DOUBLE_QUOTED})*+([\[\]{{}}])"),
    re.compile(r"[\s,]*+"),
    lists_hold_ads=True,
    name="JSON object",
)


def read_bracketed(text: str, syntax: Syntax) -> Iterator[Piece]:
    """Every ad of `text`, in order; text between ads that is not allowed
    there is reported as a piece of its own, so it keeps a position."""
    lines = LineCounter(text)
    depth = 0
    ad_opened_at: int | None = None  # depth at which the ad being scanned opened
    ad_start = gap_start = pos = 0
    while (match := syntax.to_bracket.match(text, pos)) is not None:
        at, pos = match.start(1), match.end()
        if text[at] in "[{":
            if ad_opened_at is None:
                yield from _stray(text, gap_start, at, syntax, lines)
                if syntax.lists_hold_ads and depth == 0 and text[at] == "[":
                    gap_start = pos  # a JSON list opens; its elements are the ads
                else:
                    ad_start, ad_opened_at = at, depth
            depth += 1
        elif ad_opened_at is not None:
            depth -= 1
            if depth == ad_opened_at:
                yield _parse(text[ad_start:pos], lines.line_at(ad_start), syntax)
                ad_opened_at, gap_start = None, pos
        elif depth > 0:  # the JSON list closes
            yield from _stray(text, gap_start, at, syntax, lines)
            depth, gap_start = 0, pos
        # else: a stray closing bracket between ads; it stays in the gap and is reported there
    if ad_opened_at is not None:
        yield Piece(lines.line_at(ad_start), None,
                    f"{syntax.name} is not terminated (missing closing bracket or quote; input truncated?)")
        return
    yield from _stray(text, gap_start, len(text), syntax, lines)
    if depth > 0:
        yield Piece(lines.line_at(len(text)), None, "the JSON list is not closed with ']' (input truncated?)")


def _parse(text: str, line: int, syntax: Syntax) -> Piece:
    ad = parse_one(text, syntax.parser)
    if ad is not None:
        return Piece(line, ad, "")
    message = failure_message(text, syntax.parser)
    return Piece(line, None, f"cannot parse {syntax.name} {snippet(text)!r}" + (f": {message}" if message else ""))


def _stray(text: str, start: int, end: int, syntax: Syntax, lines: LineCounter) -> Iterator[Piece]:
    """A problem for whatever stands between ads and should not."""
    gap = syntax.gap.match(text, start, end)
    assert gap is not None               # a gap may be empty
    allowed = gap.end()
    if allowed < end:
        stray = text[allowed:end].rstrip(_GAP_TRAILER)
        yield Piece(lines.line_at(allowed), None, f"expected a {syntax.name}, got {snippet(stray)!r}")
