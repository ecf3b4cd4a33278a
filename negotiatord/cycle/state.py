"""The cycle's working view of the slot table: what is still on offer and what is left of it."""

from __future__ import annotations

import numpy as np

from negotiatord.evaluation.loading import EPSILON as EPSILON
from negotiatord.evaluation.loading import PoolColumns
from negotiatord.pool.snapshot import SlotTable


class PoolState(PoolColumns):
    """The slot table's columns that matches change, copied for one cycle."""

    def __init__(self, table: SlotTable, weights: np.ndarray) -> None:
        super().__init__(table.amounts.copy(), weights.copy(), table.candidate & ~np.isnan(weights),
                         table.consumption_policy)
        self._offered: tuple[np.ndarray, np.ndarray] | None = None
        # the rows of claimed partitionable slots offered to one schedd's jobs only, by schedd
        self._reserved: dict[str, list[int]] = {}
        for row, slot in enumerate(table.slots):
            if slot.claimed_for:
                self._reserved.setdefault(slot.claimed_for, []).append(row)
        self._offered_to: dict[str, tuple[np.ndarray, np.ndarray]] = {}

    def offered(self) -> tuple[np.ndarray, np.ndarray]:
        """The rows on offer and their amounts, as read-only arrays that stay the same objects until
        a match changes the pool: every autocluster assessed in between is assessed over one
        gather (and the evaluator can tell it is the same set of rows)."""
        if self._offered is None:
            rows = np.flatnonzero(self.available)
            amounts = self.amounts[rows]
            rows.setflags(write=False)
            amounts.setflags(write=False)
            self._offered = (rows, amounts)
        return self._offered

    def offered_to(self, schedd: str) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`offered`, less the claimed partitionable slots another schedd than ``schedd``
        claimed (``matchmakingAlgorithm`` offers such a slot to its ``RemoteScheddName``'s jobs
        only); the same objects for one schedd until a match changes the pool."""
        rows, amounts = self.offered()
        refused = [row for owner, owned in self._reserved.items() if owner != schedd for row in owned]
        if not refused:
            return rows, amounts
        if schedd not in self._offered_to:
            kept = ~np.isin(rows, refused)
            mine, theirs = rows[kept], amounts[kept]
            mine.setflags(write=False)
            theirs.setflags(write=False)
            self._offered_to[schedd] = (mine, theirs)
        return self._offered_to[schedd]

    def changed(self) -> None:
        self._offered = None
        self._offered_to.clear()

    def release(self, rows: tuple[int, ...], into: int, held: np.ndarray) -> None:
        """Preempted dynamic slots ``rows``, which held ``held[rows]``, give their resources and
        SlotWeight back to their partitionable slot ``into`` (ALLOW_PSLOT_PREEMPTION)."""
        self.amounts[into] = self.amounts[into] + np.nansum(held[list(rows)], axis=0)
        self.weights[into] = self.weights[into] + float(np.nansum(self.weights[list(rows)]))
        self.version[into] += 1
        self.changed()
