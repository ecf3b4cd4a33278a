"""Interned strings: kernels see a string as an id, and look up everything else in tables.

``==`` on ClassAd strings ignores ASCII case (strcasecmp), so each string also knows the id of its
ASCII-lower-cased form; ``<`` and friends compare those forms byte-wise, so the table keeps each
string's rank in that order (rebuilt only when a program compares strings by order). The five
numeric conversions (floor, ceiling, round, int, real) of a string are whatever classad2 says they
are; they are asked of classad2 once per string, and only for programs that convert strings.
"""

from __future__ import annotations

import classad2
import numpy as np

from negotiatord.classad.values import UNDEF, from_python, quote_string, NotScalar, ERROR

_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")
CONVERSION_FUNCTIONS = ("floor", "ceiling", "round", "int", "real")


class StringTable:
    def __init__(self) -> None:
        self._ids: dict[str, int] = {}
        self.strings: list[str] = []
        self._lower = np.zeros(64, dtype=np.int64)
        self._rank = np.zeros(64, dtype=np.int64)
        self._conv_t = np.zeros((len(CONVERSION_FUNCTIONS), 64), dtype=np.int8)
        self._conv_i = np.zeros((len(CONVERSION_FUNCTIONS), 64), dtype=np.int64)
        self._conv_f = np.zeros((len(CONVERSION_FUNCTIONS), 64), dtype=np.float64)
        self._ranked = 0        # strings covered by the current ranks
        self._converted = 0     # strings covered by the conversion tables

    def __len__(self) -> int:
        return len(self.strings)

    def intern(self, text: str) -> int:
        found = self._ids.get(text)
        if found is not None:
            return found
        new = len(self.strings)
        self._ids[text] = new
        self.strings.append(text)
        if new >= len(self._lower):
            self._grow()
        lower = text.translate(_ASCII_LOWER)
        self._lower[new] = new if lower == text else self.intern(lower)
        return new

    def lower(self) -> np.ndarray:
        return self._lower

    def ranks(self) -> np.ndarray:
        """Rank of each string's lower-cased form in byte order (strcasecmp order)."""
        if self._ranked != len(self.strings):
            count = len(self.strings)
            forms = [self.strings[self._lower[i]].encode() for i in range(count)]
            order = sorted(set(forms))
            position = {form: rank for rank, form in enumerate(order)}
            self._rank[:count] = [position[form] for form in forms]
            self._ranked = count
        return self._rank

    def conversions(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Tables [function, string id] of floor/ceiling/round/int/real of each string."""
        while self._converted < len(self.strings):
            sid = self._converted
            literal = quote_string(self.strings[sid])
            for row, function in enumerate(CONVERSION_FUNCTIONS):
                try:
                    tag, payload = from_python(classad2.ExprTree(f"{function}({literal})").eval())
                except NotScalar:
                    tag, payload = ERROR, None
                self._conv_t[row, sid] = tag
                if tag in (2, 3):          # BOOL, INT
                    self._conv_i[row, sid] = int(payload)
                elif tag == 4:             # REAL
                    self._conv_f[row, sid] = payload
            self._converted += 1
        return self._conv_t, self._conv_i, self._conv_f

    def _grow(self) -> None:
        size = 2 * len(self._lower)
        self._lower = np.resize(self._lower, size)
        self._rank = np.resize(self._rank, size)
        for name in ("_conv_t", "_conv_i", "_conv_f"):
            old = getattr(self, name)
            new = np.zeros((old.shape[0], size), dtype=old.dtype)
            new[:, : old.shape[1]] = old
            setattr(self, name, new)
        self._conv_t[:, len(self.strings):] = UNDEF
