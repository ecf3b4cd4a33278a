"""The cycle's working view of the slot table: what is still on offer and what is left of it."""

from __future__ import annotations

import numpy as np

from negotiatord.pool.snapshot import SlotTable

EPSILON = 1e-9


class PoolState:
    """Mutable per-cycle copy of the columns matches change.

    ``version`` counts changes to a slot, so a candidate list built earlier can tell which of its
    entries must be assessed again.
    """

    def __init__(self, table: SlotTable, weights: np.ndarray) -> None:
        self.amounts = table.amounts.copy()
        self.weights = weights.copy()
        self.available = table.candidate & ~np.isnan(weights)
        self.version = np.zeros(len(table), dtype=np.int64)
        self._consumption_policy = table.consumption_policy
        self._offered: tuple[np.ndarray, np.ndarray] | None = None

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

    def take(self, row: int, consumption: np.ndarray, cost: float) -> None:
        """Record a match on ``row``: a consumption-policy slot gives up what the job consumes and
        stays on offer while its SlotWeight is positive; any other slot is taken whole."""
        self.version[row] += 1
        self._offered = None
        if not self._consumption_policy[row]:
            self.available[row] = False
            return
        taken = np.nan_to_num(consumption, nan=0.0)
        self.amounts[row] = self.amounts[row] - taken
        self.weights[row] = self.weights[row] - cost
        if self.weights[row] <= EPSILON:
            self.available[row] = False

    def withdraw(self, row: int) -> None:
        """Take ``row`` off the offer for the rest of the cycle, whatever is left of it."""
        self.available[row] = False
        self._offered = None
