"""A cycle pauses the garbage collector and leaves it as it found it, however cycles overlap;
what the cycle made is handed to the oldest generation, not left to the next young collection."""

import gc

import pytest

from negotiatord.cycle.collector import collector_paused


@pytest.fixture(autouse=True)
def restore_collector():
    enabled = gc.isenabled()
    gc.unfreeze()
    yield
    gc.unfreeze()
    (gc.enable if enabled else gc.disable)()


def test_the_collector_is_off_during_a_cycle_and_back_on_after():
    gc.enable()
    with collector_paused():
        assert not gc.isenabled()
        made = [[] for _ in range(5000)]
        assert gc.get_count()[0] >= 5000
    assert gc.isenabled()
    assert gc.get_count()[0] < 100, "the cycle's objects were left to the next young collection"
    assert gc.get_freeze_count() == 0 and made


def test_overlapping_cycles_restore_it_only_when_the_last_ends():
    gc.enable()
    first, second = collector_paused(), collector_paused()
    first.__enter__()
    second.__enter__()
    first.__exit__(None, None, None)
    assert not gc.isenabled()
    second.__exit__(None, None, None)
    assert gc.isenabled()


def test_a_collector_switched_off_before_stays_off():
    gc.disable()
    with collector_paused():
        pass
    assert not gc.isenabled()


def test_a_heap_frozen_before_the_cycle_stays_frozen_with_the_cycles_objects():
    gc.freeze()                                         # as the daemon's heap keeper does
    frozen = gc.get_freeze_count()
    with collector_paused():
        made = [[] for _ in range(100)]
    assert gc.get_freeze_count() >= frozen + 100 and made


def test_a_failing_cycle_restores_it_too():
    gc.enable()
    with pytest.raises(RuntimeError), collector_paused():
        raise RuntimeError("cycle failed")
    assert gc.isenabled()
