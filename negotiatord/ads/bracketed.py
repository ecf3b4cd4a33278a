"""The bracketed forms: new-form ads (`[ A = 1; B = "x" ]`, one after another)
and JSON (`condor_status -json`: a list of objects; also a bare object or a
stream of objects, one per line).

classad2 reads one such ad at a time but cannot split a long input cheaply:
parseAds re-reads the remaining input on every ad, which is quadratic (85k job
ads: 210 s).  So the ads are delimited here by a bracket scanner that skips
strings (and, in the new form, comments and quoted attribute names), and each
ad's own text is handed to classad2 -- its semantics, including
last-one-wins for duplicated attributes, are untouched.

An ad's text reaches classad2 only once each of its attributes is within the
limits of `limits`; an ad with one beyond them is refused naming the
attribute, and its other attributes are read so that it can be named.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from classad2 import ParserType

from .limits import (COMMENT, DOUBLE_QUOTED, MAX_AD_CHARS, MAX_EXPRESSION_CHARS, MAX_NESTING, NEW_FORM_STRING,
                     SINGLE_QUOTED, ad_size_fault, clearly_within, expression_fault, statements_within)
from .piece import LineCounter, Piece, failure_message, parse_one, snippet

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
    separator: str       # what ends an attribute (ads.limits.ad_size_fault)


NEW_FORM = Syntax(
    ParserType.New,
    re.compile(rf"(?:[^\"'/{{}}\[\]]++|{DOUBLE_QUOTED}|{SINGLE_QUOTED}|{COMMENT}|/(?![/*]))*+([\[\]{{}}])", re.S),
    re.compile(rf"(?:\s++|{COMMENT})*+", re.S),
    lists_hold_ads=False,
    name="new-form ClassAd",
    separator=";",
)
JSON = Syntax(
    ParserType.JSON,
    re.compile(rf"(?:[^\"{{}}\[\]]++|{DOUBLE_QUOTED})*+([\[\]{{}}])"),
    re.compile(r"[\s,]*+"),
    lists_hold_ads=True,
    name="JSON object",
    separator=",",
)


def read_bracketed(text: str, syntax: Syntax) -> Iterator[Piece]:
    """Every ad of `text`, in order; text between ads that is not allowed
    there is reported as a piece of its own, so it keeps a position.

    An ad that is left open (a bracket, quote or comment never closed) or that classad2 cannot
    read is refused alone when the next ad starts on a line of its own (see
    :func:`_next_ad_start`): the scan starts again there, so the ads after it are still read."""
    lines = LineCounter(text)
    depth = 0
    ad_opened_at: int | None = None  # depth at which the ad being scanned opened
    ad_start = gap_start = pos = 0
    while True:
        # within an ad, no further than an ad may reach: a regular expression holds the GIL while
        # it scans, and an ad beyond the limit is refused whatever closes it
        bound = len(text) if ad_opened_at is None else min(len(text), ad_start + MAX_AD_CHARS + 1)
        match = syntax.to_bracket.match(text, pos, bound)
        if match is None:
            if ad_opened_at is None:
                break
            resume = _next_ad_start(text, ad_start, len(text))
            if resume is None:
                yield Piece(lines.line_at(ad_start), None, ad_size_fault(text[ad_start:], syntax.separator)
                            or f"{syntax.name} is not terminated (missing closing bracket or quote; input truncated?)")
                return
            yield _cut_short(text, ad_start, resume, syntax, lines)
            depth, ad_opened_at, gap_start, pos = ad_opened_at, None, resume, resume
            continue
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
                piece = _parse(text[ad_start:pos], lines.line_at(ad_start), syntax)
                resume = _next_ad_start(text, ad_start, pos) if piece.ad is None else None
                if resume is not None:        # it ran into the ads after it: refuse it alone
                    piece, pos = _cut_short(text, ad_start, resume, syntax, lines), resume
                yield piece
                ad_opened_at, gap_start = None, pos
        elif depth > 0:  # the JSON list closes
            yield from _stray(text, gap_start, at, syntax, lines)
            depth, gap_start = 0, pos
        # else: a stray closing bracket between ads; it stays in the gap and is reported there
    yield from _stray(text, gap_start, len(text), syntax, lines)
    if depth > 0:
        yield Piece(lines.line_at(len(text)), None, "the JSON list is not closed with ']' (input truncated?)")


def _next_ad_start(text: str, ad_start: int, end: int) -> int | None:
    """Where the ad after the one opened at ``ad_start`` starts, if that one was left open or
    cannot be read and ran on before ``end``: the first later line that starts with the same
    bracket at the same indentation (ads are printed one per line, or each opening on a line of
    its own, as ``condor_status -long:new`` and ``-json`` print them). None if no line does."""
    line_start = text.rfind("\n", 0, ad_start) + 1
    indentation = text[line_start:ad_start]
    if indentation.strip():
        indentation = ""      # the ad opened within a line: look for one opening a line
    first_line_end = text.find("\n", ad_start, end)
    if first_line_end < 0:
        return None
    found = text.find("\n" + indentation + text[ad_start], first_line_end, end)
    return None if found < 0 else found + 1 + len(indentation)


def _cut_short(text: str, ad_start: int, resume: int, syntax: Syntax, lines: LineCounter) -> Piece:
    """The ad opened at ``ad_start``, read up to ``resume``, where the next ad starts."""
    piece = _parse(text[ad_start:resume], lines.line_at(ad_start), syntax)
    if piece.ad is not None:
        return piece
    return piece._replace(reason=f"{piece.reason} (read up to line {lines.line_at(resume)}, where the next ad starts)")


def _parse(text: str, line: int, syntax: Syntax) -> Piece:
    too_big = ad_size_fault(text, syntax.separator)
    if too_big:
        return Piece(line, None, too_big)
    refused = limits_refusal(text, line, syntax)
    if refused is not None:
        return refused
    ad = parse_one(text, syntax.parser)
    if ad is not None:
        return Piece(line, ad, "")
    message = failure_message(text, syntax.parser)
    return Piece(line, None, f"cannot parse {syntax.name} {snippet(text)!r}" + (f": {message}" if message else ""))


def limits_refusal(text: str, line: int, syntax: Syntax) -> Piece | None:
    """The refusal of the ad ``text`` (starting at ``line``) if an attribute is beyond the limits
    of :mod:`limits`, else None: the scan every bracketed ad passes before classad2 reads it."""
    if clearly_within(text) or (syntax is NEW_FORM and statements_within(text)):
        return None
    return (_json_beyond_limits if syntax is JSON else _new_form_beyond_limits)(text, line)


def _stray(text: str, start: int, end: int, syntax: Syntax, lines: LineCounter) -> Iterator[Piece]:
    """A problem for whatever stands between ads and should not."""
    gap = syntax.gap.match(text, start, end)
    assert gap is not None               # a gap may be empty
    allowed = gap.end()
    if allowed < end:
        stray = text[allowed:end].rstrip(_GAP_TRAILER)
        yield Piece(lines.line_at(allowed), None, f"expected a {syntax.name}, got {snippet(stray)!r}")


# What delimits a new-form ad's attributes: brackets and `;` outside string literals and comments.
_NEW_FORM_TOKENS = re.compile(rf"{NEW_FORM_STRING.pattern}|[\[\](){{}};]", re.S)
_JSON_EXPRESSION = re.compile(r"/Expr\((.*)\)/", re.S)


def _new_form_beyond_limits(text: str, line: int) -> Piece | None:
    """The refusal of the new-form ad ``text`` if an attribute is beyond the limits, else None."""
    statements = _new_form_statements(text)
    faults = [expression_fault(statement.partition("=")[2], NEW_FORM_STRING) for statement in statements]
    return _refusal(line, statements, faults, lambda s: s.partition("=")[0].strip(),
                    lambda rest: parse_one("[" + ";".join(rest) + "]", ParserType.New))


def _new_form_statements(text: str) -> list[str]:
    """The ``Name = expr`` statements of a new-form ad's text (its outermost brackets included)."""
    statements: list[str] = []
    depth, start = 0, None
    for token in _NEW_FORM_TOKENS.finditer(text):
        bracket = token.group()
        if len(bracket) != 1:
            continue  # a string literal, a quoted name or a comment
        if bracket == ";":
            if depth == 1 and start is not None:
                statements.append(text[start:token.start()])
                start = token.end()
        elif bracket in "[({":
            depth += 1
            if depth == 1:
                start = token.end()
        elif depth:
            if depth == 1 and start is not None:
                statements.append(text[start:token.start()])
                start = None
            depth -= 1
    return [statement for statement in statements if statement.strip()]


