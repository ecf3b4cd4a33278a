"""The old long form (`condor_status -l`, `condor_q -l`, `condor_history`):
one `Attr = expr` per line.

Ads end at a blank line (as in classad2.parseAds / HTCondor's long-form file
reader), at a `condor_history` banner line starting with `***`, or at a line
starting with `###` (the `### ad` separators of hand-made dumps).  classad2's
own parseAds treats neither banner as a separator: it reads a history file as
one ad whose attributes are those of the last job plus one named
"*** Offset" -- we follow condor_history instead, whose reader ends an ad at
the banner.

Each ad's text is parsed by classad2 with the Old parser, so values, string
escaping (old-ClassAd backslashes are literal) and duplicates (the last value
wins, the first spelling of the name is kept) are exactly classad2's.  classad2
does not report a bad line, though: it silently stops reading the ad there.
Every line that is an attribute adds one attribute, so an ad whose attribute
count equals its line count lost nothing (the fast path); anything else is
re-examined line by line (`_reexamine`) to tell comments, duplicates and
multi-line values apart from a real fault.

Asked for the names of per-job attributes (``repeats``), the reader also recognises an ad whose
text is the last cleanly read ad's but for the lines of those attributes (the jobs of one
cluster): only those lines are handed to classad2, and the ad comes back as a RepeatedAd.

No text goes to classad2 before it is checked against the limits of
`limits`: each line before the whole ad is read, each statement before it is
read alone.  An ad with an attribute beyond them is refused, naming the line
and the attribute; its other attributes are still read so that it can be named.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field

import classad2
from classad2 import ParserType

from .batch import RepeatedAd
from .limits import LONG_FORM_STRING, ad_size_fault, clearly_within, expression_fault, lines_within
from .piece import LineCounter, Piece, failure_message, parse_one, snippet

# A line ending an ad: blank, a condor_history banner, or a `###` separator.
# Matched from the newline that ends the previous line.
SEPARATOR = re.compile(r"\n(?:[ \t]*|\*\*\*[^\n]*|###[^\n]*)(?=\n|\Z)")

# Strings are skipped when balancing brackets; the old form escapes only `\"`.
# A line that defines an attribute with a plain ClassAd name (comments, continued values and
# anything else fail it).
_DEFINITION = re.compile(r"[ \t]*([A-Za-z_][A-Za-z0-9_]*)[ \t]*=")
_OPENERS = "([{"
_CLOSERS = ")]}"


# Characters searched for a separator per call: the regular expression holds the GIL while it
# searches, and a 10 MB ad without a separator took one call of 77 ms.
SEARCH_WINDOW = 1 << 16


def separators(text: str, window: int = SEARCH_WINDOW) -> Iterator[re.Match[str]]:
    """The matches of ``SEPARATOR`` in ``text``, as ``finditer`` finds them, each call searching at
    most about ``window`` characters. A match that reaches the window's end may be one only because
    ``$``-like lookahead sees the window's end as the text's (or its line goes on): it is searched
    again in a window twice as wide. Without a match, the next window starts three characters
    back, where the longest prefix of a separator that cannot match yet (``\n**``) may begin."""
    pos, end, width = 0, len(text), window
    while pos < end:
        stop = min(end, pos + width)
        match = SEPARATOR.search(text, pos, stop)
        if match is None:
            if stop == end:
                return
            pos, width = (stop - 3, window) if stop - 3 > pos else (pos, width * 2)
        elif match.end() < stop or stop == end:
            yield match
            pos, width = match.end(), window
        else:
            pos, width = match.start(), width * 2


def read_long_form(text: str, repeats: tuple[str, ...] = ()) -> Iterator[Piece]:
    """Every ad of a long-form text, in order; an ad that differs from the last cleanly read one
    only in the lines of the attributes ``repeats`` names comes as a :class:`RepeatedAd`."""
    earlier = _Earlier(repeats) if repeats else None
    if "\r" in text:
        text = text.replace("\r\n", "\n")
    # Framed by newlines so that the first line can be a separator and the last ad is followed by one.
    text = "\n" + text + ("" if text.endswith("\n") else "\n")
    lines = LineCounter(text, line_at_start=0)
    start = 1
    for separator in separators(text):
        if separator.start() > start:
            chunk = text[start : separator.start()]
            too_big = ad_size_fault(chunk, "\n")
            piece = Piece(lines.line_at(start), None, too_big) if too_big else None
            if piece is None and earlier is not None:
                piece = earlier.repeated(chunk, lines.line_at(start))
            if piece is None:
                piece = _read_ad(chunk, lines.line_at(start))
                if earlier is not None and piece is not None and isinstance(piece.ad, classad2.ClassAd):
                    earlier.remember(chunk, piece.ad)
            if piece is not None:
                yield piece
        start = separator.end() + 1


class _Earlier:
    """The last ad read cleanly, one attribute per line, as the ads after it are compared with it:
    its text cut at the lines of the per-job attributes, and the names those lines define.

    An ad whose text has the same stretches between lines defining the same names in the same
    order is the earlier ad with those lines' values in place: every line of a long-form ad is an
    attribute read on its own (the earlier ad's attribute count equal to its line count says no
    line continued another, repeated a name or was a comment), so only its own lines need
    reading, under the same limits and the same strict count. The comparison is a few string
    operations per such line, not per line of the ad."""

    def __init__(self, names: tuple[str, ...]) -> None:
        alternatives = "|".join(map(re.escape, names))
        self._own_line = re.compile(rf"^[ \t]*({alternatives})[ \t]*=[^\n]*", re.M | re.I)
        self._ad: classad2.ClassAd | None = None
        self._stretches: list[str] = []              # the text around the per-job lines
        self._lines: list[re.Pattern[str]] = []       # each per-job line, as its name is spelt

    def remember(self, chunk: str, ad: classad2.ClassAd) -> None:
        """Compare the ads after it with ``ad``, read from ``chunk``, if each line was one attribute."""
        self._ad, self._stretches, self._lines = None, [], []
        if len(ad) != chunk.count("\n") + 1:
            return
        at = 0
        for line in self._own_line.finditer(chunk):
            self._stretches.append(chunk[at : line.start()])
            self._lines.append(re.compile(rf"[ \t]*{re.escape(line.group(1))}[ \t]*=[^\n]*"))
            at = line.end()
        self._stretches.append(chunk[at:])
        if self._lines:
            self._ad = ad

    def repeated(self, chunk: str, first_line: int) -> Piece | None:
        """``chunk`` as a repetition of the earlier ad, or None if it is not one."""
        if self._ad is None:
            return None
        lines = []
        at = 0
        for stretch, own_line in zip(self._stretches, self._lines):
            if not chunk.startswith(stretch, at):
                return None
            line = own_line.match(chunk, at + len(stretch))
            if line is None:
                return None
            lines.append(line.group())
            at = line.end()
        if len(chunk) - at != len(self._stretches[-1]) or not chunk.endswith(self._stretches[-1]):
            return None
        text = "\n".join(lines)
        values = parse_one(text, ParserType.Old) if clearly_within(text) or lines_within(text) else None
        if values is None or len(values) != len(lines):
            return None
        return Piece(first_line, RepeatedAd(self._ad, values, chunk), "")


def _read_ad(chunk: str, first_line: int) -> Piece | None:
    whole = None
    if lines_within(chunk):
        whole = parse_one(chunk, ParserType.Old)
        if whole is not None and len(whole) == chunk.count("\n") + 1:
            return Piece(first_line, whole, "")
        repeated = _with_repeats(chunk, first_line)
        if repeated is not None:
            return repeated
    return _reexamine(chunk, first_line, whole)


def _with_repeats(chunk: str, first_line: int) -> Piece | None:
    """An ad of one definition per line (each line within the limits) that repeats attributes,
    read without walking its lines for comments and continued values (a slot ad has ~350)."""
    lines = chunk.split("\n")
    statements = []
    for number, line in enumerate(lines, first_line):
        definition = _DEFINITION.match(line)
        if definition is None:
            return None
        statements.append(_Statement(number, definition.group(1), [line]))
    return _without_repeats(statements, first_line)


@dataclass
class _Statement:
    """One attribute definition, possibly continued over several lines."""

    line: int
    name: str | None  # None: the line has no `Attr =` part
    parts: list[str] = field(default_factory=list)

    @property
    def text(self) -> str:
        return " ".join(self.parts)

    def fault(self) -> str | None:
        """Why the value is beyond the limits (ads.limits), or None."""
        return expression_fault(self.text.partition("=")[2], LONG_FORM_STRING) if self.name is not None else None

    def continued_by(self, body: str) -> bool:
        """Whether the next line belongs to this value: the value so far has
        an unclosed bracket, or is empty and the line opens one (the shape of
        `ChildCpus = ` followed by `{`, `1,`, ..., `}` lines).  A closed value
        is never continued: classad2 ignores text after a complete expression,
        so gluing a line to it could swallow an attribute silently."""
        if self.name is None:
            return False
        value = self.text.split("=", 1)[1]
        if not value.strip():
            return body.startswith(tuple(_OPENERS))
        return _bracket_depth(value) > 0


def _bracket_depth(value: str) -> int:
    bare = LONG_FORM_STRING.sub("", value)
    return sum(bare.count(c) for c in _OPENERS) - sum(bare.count(c) for c in _CLOSERS)


def _attribute_name(line: str) -> str | None:
    """The attribute a long-form line defines: everything before the first
    `=`, trimmed (HTCondor's SplitLongFormAttrValue), or None if there is none."""
    name, equals, _ = line.partition("=")
    name = name.strip()
    return name if equals and name else None


def _statements(chunk: str, first_line: int) -> list[_Statement]:
    statements: list[_Statement] = []
    for number, line in enumerate(chunk.split("\n"), first_line):
        body = line.strip()
        if body.startswith("#"):
            continue  # a comment line, skipped wherever it is (HTCondor's long-form PreParse)
        if statements and statements[-1].continued_by(body):
            statements[-1].parts.append(body)
        else:
            statements.append(_Statement(number, _attribute_name(line), [line]))
    return statements


def _reexamine(chunk: str, first_line: int, whole: classad2.ClassAd | None) -> Piece | None:
    """An ad that is not one clean attribute per line: comments, multi-line
    values, duplicated attributes, or a fault.  Comment lines and joined
    values are re-read whole under the same strict count; an ad that repeats
    attributes is re-read whole with each name once (`_without_repeats`).
    Failing those, every statement is parsed alone and the ad assembled from
    them (last value wins, first spelling of the name kept, as in classad2),
    which also names the first statement at fault. ``whole`` is classad2's read
    of the whole chunk, if it was read."""
    statements = _statements(chunk, first_line)
    if not statements:
        return None  # only comments: not an ad
    faults = [(statement, statement.fault()) for statement in statements]
    if any(fault for _, fault in faults):
        return _beyond_limits(faults, first_line)
    if all(s.name is not None for s in statements):
        text = "\n".join(s.text for s in statements)
        ad = whole if whole is not None and text == chunk else parse_one(text, ParserType.Old)
        if ad is not None and len(ad) == len(statements):
            return Piece(first_line, ad, "")
        once = _without_repeats(statements, first_line)
        if once is not None:
            return once
    return _assembled(statements, first_line)


def _without_repeats(statements: list[_Statement], first_line: int) -> Piece | None:
    """An ad that repeats attributes, read whole as classad2 reads it (the last value under the
    first spelling of the name), or None where that cannot be told from a strict count.

    Written with each name once, the text is again one attribute per statement, so the count
    tells a clean read from one classad2 stopped short; each overridden statement is parsed alone
    (one or two lines in real ads), so a fault there is named by `_assembled` as before. A slot
    ad that repeats one attribute reads at the whole-ad speed, not statement by statement."""
    named = [(statement.name.lower(), statement) for statement in statements if statement.name is not None]
    first: dict[str, _Statement] = {}
    last: dict[str, _Statement] = {}
    for name, statement in named:
        first.setdefault(name, statement)
        last[name] = statement
    if len(first) == len(named):
        return None                         # nothing repeats: the whole read stopped at a fault
    for name, statement in named:
        if last[name] is not statement:
            alone = parse_one(statement.text, ParserType.Old)
            if alone is None or len(alone) != 1:
                return None
    text = "\n".join(f"{first[name].name} = {last[name].text.partition('=')[2]}" for name in first)
    ad = parse_one(text, ParserType.Old)
    return Piece(first_line, ad, "") if ad is not None and len(ad) == len(first) else None


def _beyond_limits(faults: list[tuple[_Statement, str | None]], first_line: int) -> Piece:
    """The refusal of an ad with attributes beyond the limits, naming each; the others are read
    (each alone, as `_assembled` does) so that the ad can be named by its key."""
    reason = "; ".join(f"line {statement.line}: {statement.name}: {fault}" for statement, fault in faults if fault)
    rest = [statement for statement, fault in faults if not fault and statement.name is not None]
    readable = _assembled(rest, first_line)
    return Piece(first_line, None, reason, readable.ad if readable.ad is not None else readable.readable)


def _assembled(statements: list[_Statement], first_line: int) -> Piece:
    """The ad of ``statements``, each parsed alone; refused at the first that does not read, with
    the others that do as what could be read of it (so that it can be named by its key)."""
    ad = classad2.ClassAd()
    fault = ""
    for statement in statements:
        span = "" if len(statement.parts) == 1 else f" (continued over {len(statement.parts)} lines)"
        where = f"line {statement.line}{span}"
        if statement.name is None:
            fault = fault or f"{where}: expected 'Attr = expr', got {snippet(statement.parts[0])!r}"
            continue
        alone = parse_one(statement.text, ParserType.Old)
        if alone is None or len(alone) != 1:
            if not fault:
                message = failure_message(statement.text, ParserType.Old)
                fault = f"{where}: cannot parse {snippet(statement.parts[0])!r}" + (f": {message}" if message else "")
            continue
        [name] = alone.keys()
        ad[name] = alone.lookup(name)  # a deep copy (classad2 copies ExprTrees on insert)
    return Piece(first_line, None, fault, ad) if fault else Piece(first_line, ad, "")
