"""What the requests assessed on one shared offer have in common, kept while the offer lasts.

Until a match changes the pool, the cycle offers every request the same read-only rows and
amounts (PoolState.offered_to), and the autoclusters of several submitters often hold alike
jobs. So on that offer a request whose job values, compiled roots and job-and-slot answers are
those of one assessed before takes its answer (:class:`Answered`: its matched rows only, the
rest being unmatched alike). Answers are kept for the current shared offer, each offer's bounded
by :data:`MAX_KEPT_ROWS`: a fill's first offer matches most of an empty pool for every request.

The match space keeps a cycle's first offer and its answers for the next cycle (space.py). A
daemon's cycle over ads that did not change offers first what the last one did, in new arrays of
the same content: the same universe rows, so the same slot records, at the same amounts. Its
requests then take the last cycle's answers. The space forgets them whenever what its universe
rows hold changes: a new record takes a row, the universe grows, or the clock moves under a slot
value that reads it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from negotiatord.fastpath.interpreter.stacks import Stack

# rows kept for one offer, at most (~60 bytes each)
MAX_KEPT_ROWS = 1_000_000


@dataclass(frozen=True)
class Answered:
    """An answer on the shared offer: its matched rows' entries."""

    stack: Stack                      # held, so the id() in its key cannot be reused
    job_static: object                # likewise
    matched: np.ndarray               # positions in the offer
    answers: tuple[np.ndarray, ...]   # (matched, consumption, cost, rank) at those positions


@dataclass
class _Offered:
    """One shared offer's arrays (the amounts, then what its rows hold) and its answers."""

    arrays: tuple[np.ndarray, ...]
    answered: dict[tuple, Answered] = field(default_factory=dict)
    kept_rows: int = 0

    def is_made_of(self, arrays: tuple[np.ndarray, ...]) -> bool:
        return len(arrays) == len(self.arrays) and all(new is old for new, old in zip(arrays, self.arrays))

    def is_alike(self, arrays: tuple[np.ndarray, ...]) -> bool:
        """Whether ``arrays`` hold what this offer's did, bit for bit (NaN amounts included)."""
        return len(arrays) == len(self.arrays) and all(
            new.shape == old.shape and new.dtype == old.dtype
            and np.array_equal(np.ascontiguousarray(new).view(np.uint8), np.ascontiguousarray(old).view(np.uint8))
            for new, old in zip(arrays, self.arrays))


class SharedOffer:
    """The answers given to the requests asked on the current shared offer, and on the first
    one of the last cycle."""

    def __init__(self) -> None:
        self._current: _Offered | None = None
        self._first: _Offered | None = None           # this cycle's first shared offer
        self._last_first: _Offered | None = None      # the last cycle's

    def holds(self, rows: np.ndarray, amounts: np.ndarray, columns: tuple[np.ndarray, ...]) -> bool:
        """Whether a call on table ``rows`` at ``amounts`` is on a shared offer (both read-only),
        ``columns`` being what the offer's rows hold (their universe rows first). A new shared
        offer starts with no answers, unless it is the cycle's first and holds what the last
        cycle's first did."""
        if rows.flags.writeable or amounts.flags.writeable:
            return False
        arrays = (amounts, *columns)
        if self._current is not None and self._current.is_made_of(arrays):
            return True
        last, self._last_first = self._last_first, None
        if self._first is None and last is not None and last.is_alike(arrays):
            last.arrays = arrays
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

    def answered(self, key: tuple, stack: Stack, job_static: object) -> Answered | None:
        """The answer filed under ``key`` for these very ``stack`` and job-and-slot answers."""
        found = self._current.answered.get(key) if self._current is not None else None
        return found if found is not None and found.stack is stack and found.job_static is job_static else None

    def keep_answer(self, key: tuple, answered: Answered) -> None:
        """File ``answered`` under ``key``, while the offer's budget of rows lasts."""
        offered = self._current
        if offered is not None and offered.kept_rows + len(answered.matched) <= MAX_KEPT_ROWS:
            offered.kept_rows += len(answered.matched)
            offered.answered[key] = answered
