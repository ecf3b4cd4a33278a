"""ClassAd values as the fast path carries them: a type tag plus an integer and a real payload.

Kernels work on three parallel arrays (tag int8, ival int64, fval float64); strings travel as
interned ids in ``ival`` (see :mod:`negotiatord.fastpath.strings`). On the Python side a value is a
``(tag, payload)`` pair. ``literal_text`` writes a value back as ClassAd source text that classad2
parses to exactly that value, which is how non-native pieces are handed to classad2.
"""

from __future__ import annotations

import math
from typing import Any

import classad2

UNDEF, ERROR, BOOL, INT, REAL, STR = 0, 1, 2, 3, 4, 5
SCALAR_TAGS = (UNDEF, ERROR, BOOL, INT, REAL, STR)

Value = tuple[int, Any]          # (tag, payload): payload bool/int/float/str or None
UNDEFINED: Value = (UNDEF, None)
ERROR_VALUE: Value = (ERROR, None)

INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1


class NotScalar(ValueError):
    """A classad2 result the kernels cannot carry (a list, a nested ad, an absolute time)."""


def from_python(value: object) -> Value:
    """A classad2 result (``ad.get``, ``ExprTree.eval``) as a value; lists, ads and times raise."""
    if isinstance(value, classad2.Value):
        return UNDEFINED if value == classad2.Value.Undefined else ERROR_VALUE
    if isinstance(value, bool):
        return (BOOL, value)
    if isinstance(value, int):
        return (INT, value)
    if isinstance(value, float):
        return (REAL, value)
    if isinstance(value, str):
        return (STR, value)
    raise NotScalar(f"{type(value).__name__} value {value!r}")


def literal_text(value: Value) -> str:
    """ClassAd source text for ``value`` that classad2 reads back as the identical value."""
    tag, payload = value
    if tag == UNDEF:
        return "undefined"
    if tag == ERROR:
        return "error"
    if tag == BOOL:
        return "true" if payload else "false"
    if tag == INT:
        return f"({payload})" if payload < 0 else str(payload)
    if tag == REAL:
        if math.isnan(payload):
            return 'real("NaN")'
        if math.isinf(payload):
            return 'real("INF")' if payload > 0 else '(-real("INF"))'
        text = repr(payload)
        return f"({text})" if text.startswith("-") else text
    return quote_string(payload)


def quote_string(text: str) -> str:
    """A ClassAd string literal; control characters as three-digit octal escapes."""
    out = ['"']
    for char in text:
        if char == "\\":
            out.append("\\\\")
        elif char == '"':
            out.append('\\"')
        elif ord(char) < 0x20 or ord(char) == 0x7F:
            out.append(f"\\{ord(char):03o}")
        else:
            out.append(char)
    out.append('"')
    return "".join(out)


def to_python(value: Value) -> object:
    """The value as classad2 would return it (for tests and fallbacks)."""
    tag, payload = value
    if tag == UNDEF:
        return classad2.Value.Undefined
    if tag == ERROR:
        return classad2.Value.Error
    return payload
