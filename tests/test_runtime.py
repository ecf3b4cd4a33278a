"""Garbage collection around cycles.

A cycle pauses automatic collection and leaves it as it found it, however cycles overlap; what the
cycle made is handed to the oldest generation, not left to the next young collection. HeapKeeper:
what exists at a tick is left out of later collections, and cyclic garbage among it is still
collected every ``full_every`` cycles.
"""

from __future__ import annotations

import gc
import weakref

import pytest

from negotiatord.runtime import HeapKeeper, garbage_collection_paused


@pytest.fixture(autouse=True)
def restore_collection():
    enabled = gc.isenabled()
    HeapKeeper().release()
    yield
    HeapKeeper().release()
    (gc.enable if enabled else gc.disable)()


# --- the pause around a cycle ----------------------------------------------------------------------

def test_collection_is_off_during_a_cycle_and_back_on_after():
    gc.enable()
    with garbage_collection_paused():
        assert not gc.isenabled()
        made = [[] for _ in range(5000)]
        assert gc.get_count()[0] >= 5000
    assert gc.isenabled()
    assert gc.get_count()[0] < 100, "the cycle's objects were left to the next young collection"
    assert gc.get_freeze_count() == 0 and made


def test_overlapping_cycles_restore_it_only_when_the_last_ends():
    gc.enable()
    first, second = garbage_collection_paused(), garbage_collection_paused()
    first.__enter__()
    second.__enter__()
    first.__exit__(None, None, None)
    assert not gc.isenabled()
    second.__exit__(None, None, None)
    assert gc.isenabled()


def test_collection_switched_off_before_stays_off():
    gc.disable()
    with garbage_collection_paused():
        pass
    assert not gc.isenabled()


def test_a_heap_frozen_before_the_cycle_stays_frozen_with_the_cycles_objects():
    HeapKeeper().tick()                                 # the daemon's heap keeper freezes the heap
    with garbage_collection_paused():
        made = [[] for _ in range(100)]
    # frozen objects are tracked but in no generation (CPython's permanent generation); the count of
    # frozen objects is no measure, since other threads free frozen objects meanwhile
    in_generations = {id(o) for o in gc.get_objects()}
    assert all(gc.is_tracked(m) and id(m) not in in_generations for m in made)


def test_a_heap_handed_back_is_not_frozen_again_by_the_next_cycle():
    keeper = HeapKeeper()
    keeper.tick()
    keeper.release()
    with garbage_collection_paused():
        made = [[] for _ in range(100)]
    assert gc.get_freeze_count() == 0 and made


def test_a_failing_cycle_restores_it_too():
    gc.enable()
    with pytest.raises(RuntimeError), garbage_collection_paused():
        raise RuntimeError("cycle failed")
    assert gc.isenabled()


# --- the daemon's frozen heap ----------------------------------------------------------------------

class Node:
    def __init__(self) -> None:
        self.partner: Node | None = None


def cyclic_garbage() -> weakref.ref:
    a, b = Node(), Node()
    a.partner, b.partner = b, a
    return weakref.ref(a)


def test_frozen_cycles_wait_for_the_periodic_full_collection():
    keeper = HeapKeeper(full_every=2)
    garbage = cyclic_garbage()              # unreachable, but only the cyclic garbage collector frees it
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


def test_young_garbage_is_collected_between_full_collections():
    keeper = HeapKeeper(full_every=100)
    keeper.tick()
    garbage = cyclic_garbage()              # made after the freeze: an ordinary young object
    gc.collect()
    assert garbage() is None


def test_a_released_heap_is_collected_again():
    """A stopped daemon unfreezes what it froze, so reference cycles made later are collected."""
    keeper = HeapKeeper()
    garbage = cyclic_garbage()
    keeper.tick()
    gc.collect()
    assert garbage() is not None, "frozen with the heap"
    keeper.release()
    assert gc.get_freeze_count() == 0
    gc.collect()
    assert garbage() is None


def test_full_collections_that_find_no_garbage_are_put_off_up_to_the_longest():
    """A replay's cycles mostly make no reference cycles: a full collection that frees nothing
    puts the next one off twice as long, up to ``longest``; one that finds garbage brings the
    next back to ``full_every``."""
    gc.collect()
    keeper = HeapKeeper(full_every=2, longest=8)
    try:
        collected = [cycle for cycle in range(1, 23) if keeper.after_cycle() is not None]
        assert collected == [2, 6, 14, 22]          # every 2, 4, 8, 8 cycles
        garbage = cyclic_garbage()
        collected = [cycle for cycle in range(23, 33) if keeper.after_cycle() is not None]
        assert garbage() is None
        assert collected == [30, 32]                # found at 30: the next is 2 cycles on
    finally:
        keeper.release()
