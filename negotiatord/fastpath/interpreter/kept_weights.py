"""Slot weights kept across cycles, so that a slot weighed before is not weighed again.

Every cycle weighs every slot of its table (``SlotWeight``, with no job: the pool size, the
usage each claim charges, the match cost's starting point). A slot's weight depends on its ad,
on the amounts of its assets and on nothing else, unless it reads the clock (``time()``, or a
``CurrentTime`` its ad does not define, as classad/cycle_time.py freezes them). So a weight is
kept:

* under the slot's record (weakly: it goes with the record) and the amounts it was worked out
  at: the records of a daemon's or a replay's unchanged ads outlive cycles (the snapshot builder
  keeps them). A weight that may read the clock is not kept.
* under what it reads, where it reads nothing but the slot's listed assets (HTCondor's default
  ``SLOT_WEIGHT = Cpus``): the expression's text, the slot's assets and which of them are integer
  literals (``Cpus / 3`` divides an integer), and the amounts. A p-slot re-advertised with what
  its last match left, a new record, then finds the weight of any slot weighed before at those
  amounts.

A cycle that asks for the very table (its slots' tuple: the snapshot builder hands out the last
one again for the same records) at the same rows and amounts as the last, all of whose weights
were kept, gets the last answer again without a step per slot.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from negotiatord.fastpath.compiler.descriptions import RecordMemo
from negotiatord.pool.significance import own_reads
from negotiatord.pool.slots import Slot

# Amounts kept per record: a record's own amounts are the ones every cycle asks for; others come
# only from a caller weighing a slot at amounts it does not advertise.
AMOUNTS_PER_SLOT = 4
# Weights kept by what they read, at most; then they start over (a pool meets ever new amounts).
MAX_BY_CONTENT = 100_000

_UNASKED = ()       # a record's content before it is asked for


@dataclass
class _Weights:
    # whether the slot's weight cannot read the clock, set with the weight's content
    # (:func:`_content_of`), which is asked before a weight is first filed
    clock_free: bool = False
    at: dict[bytes, float] = field(default_factory=dict)   # amounts (their bytes) -> weight
    content: tuple | None = _UNASKED                       # what the weight reads (None: more than assets)


class KeptSlotWeights:
    """Slot weights by slot record and by what they read, across the cycles of one ClassAd
    scoping mode and list of assets (the compilations that hold it start over when either
    changes)."""

    def __init__(self) -> None:
        self._memo: RecordMemo[_Weights] = RecordMemo(_Weights)
        self._by_content: dict[tuple[tuple, bytes], float] = {}
        # the last question whose every weight was kept: (slots, rows, amounts, weights)
        self._last: tuple[Sequence[Slot], np.ndarray, np.ndarray, np.ndarray] | None = None

    def known(self, slots: Sequence[Slot], rows: np.ndarray, amounts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The weights kept for table ``rows`` at ``amounts`` (NaN where none is), and the
        positions of ``rows`` whose weight must be worked out."""
        last = self._last
        if (last is not None and last[0] is slots and np.array_equal(last[1], rows)
                and np.array_equal(last[2], amounts, equal_nan=True)):
            return last[3].copy(), np.empty(0, dtype=np.int64)
        weights = np.full(len(rows), np.nan)
        missing: list[int] = []
        memo, by_content = self._memo, self._by_content
        for position, (row, at) in enumerate(zip(rows.tolist(), amounts)):
            slot = slots[row]
            kept = memo.of(slot)
            key = at.tobytes()
            weight = kept.at.get(key) if kept.at else None      # filed only when clock-free (keep)
            if weight is None and by_content:
                content = _content_of(kept, slot)
                weight = None if content is None else by_content.get((content, key))
            if weight is None:
                missing.append(position)
            else:
                weights[position] = weight
        self._last = None if missing else (slots, rows.copy(), amounts.copy(), weights.copy())
        return weights, np.array(missing, dtype=np.int64)

    def keep(self, slots: Sequence[Slot], rows: np.ndarray, amounts: np.ndarray, weights: np.ndarray) -> None:
        """File ``weights``, worked out for table ``rows`` at ``amounts``, unless the slot's
        weight is known to read the clock."""
        memo, by_content = self._memo, self._by_content
        if len(by_content) > MAX_BY_CONTENT:
            by_content.clear()
        for row, at, weight in zip(rows.tolist(), amounts, weights.tolist()):
            slot = slots[row]
            kept = memo.of(slot)
            key = at.tobytes()
            content = _content_of(kept, slot)
            if kept.clock_free and len(kept.at) < AMOUNTS_PER_SLOT:
                kept.at[key] = weight
            if content is not None:
                by_content[content, key] = weight


def _content_of(kept: _Weights, slot: Slot) -> tuple | None:
    """What ``slot``'s weight reads, asked once per record: its text, the slot's assets and
    which are integer literals, where the weight names nothing but listed assets (then it reads
    the amounts only, not the ad); None otherwise. Whether the weight may read the clock is
    asked with it, of the same reading: evaluated in its ad with no job, it or an attribute it
    reads calls ``time()``, or reads ``CurrentTime`` where the ad does not define it, or calls
    ``eval()``, which may build either from a string."""
    if kept.content is _UNASKED:
        text = str(slot.slot_weight)
        reads = own_reads(text, slot.ad)
        listed = {asset.lower() for asset in slot.assets}
        reads_assets_only = reads.names is not None and not reads.calls_time and reads.names <= listed
        kept.content = (text, slot.assets, slot.integer_amounts) if reads_assets_only else None
        kept.clock_free = not (reads.names is None or reads.calls_time
                               or ("currenttime" in reads.names and "CurrentTime" not in slot.ad))
    return kept.content
