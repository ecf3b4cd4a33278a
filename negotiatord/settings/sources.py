"""Where in a condor config, or in a file it includes, a knob is set: the file and line that an
error about the knob's value names.

HTCondor's reader keeps this (``condor_config_val -v NAME`` prints ``# at: FILE, line N``), but its
Python bindings do not expose it. So this module reads the files as HTCondor's ``Parse_config``
(``condor_utils/config.cpp``) does, as far as the location needs: logical lines joined across a
trailing backslash, ``NAME = value`` and ``NAME @=tag`` ... ``@tag``, ``NEGOTIATOR.NAME`` folded into
``NAME`` (the negotiator's view), and ``include [ifexist] : FILE`` followed, its file name expanded
by HTCondor itself (``expand``). Like HTCondor it gives the last physical line of a logical line.
``if``/``else`` blocks are not evaluated: among a knob's assignments, the caller keeps the last one
whose value is the knob's value as HTCondor read it (:func:`locate`). Nothing here decides a value.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

SUBSYSTEM = "NEGOTIATOR"
# HTCondor's recursion limit for includes is 20 deep (config.cpp, CONFIG_MAX_NESTING_DEPTH).
_MAX_DEPTH = 20
_NAME = re.compile(r"@?([A-Za-z_$][A-Za-z0-9_.$()]*)\s*(@=|\+=|=|:)\s*(.*)", re.DOTALL)
_INCLUDE = re.compile(r"@?include\b(.*?):\s*(.*)", re.IGNORECASE | re.DOTALL)


@dataclass(frozen=True)
class Assignment:
    name: str            # upper case, any NEGOTIATOR. prefix folded
    file: Path
    line: int            # the last physical line of the logical line, as HTCondor counts it
    value: str           # the text after the operator (a here-document's lines joined), undecoded bytes kept
                         # as surrogates (UTF-8 with surrogateescape)

    @property
    def undecodable(self) -> bool:
        """Whether the value holds a byte that is not UTF-8."""
        return any("\udc80" <= char <= "\udcff" for char in self.value)

    def byte_not_utf8(self) -> int | None:
        """The first such byte."""
        return next((ord(char) - 0xDC00 for char in self.value if "\udc80" <= char <= "\udcff"), None)


def assignments(path: Path, expand: Callable[[str], str | None], depth: int = 0) -> Iterator[Assignment]:
    """Every knob assignment HTCondor reads from ``path`` and the files it includes, in reading
    order. ``expand`` expands ``$(...)`` as HTCondor does (None when it cannot)."""
    try:
        text = path.read_bytes().decode("utf-8", "surrogateescape")
    except OSError:
        return
    here: tuple[str, str, list[str]] | None = None      # (name, tag, lines) of a here-document
    for line_number, logical in _logical_lines(text):
        if here is not None:
            name, tag, body = here
            if logical.strip() == f"@{tag}":
                yield Assignment(name, path, line_number, "\n".join(body))
                here = None
            else:
                body.append(logical.strip())
            continue
        stripped = logical.strip()
        if not stripped or stripped.startswith("#"):
            continue
        include = _INCLUDE.fullmatch(stripped)
        if include is not None:
            options, target = include.group(1).strip().lower(), include.group(2).strip()
            if options not in ("", "ifexist", "ifexists") or depth >= _MAX_DEPTH:
                continue                  # include command/output/into: nothing to point at
            expanded = expand(target)
            if expanded:
                yield from assignments(path.parent / expanded, expand, depth + 1)
            continue
        assignment = _NAME.fullmatch(stripped)
        if assignment is None:
            continue
        written, operator, value = assignment.groups()
        folded = _folded(written)
        if folded is None or operator == ":":
            continue
        if operator == "@=":
            here = (folded, value.strip(), [])
            continue
        yield Assignment(folded, path, line_number, value.strip())


def locate(path: Path, name: str, expand: Callable[[str], str | None], value: str | None) -> Assignment | None:
    """The assignment that gave ``name`` its ``value`` (HTCondor's reading of it; None for a value
    that is not UTF-8): the last assignment of ``name`` whose value expands to ``value``, or holds
    a byte that is not UTF-8. None when no assignment does (a value from a ``use`` metaknob, an
    ``include command``, a disabled ``if`` branch read differently)."""
    wanted = name.upper()
    candidates = [found for found in assignments(path, expand) if found.name == wanted]
    for found in reversed(candidates):
        if value is None and found.undecodable:
            return found
        if value is not None and not found.undecodable and expand(found.value) == value:
            return found
    return None


def _folded(name: str) -> str | None:
    """``name`` upper-cased, ``NEGOTIATOR.`` dropped; None for another subsystem's or a local name's."""
    head, dot, tail = name.partition(".")
    if not dot:
        return name.upper()
    return tail.upper() if head.upper() == SUBSYSTEM and "." not in tail else None


def _logical_lines(text: str) -> Iterator[tuple[int, str]]:
    """(last physical line number, text) of each logical line: a line ending in a backslash goes on
    with the next (HTCondor's config getline; a comment line inside one does not end it)."""
    pending: list[str] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if pending and line.lstrip().startswith("#"):
            continue
        if line.rstrip().endswith("\\"):
            pending.append(line.rstrip()[:-1])
            continue
        pending.append(line)
        yield number, " ".join(part.strip() for part in pending) if len(pending) > 1 else line
        pending = []
    if pending:
        yield number, " ".join(part.strip() for part in pending)
