"""What the requests assessed on one shared offer have in common, kept while the offer lasts.

Until a match changes the pool, the cycle offers every request the same read-only rows and
amounts (PoolState.offered_to), and the autoclusters of several submitters often hold alike
jobs. So on that offer a request whose job values, compiled roots and job-and-slot answers are
those of one assessed before takes its answer (:class:`Answered`: its matched rows only, the
rest being unmatched alike). Answers are kept for the last :data:`KEPT_OFFERS` shared offers
asked on (with preemption, the cycle offers each request the slots on offer and the claimed ones
in turn), each offer's bounded by :data:`MAX_KEPT_ROWS`: a fill's first offer matches most of an
empty pool for every request.

The match space keeps a cycle's first offers and their answers for the next cycle (space.py). A
daemon's next cycle offers first what the last one did, in new arrays: as many rows, most of them
the same universe rows (so the same slot records) at the same amounts. Its requests take the last
cycle's answers, asked again only on the positions that changed: another universe row, other
amounts or columns, or a universe row whose slot values changed since (:meth:`SharedOffer.forget_rows`:
a new record took it, or a value read there follows the clock that moved). The space forgets
every answer when the universe grows.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Generic, TypeVar

import numpy as np

if TYPE_CHECKING:
    from negotiatord.fastpath.interpreter.stacks import Stack

# rows kept for one offer, at most (~60 bytes each)
MAX_KEPT_ROWS = 1_000_000
# a later cycle's first offer changed in more than this share of its positions starts anew
MAX_CHANGED_SHARE = 0.5
# shared offers whose answers are kept at once, and kept for the next cycle: a cycle with
# preemption offers each request the slots on offer and the claimed ones in turn
KEPT_OFFERS = 2
# rows; a smaller offer is compared whole, and starts anew wherever it differs: comparing it
# position by position costs more than asking the kernel again on so few rows
COMPARED_BY_POSITION_FROM = 64

_NOTHING = np.zeros(0, dtype=np.int64)

Item = TypeVar("Item")


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
    """One shared offer's arrays (the amounts, then what its rows hold: universe rows first) and
    its answers: those given on these arrays, and those given on the arrays it stood for before
    (``earlier``), to be asked again where they differ, compared when first needed."""

    arrays: tuple[np.ndarray, ...]
    answered: dict[tuple, Answered] = field(default_factory=dict)
    kept_rows: int = 0
    current: set[tuple] = field(default_factory=set)     # keys answered on ``arrays``
    all_current: bool = True                             # every answer is of ``arrays``
    earlier: tuple[tuple[np.ndarray, ...], np.ndarray] | None = None   # arrays, rows new records took since
    changed: Changed | None = None                       # where ``arrays`` differ from the earlier ones

    def is_made_of(self, arrays: tuple[np.ndarray, ...]) -> bool:
        """Whether ``arrays`` are this offer's very arrays (a call within the same offer)."""
        return len(arrays) == len(self.arrays) and all(new is old for new, old in zip(arrays, self.arrays))

    def is_shaped_as(self, arrays: tuple[np.ndarray, ...]) -> bool:
        """Whether ``arrays`` could hold this offer's answers: as many rows, of the same kinds."""
        return len(arrays) == len(self.arrays) and all(new.shape == old.shape and new.dtype == old.dtype
                                                       for new, old in zip(arrays, self.arrays))

    def move_to(self, arrays: tuple[np.ndarray, ...], stale: np.ndarray) -> None:
        """Stand for ``arrays`` (shaped as this offer's), the universe rows ``stale`` having
        taken new records since; answers not known to be of the arrays it stood for go."""
        self._keep_current()
        self.earlier = (self.arrays, stale)
        self.arrays, self.current, self.all_current, self.changed = arrays, set(), False, None

    def changes(self) -> Changed | None:
        """Where the earlier answers are to be asked again (None: they are of these arrays); the
        earlier answers go when the arrays are not alike."""
        if self.earlier is not None:
            (earlier, stale), self.earlier = self.earlier, None
            changed = _changed(self.arrays, earlier, stale)
            if changed is None:
                self._keep_current()
            elif changed.any():
                self.changed = Changed.of(changed, self.arrays)
            else:
                self.all_current = True
        return self.changed

    def _keep_current(self) -> None:
        if not self.all_current:
            for key in self.answered.keys() - self.current:
                self.kept_rows -= len(self.answered.pop(key).matched)
            self.all_current = True


