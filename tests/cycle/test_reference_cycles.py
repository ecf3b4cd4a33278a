"""A cycle's objects are freed by reference counting when its result is let go.

A cycle pauses the garbage collector and hands what it made to the oldest generation
(:func:`negotiatord.runtime.garbage_collection_paused`), which CPython collects only when the
objects that survived young collections grow by a quarter: reference cycles among a cycle's objects
would hold all of them (snapshot columns, match lists, the fast path's tables) for that long, and a
replay of thousands of cycles over a 24k-slot pool piled gigabytes of them up. What the collector
finds after a cycle, with automatic collection off, is what the cycle left to it.
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterator

import pytest

from negotiatord.accountant import AccountantState
from negotiatord.accountant.records import CustomerRecord
from negotiatord.accountant.quota_timers import QuotaTimer
from negotiatord.cycle.result import CycleResult
from negotiatord.pool.builder import build_snapshot
from negotiatord.runtime import run_cycle
from negotiatord.settings import GroupSettings
from tests.builders import group, jobs, settings
from tests.cycle.test_preemption import NOW, UWCS, accountant, claimed


@pytest.fixture(autouse=True)
def collection_off() -> Iterator[None]:
    enabled = gc.isenabled()
    gc.collect()
    gc.disable()
    yield
    if enabled:
        gc.enable()


def cyclic_garbage(make_result: Callable[[], CycleResult]) -> int:
    """The objects the collector finds unreachable after ``make_result``'s cycle, its result let go.
    A first cycle loads the fast path's kernels, whose compiler makes cyclic garbage of its own."""
    make_result()
    gc.collect()
    result = make_result()
    assert result.preemptions, "the scenario must exercise the preemptors the cycle hands its helpers to"
    del result
    return gc.collect()


def test_a_priority_preemption_cycle_leaves_no_reference_cycle():
    config = settings(preemption_requirements=UWCS)

    def make() -> CycleResult:
        snapshot = build_snapshot([claimed("s1", "bob@site")], jobs("alice", 1), config)
        return run_cycle(snapshot, accountant(alice=1.0, bob=100.0), config, NOW)

    assert cyclic_garbage(make) == 0


def test_a_cycle_with_accounting_groups_leaves_no_reference_cycle():
    """The group quotas are allocated over a tree of the groups, twice a cycle."""
    config = settings(preemption_requirements=UWCS, groups=(group("physics", quota=1), group("chem", quota=1)))
    victims = [claimed("s1", "group_chem.bob@site", AccountingGroup="chem.bob@site"),
               claimed("s2", "physics.carol@site", AccountingGroup="physics.carol@site", NiceUser=True)]
    state = AccountantState([CustomerRecord(name, prio, None, 0.0, 0.0, None, None, NOW)
                             for name, prio in (("physics.alice@site", 1.0), ("chem.bob@site", 100.0),
                                                ("physics.carol@site", 100.0))])

    def make() -> CycleResult:
        return run_cycle(build_snapshot(victims, jobs("alice", 2, group="physics"), config), state, config, NOW)

    assert cyclic_garbage(make) == 0


def test_a_quota_preemption_cycle_leaves_no_reference_cycle():
    group = GroupSettings("group_a", None, None, False, False, None, limit={"cpus": 1},
                          quota_preemption_delay=600.0)
    config = settings(groups=(group,), quota_preemption=True, preemption_requirements=UWCS)
    slots = [claimed(f"s{n}", "group_a.bob@site", AccountingGroup="group_a.bob@site", GlobalJobId=f"bob#{n}")
             for n in range(2)]
    state = AccountantState().with_quota_timers({"group_a": QuotaTimer("group_a", {"cpus": 1}, 600.0, NOW - 600)})

    def make() -> CycleResult:
        return run_cycle(build_snapshot(slots, jobs("carol", 1), config), state, config, NOW)

    assert cyclic_garbage(make) == 0


def test_a_cycle_whose_snapshot_outlives_it_leaves_no_reference_cycle():
    """A daemon's snapshot builder keeps each unchanged ad's records from one cycle to the next,
    so the fast path's descriptions of those ads (weakly keyed by record) outlive an evaluator made
    for one cycle: the cache, not the records, is let go first."""
    config = settings(preemption_requirements=UWCS)
    snapshot = build_snapshot([claimed("s1", "bob@site")], jobs("alice", 1), config)

    def make() -> CycleResult:
        return run_cycle(snapshot, accountant(alice=1.0, bob=100.0), config, NOW)

    assert cyclic_garbage(make) == 0
