"""Slot weights kept by slot record, so that an unchanged slot's weight is not worked out again.

Every cycle weighs every slot of its table (``SlotWeight``, with no job: the pool size, the
usage each claim charges, the match cost's starting point). A slot's weight depends on its ad,
on the amounts of its assets and on nothing else, unless it reads the clock (``time()``, or a
``CurrentTime`` its ad does not define, as classad/cycle_time.py freezes them). The records of a
daemon's or a replay's unchanged ads outlive cycles (the snapshot builder keeps them), so a weight
is kept under its record (weakly: it goes with the record) and the amounts it was worked out
at; a weight that may read the clock is never kept.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import classad2
import numpy as np

from negotiatord.classad.cycle_time import mentions_time
from negotiatord.fastpath.compiler.descriptions import RecordMemo
from negotiatord.pool.significance import own_references
from negotiatord.pool.slots import Slot

# Amounts kept per record: a record's own amounts are the ones every cycle asks for; others come
# only from a caller weighing a slot at amounts it does not advertise.
AMOUNTS_PER_SLOT = 4


@dataclass
class _Weights:
    # whether the slot's weight cannot read the clock; None: not asked yet. It is asked when a
    # kept weight could first be used, so a cycle from scratch, which uses none, never asks it.
    clock_free: bool | None = None
    at: dict[bytes, float] = field(default_factory=dict)   # amounts (their bytes) -> weight


class KeptSlotWeights:
    """Slot weights by slot record and amounts, across the cycles of one ClassAd scoping mode
    (the compilations that hold it start over when the mode changes)."""

    def __init__(self) -> None:
        self._memo: RecordMemo[_Weights] = RecordMemo(_Weights)

    def known(self, slots: Sequence[Slot], rows: np.ndarray, amounts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The weights kept for table ``rows`` at ``amounts`` (NaN where none is), and the
        positions of ``rows`` whose weight must be worked out."""
        weights = np.full(len(rows), np.nan)
        missing: list[int] = []
        memo = self._memo
        for position, (row, at) in enumerate(zip(rows.tolist(), amounts)):
            slot = slots[row]
            kept = memo.of(slot)
            weight = kept.at.get(at.tobytes()) if kept.at else None
            if weight is not None and kept.clock_free is None:
                kept.clock_free = not _reads_clock(str(slot.slot_weight), slot.ad)
                if not kept.clock_free:
                    kept.at.clear()
                    weight = None
            if weight is None:
                missing.append(position)
            else:
                weights[position] = weight
        return weights, np.array(missing, dtype=np.int64)

    def keep(self, slots: Sequence[Slot], rows: np.ndarray, amounts: np.ndarray, weights: np.ndarray) -> None:
        """File ``weights``, worked out for table ``rows`` at ``amounts``, unless the slot's
        weight is known to read the clock."""
        memo = self._memo
        for row, at, weight in zip(rows.tolist(), amounts, weights.tolist()):
            kept = memo.of(slots[row])
            if kept.clock_free is not False and len(kept.at) < AMOUNTS_PER_SLOT:
                kept.at[at.tobytes()] = weight


def _reads_clock(expression: str, ad: classad2.ClassAd) -> bool:
    """Whether ``expression``, evaluated in ``ad`` with no job, may read the clock: it or an
    attribute it reads (followed through the ad, iteratively: attributes may chain deep) calls
    ``time()``, or reads ``CurrentTime`` where the ad does not define it. ``eval()`` may build
    either from a string, so any call to it counts as reading the clock."""
    pending, seen = [expression], set()
    while pending:
        text = pending.pop()
        if mentions_time(text) or "eval" in text.lower():
            return True
        for name in own_references(text):
            folded = name.lower()
            if folded in seen:
                continue
            seen.add(folded)
            if name in ad:
                pending.append(str(ad.lookup(name)))
            elif folded == "currenttime":
                return True
    return False
