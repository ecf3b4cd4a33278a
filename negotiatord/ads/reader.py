"""Reading ClassAds from files and request bodies in whichever form a pool
administrator has them: the old long form (`-l`, history files), the new
bracketed form, or JSON (`-json`), told apart by the first significant
character.

Every ad is parsed by classad2 itself (see longform/bracketed for how the input
is split and why), so what an accepted ad means is exactly what classad2 says.
A malformed ad becomes an AdProblem and its neighbours are kept; AdFormatError
is kept for input that cannot be read as ClassAds at all (see AdFormatError).
Bytes that are not UTF-8 (a Latin-1 `Args` in a real `condor_q` dump) cost only
the ad that holds them: see decode_ads.
"""

from __future__ import annotations

import bisect
import gzip
import itertools
import json
import re
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import TypeAlias, overload

import classad2

from .batch import AdBatch, AdFormatError, AdProblem, RepeatedAd
from .bracketed import JSON, NEW_FORM, read_bracketed
from .longform import read_long_form
from .piece import LineCounter, Piece, snippet

_LEADING_NOISE = re.compile(r"(?:\s+|//[^\n]*|/\*.*?\*/)*", re.S)
_WHITESPACE = re.compile(r"\s*")
_GZIP_MAGIC = b"\x1f\x8b"
# A JSON document can only start with one of these if it is a bare string,
# number, true, false or null.
_JSON_SCALAR_START = re.compile(r'["\-0-9]|true\b|false\b|null\b')
# What decode_ads makes of a byte that is not UTF-8 (Python's surrogateescape).
_UNDECODED = re.compile("[\udc80-\udcff]")
_Outcome: TypeAlias = "classad2.ClassAd | RepeatedAd | AdProblem"    # what one ad of the input comes out as


def parse_ads(text: str, source: str = "<text>") -> AdBatch:
    """All ads in `text`; `source` names the input in problems."""
    batch, steps = parse_in_steps(text, source)
    for _ in steps:
        pass
    return batch


def parse_in_steps(text: str, source: str = "<text>") -> tuple[AdBatch, Iterator[None]]:
    """The batch of `text`, empty, and the steps that fill it, one ad (or problem) a step: for a
    caller that parses several inputs in turn. Input that cannot be read as ClassAds at all raises
    AdFormatError here, before the first step."""
    batch = AdBatch([], [], [], [])
    numbered = _numbered(text, source, ())

    def steps() -> Iterator[None]:
        for position, piece in numbered:
            outcome = _outcome(piece, source, position)
            if isinstance(outcome, AdProblem):
                batch.problems.append(outcome)
            else:
                assert isinstance(outcome, classad2.ClassAd)    # no RepeatedAd unless asked for
                batch.ads.append(outcome)
                batch.positions.append(position)
                batch.lines.append(piece.line)
            yield

    return batch, steps()


def iter_ads(text: str, source: str = "<text>", repeats: tuple[str, ...] = ()) -> Iterator[tuple[int, _Outcome]]:
    """The ads of `text` one at a time with their 1-based positions, for
    callers that digest each ad and need not hold them all (a 255k-job dump
    takes gigabytes as ClassAds). Input that cannot be read as ClassAds at all
    raises AdFormatError here, before the first ad.

    `repeats` names per-job attributes (``ProcId``, ``GlobalJobId``): a long-form ad whose text
    is the last cleanly read ad's but for the lines of those comes as a :class:`RepeatedAd`,
    without its other lines read again. Without it, every ad is a ClassAd."""
    return ((position, _outcome(piece, source, position)) for position, piece in _numbered(text, source, repeats))


def decode_ads(data: bytes) -> str:
    """The text of ClassAd input. A byte that is not UTF-8 is kept as a lone surrogate
    (surrogateescape) instead of refusing the whole input: classad2 takes its text as UTF-8 and
    so never parses an ad holding one, which iter_ads then reports as that ad's problem."""
    return data.decode("utf-8", "surrogateescape")


def read_ads(path: Path) -> AdBatch:
    """All ads in the file at `path`, gunzipped first if it is gzip data
    (whatever its name)."""
    return parse_ads(_file_text(path), source=str(path))


@overload
def stream_ads(path: Path) -> Iterator[tuple[int, classad2.ClassAd | AdProblem]]: ...
@overload
def stream_ads(path: Path, repeats: tuple[str, ...]) -> Iterator[tuple[int, _Outcome]]: ...
def stream_ads(path: Path, repeats: tuple[str, ...] = ()) -> Iterator[tuple[int, _Outcome]]:
    """The ads in the file at `path` one at a time, as :func:`iter_ads` (only ClassAds without
    `repeats`)."""
    return iter_ads(_file_text(path), str(path), repeats)