def _changed(arrays: tuple[np.ndarray, ...], earlier: tuple[np.ndarray, ...], stale: np.ndarray) -> np.ndarray | None:
    """Whether each position of ``arrays`` holds another universe row than ``earlier`` (arrays
    shaped alike), a ``stale`` one, or other values, bit for bit; None when more than
    :data:`MAX_CHANGED_SHARE` of them do, or when an offer of fewer than
    :data:`COMPARED_BY_POSITION_FROM` rows differs at all."""
    universe_rows = arrays[1]
    if len(universe_rows) < COMPARED_BY_POSITION_FROM:
        alike = (all(new.tobytes() == old.tobytes() for new, old in zip(arrays, earlier))
                 and set(universe_rows.tolist()).isdisjoint(stale.tolist()))
        return np.zeros(len(universe_rows), dtype=bool) if alike else None
    limit = MAX_CHANGED_SHARE * len(universe_rows)
    changed = universe_rows != earlier[1]
    if changed.sum() > limit:       # slots came and went: the positions no longer line up
        return None
    if len(stale) and len(universe_rows):
        marked = np.zeros(max(int(universe_rows.max()), int(stale.max())) + 1, dtype=bool)
        marked[stale] = True
        changed |= marked[universe_rows]
    for new, old in zip(arrays, earlier):
        differ = differ_bitwise(new, old)
        changed |= differ.any(axis=1) if differ.ndim > 1 else differ
    return None if changed.sum() > limit else changed


def differ_bitwise(new: np.ndarray, old: np.ndarray) -> np.ndarray:
    """Whether each element of ``new`` differs from ``old``'s (arrays shaped alike), bit for bit:
    a float64 is compared as the integer of its bits (NaN equal to itself, -0.0 not to 0.0)."""
    if new.dtype == np.float64:
        return new.view(np.int64) != old.view(np.int64)
    return new != old


class LatestOffers(Generic[Item]):
    """The last :data:`KEPT_OFFERS` things kept for shared offers, the latest asked for first:
    the evaluator's gathered columns and the shared offer's answers are kept for the same offers."""

    def __init__(self) -> None:
        self._items: list[Item] = []

    @property
    def latest(self) -> Item | None:
        return self._items[0] if self._items else None

    def find(self, wanted: Callable[[Item], bool]) -> Item | None:
        """The item ``wanted`` holds for, now the latest; None if none does."""
        for position, item in enumerate(self._items):
            if wanted(item):
                self._items.insert(0, self._items.pop(position))
                return item
        return None

    def add(self, item: Item) -> None:
        """``item`` as the latest, the oldest going past the bound."""
        self._items = [item, *self._items[:KEPT_OFFERS - 1]]


class SharedOffer:
    """The answers given to the requests asked on the cycle's shared offers, and on the first
    ones of the last cycle."""

    def __init__(self) -> None:
        self._live: LatestOffers[_Offered] = LatestOffers()     # offers asked on
        self._firsts: list[_Offered] = []             # this cycle's first offers
        self._last_firsts: list[_Offered] = []        # the last cycle's, not taken yet
        self._stale: list[np.ndarray] = []            # universe rows that changed since the last cycle

    @property
    def _current(self) -> _Offered | None:
        return self._live.latest

    def holds(self, rows: np.ndarray, amounts: np.ndarray, columns: tuple[np.ndarray, ...]) -> bool:
        """Whether a call on table ``rows`` at ``amounts`` is on a shared offer (both read-only),
        ``columns`` being what the offer's rows hold (their universe rows first). A new shared
        offer starts with no answers, unless it is one of the cycle's first offers and shaped as
        one of the last cycle's: it then takes that one's answers, to be asked again where they
        differ."""
        if rows.flags.writeable or amounts.flags.writeable:
            return False
        arrays = (amounts, *columns)
        if self._live.find(lambda offered: offered.is_made_of(arrays)) is not None:
            return True
        if len(self._firsts) < KEPT_OFFERS:
            offered = self._taken_from_last(arrays)
            self._firsts.append(offered)
        else:
            offered = _Offered(arrays)
        self._live.add(offered)
        return True

    def _taken_from_last(self, arrays: tuple[np.ndarray, ...]) -> _Offered:
        """A new offer of ``arrays``, with the answers of the first of the last cycle's first
        offers shaped alike, if one is left."""
        for position, last in enumerate(self._last_firsts):
            if last.answered and last.is_shaped_as(arrays):
                del self._last_firsts[position]
                last.move_to(arrays, np.concatenate([_NOTHING, *self._stale]))
                return last
        return _Offered(arrays)

    def next_cycle(self) -> None:
        """A new cycle begins: its first shared offers may take the answers of this one's."""
        self._last_firsts, self._firsts, self._live, self._stale = self._firsts, [], LatestOffers(), []

    def forget(self) -> None:
        """Drop every answer: what the universe rows hold changed."""
        self._live, self._firsts, self._last_firsts, self._stale = LatestOffers(), [], [], []

    def forget_rows(self, universe_rows: np.ndarray) -> None:
        """What ``universe_rows`` hold changed since the last cycle (new records stand there, or
        values read there follow the clock): its answers over them are to be asked again there.
        None of this cycle's offers holds them with their old content (they were rows of slots
        gone, or the cycle has not begun)."""
        if self._last_firsts:
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
        if offered.all_current or key in offered.current:
            return found, None
        changed = offered.changes()
        return (found, changed) if key in offered.answered else None

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
            offered.current.add(key)
