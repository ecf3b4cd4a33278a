"""Keeping CPython's cyclic garbage collector out of a cycle.

A full collection walks every container object the process holds: with an OSPool-sized pool in
memory (45k slot ads, 255k jobs, their records and autoclusters) one takes 0.3-0.7 s, and the
allocations a cycle makes trigger one in most cycles, at a random point; the young collections in
between cost another ~0.4 s at that scale. A cycle makes next to no reference cycles, so the
collector is paused while it runs; reference counting frees everything else as usual.

When it ends, what the cycle made is handed to the oldest generation without being walked
(``gc.freeze`` then ``gc.unfreeze``: moving the generations' lists, no walk). Re-enabling the
collector alone would leave all of it to the next young collection, a GIL-holding stall of ~0.2 s
in whichever thread allocates next. A process that freezes its heap itself (the daemon's
:mod:`negotiatord.service.heap`) keeps it frozen, the cycle's objects with it.

The collector's switch is process-wide, so pauses are counted: cycles running at the same time
(tests, a replay beside the daemon) re-enable it only when the last one ends, and only if it was
enabled when the first began.
"""

from __future__ import annotations

import gc
import threading
from contextlib import contextmanager
from typing import Iterator

_lock = threading.Lock()
_paused = 0                 # cycles running with the collector paused
_was_enabled = False        # the collector's state when the first of them began
_was_frozen = False         # whether the process had frozen its heap when the first began


@contextmanager
def collector_paused() -> Iterator[None]:
    """Run the block with automatic garbage collection off (as it was, once no cycle needs it off)."""
    global _paused, _was_enabled, _was_frozen
    with _lock:
        if _paused == 0:
            _was_enabled, _was_frozen = gc.isenabled(), gc.get_freeze_count() > 0
            gc.disable()
        _paused += 1
    try:
        yield
    finally:
        with _lock:
            _paused -= 1
            if _paused == 0:
                gc.freeze()
                if not _was_frozen:
                    gc.unfreeze()
                if _was_enabled:
                    gc.enable()