def _json_beyond_limits(text: str, line: int) -> Piece | None:
    """The refusal of the JSON ad ``text`` if an attribute is beyond the limits (an expression is
    a string ``/Expr(...)/``), else None. Text Python's JSON reader refuses is refused here too:
    classad2 is not handed an ad whose attributes could not be checked."""
    try:
        attributes = json.loads(text)
    except RecursionError:
        return Piece(line, None, f"JSON nested deeper than the {MAX_NESTING} levels an attribute may have")
    except ValueError as error:
        return Piece(line, None, f"cannot parse JSON object {snippet(text)!r}: {error}")
    if not isinstance(attributes, dict):
        return None
    names = list(attributes)
    faults = [_json_fault(attributes[name]) for name in names]
    # written back with `\/` for `/`, classad2's mark of an expression (`"\/Expr(...)\/"`)
    return _refusal(line, names, faults, str, lambda rest: parse_one(
        json.dumps({n: attributes[n] for n in rest}).replace("/", "\\/"), ParserType.JSON))


def _json_fault(value: object) -> str | None:
    """Why one JSON attribute value is beyond the limits, or None; walked with a stack."""
    stack = [(value, 0)]
    while stack:
        value, depth = stack.pop()
        if depth > MAX_NESTING:
            return f"nested deeper than the {MAX_NESTING} levels an attribute may have"
        if isinstance(value, str):
            expression = _JSON_EXPRESSION.fullmatch(value)
            fault = (expression_fault(expression.group(1), NEW_FORM_STRING) if expression
                     else f"a string of {len(value):,} characters, more than the {MAX_EXPRESSION_CHARS:,} a value may "
                          "have" if len(value) > MAX_EXPRESSION_CHARS else None)
            if fault:
                return fault
        elif isinstance(value, dict):
            stack.extend((item, depth + 1) for item in value.values())
        elif isinstance(value, list):
            stack.extend((item, depth + 1) for item in value)
    return None


def _refusal(line: int, attributes: list[str], faults: list[str | None], name_of: Callable[[str], str],
             read: Callable[[list[str]], object]) -> Piece | None:
    """The refusal naming each attribute at fault, with the ad ``read`` from the others; None if
    no attribute is at fault."""
    if not any(faults):
        return None
    reason = "; ".join(f"{name_of(attribute)}: {fault}" for attribute, fault in zip(attributes, faults) if fault)
    return Piece(line, None, reason, read([a for a, fault in zip(attributes, faults) if not fault]))
