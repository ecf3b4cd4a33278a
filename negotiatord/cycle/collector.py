"""Keeping CPython's cyclic garbage collector out of a cycle.

A full collection walks every container object the process holds: with an OSPool-sized pool in
memory (45k slot and 255k job ads, their Slot and Job records and autoclusters) one takes 0.3-0.7 s,
and the allocations a cycle makes are enough to trigger one in most cycles, at a random point. A
cycle makes next to no reference cycles, so such a collection would find nothing of the cycle's
to free; pausing the collector while a cycle runs leaves that walk to the next allocation
threshold after it, outside the negotiation's latency. Reference counting frees everything else
as usual.

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


@contextmanager
def collector_paused() -> Iterator[None]:
    """Run the block with automatic garbage collection off (as it was, once no cycle needs it off)."""
    global _paused, _was_enabled
    with _lock:
        if _paused == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
        _paused += 1
    try:
        yield
    finally:
        with _lock:
            _paused -= 1
            if _paused == 0 and _was_enabled:
                gc.enable()