def _file_text(path: Path) -> str:
    """The text of the file at `path`, gunzipped first if it is gzip data."""
    path = Path(path)
    data = path.read_bytes()
    if data.startswith(_GZIP_MAGIC):
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError, zlib.error) as error:
            raise AdFormatError(f"{path}: damaged gzip data: {error}") from error
    return decode_ads(data)


def _blame_undecoded(pieces: Iterator[Piece], text: str) -> Iterator[Piece]:
    """`pieces`, each refused one whose stretch of input holds a byte that is not UTF-8 reported
    as such: that byte is why classad2 refused it, whatever parse error it gave. A stretch runs
    from its first line to the next piece's; an accepted piece keeps its ad (the byte was in a
    comment line, which the long form drops)."""
    lines = LineCounter(text)
    undecoded: list[tuple[int, str]] = []  # (line, reason) for the first such byte of each line
    for match in _UNDECODED.finditer(text):
        line = lines.line_at(match.start())
        if not undecoded or undecoded[-1][0] != line:
            byte = ord(match.group()) - 0xDC00
            undecoded.append((line, f"line {line}: byte 0x{byte:02X} is not UTF-8 text: "
                                    f"{_excerpt(text, match.start())}"))
    bad_lines = [line for line, _ in undecoded]
    previous: Piece | None = None
    for piece in itertools.chain(pieces, [None]):
        if previous is not None and previous.ad is None:
            end = piece.line if piece is not None else lines.line_at(len(text)) + 1
            first = bisect.bisect_left(bad_lines, previous.line)
            # max(): the next ad may start on this ad's own line (JSON on one line)
            if first < len(undecoded) and undecoded[first][0] < max(end, previous.line + 1):
                previous = previous._replace(reason=undecoded[first][1])
        if previous is not None:
            yield previous
        previous = piece


def _excerpt(text: str, at: int, reach: int = 25) -> str:
    """The input around offset `at` within its line, undecodable bytes shown as `\\xNN`."""
    start = max(at - reach, 0)
    start = text.rfind("\n", start, at) + 1 or start
    end = text.find("\n", at, at + reach)
    shown = text[start : end if end >= 0 else at + reach]
    return snippet(shown.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace"))


def _numbered(text: str, source: str, repeats: tuple[str, ...]) -> Iterator[tuple[int, Piece]]:
    """The pieces of `text` with their 1-based positions; AdFormatError at once (not on the
    first next()) for input that cannot be read as ClassAds at all."""
    text = text.removeprefix("\ufeff")
    pieces = _pieces(text, source, repeats)
    if not text.isascii() and _UNDECODED.search(text):  # isascii: instant, the usual case
        pieces = _blame_undecoded(pieces, text)
    return enumerate(pieces, 1)


def _outcome(piece: Piece, source: str, position: int) -> _Outcome:
    return piece.ad if piece.ad is not None else AdProblem(source, position, piece.line, piece.reason, piece.readable)


def _pieces(text: str, source: str, repeats: tuple[str, ...]) -> Iterator[Piece]:
    noise = _LEADING_NOISE.match(text)
    assert noise is not None             # the pattern matches the empty string
    start = noise.end()
    if start == len(text):
        return iter(())
    first = text[start]
    if first == "{":
        return read_bracketed(text, JSON)
    if first == "[":
        whitespace = _WHITESPACE.match(text, start + 1)
        assert whitespace is not None    # the pattern matches the empty string
        after = whitespace.end()
        # `[{` or `[]` is a JSON list (classad2 cannot parse an empty new-form ad anyway)
        return read_bracketed(text, JSON if text[after : after + 1] in ("{", "]", "") else NEW_FORM)
    if first == "<":
        raise AdFormatError(f"{source}: looks like XML; only long-form, new-form and JSON ClassAds are read")
    if _JSON_SCALAR_START.match(text, start):
        _refuse_json_scalar(text, source)
    return read_long_form(text, repeats)


def _refuse_json_scalar(text: str, source: str) -> None:
    """Input that is a whole JSON document but not an object or list holds no ad."""
    try:
        value = json.loads(text)
    except ValueError:
        return  # not JSON: long-form text that happens to start like a JSON scalar
    raise AdFormatError(f"{source}: JSON {type(value).__name__} at top level; expected an object or a list of objects")
