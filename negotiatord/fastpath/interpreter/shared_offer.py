"""What the requests assessed on one shared offer have in common, kept while the offer lasts.

Until a match changes the pool, the cycle offers every request the same read-only rows and
amounts (PoolState.offered_to), and the autoclusters of several submitters often hold alike
jobs. So on that offer a request whose job values, compiled roots and job-and-slot answers are
those of one assessed before takes its answer (:class:`Answered`: its matched rows only, the
rest being unmatched alike). Answers are kept for the current shared offer, each offer's bounded
by :data:`MAX_KEPT_ROWS`: a fill's first offer matches most of an empty pool for every request.

The match space keeps a cycle's first offer and its answers for the next cycle (space.py). A
daemon's next cycle offers first what the last one did, in new arrays: as many rows, most of them
the same universe rows (so the same slot records) at the same amounts. Its requests take the last
cycle's answers, asked again only on the positions that changed: another universe row, other
amounts or columns, or a universe row a new record took since (:meth:`SharedOffer.forget_rows`).
The space forgets every answer when the universe grows or the clock moves under a slot value
that reads it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from negotiatord.fastpath.interpreter.stacks import Stack

# rows kept for one offer, at most (~60 bytes each)
MAX_KEPT_ROWS = 1_000_000
# a later cycle's first offer changed in more than this share of its positions starts anew
MAX_CHANGED_SHARE = 0.5

_NOTHING = np.zeros(0, dtype=np.int64)


@dataclass(frozen=True)
class Answered:
    """An answer on the shared offer: its matched rows' entries."""

    stack: Stack                      # held, so the id() in its key cannot be reused
    job_static: object                # likewise
    matched: np.ndarray               # positions in the offer, in any order
    answers: tuple[np.ndarray, ...]   # (matched, consumption, cost, rank) at those positions


@dataclass(frozen=True)
class Changed:
    """The positions of a shared offer that changed since answers on it were given."""

    positions: np.ndarray
    at: np.ndarray                    # over the offer: whether each position changed
    arrays: tuple[np.ndarray, ...]    # the offer's arrays at those positions (the amounts first)

    @classmethod
    def of(cls, changed: np.ndarray, arrays: tuple[np.ndarray, ...]) -> Changed:
        """The ``changed`` positions (a mask) of an offer made of ``arrays``."""
        positions = np.flatnonzero(changed)
        return cls(positions, changed, tuple(array[positions] for array in arrays))


@dataclass
class _Offered:
    """One shared offer's arrays (the amounts, then what its rows hold: universe rows first),
    its answers, and the positions changed since the answers not yet asked again were given."""

    arrays: tuple[np.ndarray, ...]
    answered: dict[tuple, Answered] = field(default_factory=dict)
    kept_rows: int = 0
    changed: Changed | None = None
    asked_again: set[tuple] = field(default_factory=set)

    def is_made_of(self, arrays: tuple[np.ndarray, ...]) -> bool:
        return len(arrays) == len(self.arrays) and all(new is old for new, old in zip(arrays, self.arrays))

    def move_to(self, arrays: tuple[np.ndarray, ...], changed: Changed | None) -> None:
        """Stand for ``arrays``, which differ from this offer's where ``changed`` says: the
        answers not asked again since the last move, stale at its changes, go."""
        if self.changed is not None:
            for key in self.answered.keys() - self.asked_again:
                self.kept_rows -= len(self.answered.pop(key).matched)
        self.arrays, self.changed, self.asked_again = arrays, changed, set()

    def changes_to(self, arrays: tuple[np.ndarray, ...], stale: np.ndarray) -> np.ndarray | None:
        """Whether each position of ``arrays`` (an offer as long) holds another universe row, a
        ``stale`` one, or other values, bit for bit; None when the offers are not that alike."""
        if len(arrays) != len(self.arrays) or any(new.shape != old.shape or new.dtype != old.dtype
                                                  for new, old in zip(arrays, self.arrays)):
            return None
        changed = np.isin(arrays[1], stale)
        for new, old in zip(arrays, self.arrays):
            if len(new):
                bytes_of = np.ascontiguousarray(new).view(np.uint8).reshape(len(new), -1)
                changed |= (bytes_of != np.ascontiguousarray(old).view(np.uint8).reshape(len(old), -1)).any(axis=1)
        return None if changed.sum() > MAX_CHANGED_SHARE * len(changed) else changed


class SharedOffer:
    """The answers given to the requests asked on the current shared offer, and on the first
    one of the last cycle."""

    def __init__(self) -> None:
        self._current: _Offered | None = None
        self._first: _Offered | None = None           # this cycle's first shared offer
        self._last_first: _Offered | None = None      # the last cycle's
        self._stale: list[np.ndarray] = []            # universe rows new records took since it was filed

    def holds(self, rows: np.ndarray, amounts: np.ndarray, columns: tuple[np.ndarray, ...]) -> bool:
        """Whether a call on table ``rows`` at ``amounts`` is on a shared offer (both read-only),
        ``columns`` being what the offer's rows hold (their universe rows first). A new shared
        offer starts with no answers, unless it is the cycle's first and alike to the last
        cycle's first: it then takes its answers, to be asked again where they differ."""
        if rows.flags.writeable or amounts.flags.writeable:
            return False
        arrays = (amounts, *columns)
        if self._current is not None and self._current.is_made_of(arrays):
            return True
        last, self._last_first = self._last_first, None
        changed = None
        if self._first is None and last is not None:
            changed = last.changes_to(arrays, np.concatenate([_NOTHING, *self._stale]))
        self._stale = []
        if changed is not None and last is not None:
            last.move_to(arrays, Changed.of(changed, arrays) if changed.any() else None)
            self._current = last
        else:
            self._current = _Offered(arrays)
        if self._first is None:
            self._first = self._current
        return True

    def next_cycle(self) -> None:
        """A new cycle begins: its first shared offer may take the answers of this one's."""
        self._last_first, self._first, self._current = self._first, None, None

    def forget(self) -> None:
        """Drop every answer: what the universe rows hold changed."""
        self._current = self._first = self._last_first = None
        self._stale = []

    def forget_rows(self, universe_rows: np.ndarray) -> None:
        """New records stand at ``universe_rows``: answers over them are to be asked again there
        (none of this cycle's offers holds them: they were rows of slots gone)."""
        if self._first is not None or self._last_first is not None:
            self._stale.append(universe_rows.copy())

    def answered(self, key: tuple, stack: Stack, job_static: object) -> tuple[Answered, Changed | None] | None:
        """The answer filed under ``key`` for these very ``stack`` and job-and-slot answers, and
        where it is to be asked again (:meth:`keep_answer` files the answer asked again)."""
        offered = self._current
        if offered is None:
            return None
        found = offered.answered.get(key)
        if found is None or found.stack is not stack or found.job_static is not job_static:
            return None
        return found, (None if key in offered.asked_again else offered.changed)

    def keep_answer(self, key: tuple, answered: Answered) -> None:
        """File ``answered`` (a whole answer on the current offer) under ``key``, while the
        offer's budget of rows lasts."""
        offered = self._current
        if offered is None:
            return
        before = offered.answered.get(key)
        rows = offered.kept_rows - (len(before.matched) if before is not None else 0) + len(answered.matched)
        if rows <= MAX_KEPT_ROWS:
            offered.kept_rows = rows
            offered.answered[key] = answered
            offered.asked_again.add(key)
