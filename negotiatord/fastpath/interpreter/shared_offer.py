"""What the requests assessed on one shared offer have in common, kept until the offer changes.

Until a match changes the pool, the cycle offers every request the same read-only rows and
amounts (PoolState.offered_to), and the autoclusters of several submitters often hold alike
jobs. So on that offer a request whose job values, compiled roots and job-and-slot answers are
those of one assessed before takes its answer (:class:`Answered`: its matched rows only, the
rest being unmatched alike). Answers are kept for the last shared offer only, and bounded by
:data:`MAX_KEPT_ROWS`: a fill's first offer matches most of an empty pool for every request.
"""

from __future__ import annotations

from dataclasses import dataclass
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


class SharedOffer:
    """The answers given to the requests asked on the last shared offer."""

    def __init__(self) -> None:
        self._offer: tuple[np.ndarray, np.ndarray] | None = None
        self._answered: dict[tuple, Answered] = {}
        self._kept_rows = 0

    def holds(self, rows: np.ndarray, amounts: np.ndarray) -> bool:
        """Whether a call on ``rows`` at ``amounts`` is on the shared offer (both read-only);
        what was kept for another offer goes."""
        if rows.flags.writeable or amounts.flags.writeable:
            return False
        if self._offer is None or self._offer[0] is not rows or self._offer[1] is not amounts:
            self._offer = (rows, amounts)
            self._answered, self._kept_rows = {}, 0
        return True

    def answered(self, key: tuple, stack: Stack, job_static: object) -> Answered | None:
        """The answer filed under ``key`` for these very ``stack`` and job-and-slot answers."""
        found = self._answered.get(key)
        return found if found is not None and found.stack is stack and found.job_static is job_static else None

    def keep_answer(self, key: tuple, answered: Answered) -> None:
        """File ``answered`` under ``key``, while the offer's budget of rows lasts."""
        if self._kept_rows + len(answered.matched) <= MAX_KEPT_ROWS:
            self._kept_rows += len(answered.matched)
            self._answered[key] = answered
