"""HeapKeeper: what exists at a tick is left out of later collections, and cyclic garbage among it
is still collected every ``full_every`` cycles."""

from __future__ import annotations

import gc
import weakref

from negotiatord.service.heap import HeapKeeper


class Node:
    def __init__(self) -> None:
        self.partner: Node | None = None


def cyclic_garbage() -> weakref.ref:
    a, b = Node(), Node()
    a.partner, b.partner = b, a
    return weakref.ref(a)


def test_frozen_cycles_wait_for_the_periodic_full_collection():
    keeper = HeapKeeper(full_every=2)
    try:
        garbage = cyclic_garbage()              # unreachable, but only the cyclic collector frees it
        keeper.tick()
        assert gc.get_freeze_count() > 0
        gc.collect()
        assert garbage() is not None, "a frozen cycle is not collected"
        assert keeper.after_cycle() is None     # cycle 1
        assert garbage() is not None
        paused = keeper.after_cycle()           # cycle 2: unfreeze and collect everything
        assert paused is not None and paused >= 0
        assert garbage() is None
        assert gc.get_freeze_count() > 0        # and the survivors are frozen again
    finally:
        gc.unfreeze()


def test_young_garbage_is_collected_between_full_collections():
    keeper = HeapKeeper(full_every=100)
    try:
        keeper.tick()
        garbage = cyclic_garbage()              # made after the freeze: an ordinary young object
        gc.collect()
        assert garbage() is None
    finally:
        gc.unfreeze()
