"""Keeping Python's cyclic garbage collector from stalling the daemon.

A daemon holding a large pool has a large, long-lived heap: a 45k-slot, 50k-job pool is ~900k
tracked objects, and one full (generation 2) collection walks them all in ~300 ms while holding
the GIL, in whichever thread triggered it; status requests wait that long. Nearly all of it (ads
in the store, the snapshot builder's records, a cycle's snapshot) lives for seconds or longer and
is freed by reference counting when replaced, not by the cyclic collector. So once a second the
surviving heap is frozen (``gc.freeze``: left out of later collections) and collections only see
what was made since. Cyclic garbage among frozen objects would wait, so every ``full_every``
cycles the heap is unfrozen and collected once, and that pause is logged.
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

    def tick(self) -> None:
        """Leave what exists now out of later collections (called about once a second)."""
        gc.freeze()

    def after_cycle(self) -> float | None:
        """Every ``full_every`` cycles, collect everything once; returns the seconds it took,
        None after the other cycles."""
        self.cycles += 1
        if self.cycles % self.full_every:
            return None
        started = time.perf_counter()
        gc.unfreeze()
        gc.collect()
        gc.freeze()
        return time.perf_counter() - started
