"""Keeping Python's cyclic garbage collector from stalling the daemon.

A daemon holding a large pool has a large, long-lived heap: a 45k-slot, 50k-job pool is ~900k
tracked objects, and one full (generation 2) collection walks them all in ~300 ms while holding
the GIL, in whichever thread triggered it; status requests wait that long. Nearly all of it (ads
in the store, the snapshot builder's records) lives from one cycle to the next and is freed by
reference counting when replaced, not by the cyclic collector. So after each cycle the surviving
heap is frozen (``gc.freeze``: left out of later collections), and the young objects a cycle
makes are collected as usual. Cyclic garbage among frozen objects would wait, so every
``full_every`` cycles the heap is unfrozen and collected once, and that pause is logged.
"""

from __future__ import annotations

import gc
import time
from dataclasses import dataclass

# A full collection about once an hour at HTCondor's default NEGOTIATOR_INTERVAL of 60 s.
FULL_COLLECTION_EVERY = 60


@dataclass
class HeapKeeper:
    full_every: int = FULL_COLLECTION_EVERY
    cycles: int = 0

    def after_cycle(self) -> float | None:
        """Freeze what survived the cycle; every ``full_every`` cycles first collect everything.
        Returns the seconds a full collection took, None when there was none."""
        self.cycles += 1
        paused = None
        if self.cycles % self.full_every == 0:
            started = time.perf_counter()
            gc.unfreeze()
            gc.collect()
            paused = time.perf_counter() - started
        gc.freeze()
        return paused
