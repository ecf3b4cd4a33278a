"""Per-expression fallback to classad2, through the reference evaluator's own pieces.

A slot whose expression the compiler does not cover is given a private
:class:`~negotiatord.evaluation.reference.ClassAdEvaluator` over a one-slot table, and only that
expression is asked of it, with the same ad copies, ``time()`` freezing, Request<Res> overrides and
conversions the reference uses for whole assessments. Nothing here re-implements semantics.
"""

from __future__ import annotations

import copy

import numpy as np

from negotiatord.classad.conversion import requirements_hold
from negotiatord.evaluation.reference import ClassAdEvaluator, _assign_amounts, _with_requests
from negotiatord.pool.autoclusters import Autocluster
from negotiatord.pool.snapshot import SlotTable
from negotiatord.settings import Settings

RANK_INDEX = {"pre_rank": 0, "job_rank": 1, "post_rank": 2}


class ReferenceFallback:
    def __init__(self, table: SlotTable, settings: Settings, now: int) -> None:
        self._table = table
        self._settings = settings
        self._now = now
        self._column = {a.lower(): i for i, a in enumerate(table.assets)}
        self._subs: dict[int, tuple[ClassAdEvaluator, list[int]]] = {}

    def _sub(self, row: int) -> tuple[ClassAdEvaluator, list[int]]:
        found = self._subs.get(row)
        if found is None:
            sub_table = SlotTable.from_slots([self._table.slots[row]])
            columns = [self._column[a.lower()] for a in sub_table.assets]
            found = self._subs[row] = (ClassAdEvaluator(sub_table, self._settings, self._now), columns)
        return found

    def weight(self, row: int, amounts: np.ndarray) -> float:
        sub, columns = self._sub(row)
        return sub._weight(sub._current_ad(0, amounts[columns]), 0)

    def value(self, root: str, row: int, autocluster: Autocluster, amounts: np.ndarray, used: np.ndarray,
              override: bool, asset: str | None = None) -> float:
        """One root expression for one pair, as the reference computes it inside ``assess``."""
        sub, columns = self._sub(row)
        slot = self._table.slots[row]
        slot_ad = sub._current_ad(0, amounts[columns])
        job = sub._request(autocluster)
        if root == "consumption":
            policy = sub._consumption[0]
            assert policy is not None          # consumption is asked of consumption-policy slots only
            spelled = next(a for a in slot.assets if a.lower() == asset)
            return sub._consume(job, slot_ad, spelled, policy[spelled])
        if root == "weight":
            return sub._weight(slot_ad, 0)
        if root == "weight_after":
            after = copy.deepcopy(slot_ad)
            _assign_amounts(after, slot.assets,
                            [amounts[self._column[a.lower()]] - used[self._column[a.lower()]] for a in slot.assets])
            return sub._weight(after, 0)
        if root in RANK_INDEX:
            return sub._rank(job, slot_ad)[RANK_INDEX[root]]
        # ClassAd.matches(ad) evaluates ad's Requirements with ad as MY: job.matches(slot) is the slot's
        check = ((lambda: requirements_hold(job, slot_ad)) if root == "slot_requirements"
                 else (lambda: requirements_hold(slot_ad, job)))
        if override:
            consumed = {a: used[self._column[a.lower()]] for a in slot.assets}
            return float(_with_requests(job, consumed, check))
        return float(check())
