"""Slot weights kept by slot record across cycles (fastpath/interpreter/kept_weights.py).

A weight is kept only where it cannot read the clock, so cycles negotiated with the kept
weights decide what cycles negotiated from scratch decide, and what classad2 decides
(tests/fastpath/test_compilations.py's ``negotiate_both_ways``), while the clock moves under
weights that read it: ``time()`` in ``SlotWeight``, ``CurrentTime`` the ad does not define read
through another attribute, ``eval()``. Weights that cannot read the clock are not worked out
again: the second cycle's evaluator weighs only the slots that may.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from negotiatord.accountant import AccountantState
from negotiatord.evaluation import ClassAdEvaluator
from negotiatord.fastpath.compiler.descriptions import AdDescriptions
from negotiatord.fastpath.interpreter.compilations import Compilations
from negotiatord.fastpath.interpreter.evaluator import FastEvaluator
from negotiatord.fastpath.interpreter.kept_weights import KeptSlotWeights
from negotiatord.pool.builder import SnapshotBuilder
from negotiatord.runtime import run_cycle
from tests.builders import expr, jobs, pslot, settings, static_slot
from tests.fastpath.test_compilations import NOW, negotiate_both_ways

# name -> the slot's SlotWeight and what else the slot advertises, and whether the weight may
# read the clock (CurrentTime is the clock only where the ad does not define it: classad2's
# rule, which classad/cycle_time.py freezes for the cycle)
WEIGHTS = {
    "plain": ("Cpus", {}, False),
    "own-clock": ("Cpus + CurrentTime % 3", {"CurrentTime": NOW}, False),
    "ticking": ("Cpus * (1 + (time() - Started) / 120)", {"Started": NOW - 60}, True),
    "aging": ("Cpus + Age", {"Age": expr("(CurrentTime - EnteredCurrentState) / 60"),
                             "EnteredCurrentState": NOW - 600}, True),
    "evaluated": ('Cpus + eval("Started") % 2', {"Started": NOW}, True),
}


def weighted_slots() -> list:
    """A p-slot per weight, and a claimed static slot per weight (its weight is the usage its
    customer is charged)."""
    made = []
    for name, (weight, attrs, _clock) in WEIGHTS.items():
        made.append(pslot(name, cpus=4, SlotWeight=expr(weight), **attrs))
        made.append(static_slot(f"{name}-claimed", State="Claimed", Activity="Busy", RemoteUser="carol@site",
                                AccountingGroup="carol@site", SlotWeight=expr(weight), **attrs))
    return made


def test_cycles_with_kept_weights_decide_as_from_scratch_and_as_classad2_while_the_clock_moves():
    config = settings()
    slot_ads = weighted_slots()
    job_ads = jobs("alice", 12, Requirements=expr("TARGET.Cpus >= RequestCpus"))
    cycles = [(slot_ads, job_ads, NOW + 90 * step) for step in range(4)]
    results = negotiate_both_ways(cycles, config, reference=True)
    # the clock moves the weights that read it: the costs and the usage charged change
    costs = [sorted(match.cost for match in result.matches) for result in results]
    assert costs[0] != costs[-1]
    assert results[0].usage != results[-1].usage


def test_a_weight_that_cannot_read_the_clock_is_not_worked_out_again():
    config = settings()
    slot_ads = weighted_slots()
    builder, descriptions, compilations = SnapshotBuilder(), AdDescriptions(), Compilations()
    snapshot = builder.build(slot_ads, [], config)
    rows = np.arange(len(snapshot.table))
    first = FastEvaluator(snapshot.table, config, NOW, descriptions, compilations)
    first.slot_weights(rows, snapshot.table.amounts)
    assert first.stats.weight_rows == len(slot_ads)

    later = NOW + 600
    snapshot = builder.build(slot_ads, [], config)          # the same records: the ads are unchanged
    second = FastEvaluator(snapshot.table, config, later, descriptions, compilations)
    weights = second.slot_weights(rows, snapshot.table.amounts)
    reads_clock = {name for name, (_weight, _attrs, clock) in WEIGHTS.items() if clock}
    weighed_again = [slot.name for slot in snapshot.table.slots if slot.name.removesuffix("-claimed") in reads_clock]
    assert second.stats.weight_rows == len(weighed_again)
    reference = ClassAdEvaluator(snapshot.table, config, later).slot_weights(rows, snapshot.table.amounts)
    np.testing.assert_array_equal(weights, reference)


def test_other_amounts_of_a_kept_slot_are_weighed_at_those_amounts():
    """A caller may weigh a slot at amounts it does not advertise; the weight kept for its own
    amounts is not the answer then."""
    config = settings()
    snapshot = SnapshotBuilder().build([pslot("p", cpus=8, SlotWeight=expr("Cpus * 2"))], [], config)
    rows = np.zeros(1, dtype=np.int64)
    evaluator = FastEvaluator(snapshot.table, config, NOW, AdDescriptions(), Compilations())
    own = evaluator.slot_weights(rows, snapshot.table.amounts)
    fewer = snapshot.table.amounts.copy()
    fewer[0, snapshot.table.assets.index("Cpus")] = 3
    assert own.tolist() == [16.0]
    assert evaluator.slot_weights(rows, fewer).tolist() == [6.0]
    assert evaluator.slot_weights(rows, snapshot.table.amounts).tolist() == [16.0]


@pytest.mark.parametrize("incremental", [True, False])
def test_negotiatord_incremental_cycle_false_keeps_nothing_across_cycles(incremental: bool):
    """``NEGOTIATORD_INCREMENTAL_CYCLE = False``: the compilations and descriptions a caller
    hands run_cycle are left alone; every cycle starts from scratch."""
    config = replace(settings(), incremental_cycle=incremental)
    descriptions, compilations = AdDescriptions(), Compilations()
    snapshot = SnapshotBuilder().build(weighted_slots(), jobs("alice", 2), config)
    result = run_cycle(snapshot, AccountantState(), config, NOW, descriptions=descriptions, compilations=compilations)
    assert len(result.matches) == 2
    assert (compilations.kept is not None) == incremental
    assert (len(descriptions) > 0) == incremental


def _weighed(slot_ads: list, descriptions: AdDescriptions, compilations: Compilations) -> tuple[list[float], int]:
    """The slots' weights through an evaluator keeping ``compilations`` (checked against
    classad2's), and how many it worked out rather than found kept."""
    config = settings()
    snapshot = SnapshotBuilder().build(slot_ads, [], config)
    rows = np.arange(len(snapshot.table))
    evaluator = FastEvaluator(snapshot.table, config, NOW, descriptions, compilations)
    weights = evaluator.slot_weights(rows, snapshot.table.amounts)
    reference = ClassAdEvaluator(snapshot.table, config, NOW).slot_weights(rows, snapshot.table.amounts)
    np.testing.assert_array_equal(weights, reference)
    return weights.tolist(), evaluator.stats.weight_rows


def test_a_new_record_whose_weight_reads_only_its_assets_finds_the_weight_at_its_amounts():
    """A p-slot re-advertised (a new ad, a new record) with the amounts another slot was weighed
    at: a weight that reads nothing but the slot's listed assets is the same, and is not worked
    out again."""
    descriptions, compilations = AdDescriptions(), Compilations()
    weight = expr("Cpus * 2 + Memory / 1024")
    _weighed([pslot("a", cpus=4, memory=2048, SlotWeight=weight)], descriptions, compilations)
    weights, worked_out = _weighed([pslot("a-again", cpus=4, memory=2048, SlotWeight=weight),
                                    pslot("b", cpus=3, memory=2048, SlotWeight=weight)], descriptions, compilations)
    assert weights == [10, 8] and worked_out == 1


@pytest.mark.parametrize("first, second", [
    (pslot("int", cpus=4, SlotWeight=expr("Cpus / 3")), pslot("real", cpus=4.0, SlotWeight=expr("Cpus / 3"))),
    (pslot("one", cpus=4, Factor=1, SlotWeight=expr("Cpus * Factor")),
     pslot("two", cpus=4, Factor=2, SlotWeight=expr("Cpus * Factor"))),
    (pslot("listed", cpus=4, SlotWeight=expr("Cpus + 1")),
     pslot("unlisted", cpus=4, MachineResources="Memory Disk Swap", SlotWeight=expr("Cpus + 1"))),
], ids=["an integer against a real", "an attribute besides the assets", "an asset the slot does not list"])
def test_slots_at_the_same_amounts_whose_weights_read_otherwise_do_not_share(first, second):
    """What the weight reads decides whether it is shared: the type of the asset's literal
    (classad2 divides an integer as an integer), an attribute that is no asset, an asset the
    slot does not list (then an ordinary attribute of its ad)."""
    descriptions, compilations = AdDescriptions(), Compilations()
    _weighed([first], descriptions, compilations)
    _weights, worked_out = _weighed([second], descriptions, compilations)
    assert worked_out == 1


def test_the_last_question_of_the_same_table_is_answered_again_without_a_step_per_slot():
    """A daemon's cycle over unchanged ads asks for the very table (the snapshot builder hands
    out the last one again) at the same rows and amounts: once every weight was kept, the last
    answer serves again; other amounts, rows or another table go through the slots."""
    config = settings()
    slot_ads = [pslot(f"p{i}", cpus=4 + i, SlotWeight=expr("Cpus * 2")) for i in range(3)]
    builder = SnapshotBuilder()
    table = builder.build(slot_ads, [], config).table
    rows = np.arange(len(table))
    kept = KeptSlotWeights()
    steps = []
    step = kept._memo.of
    kept._memo.of = lambda slot: steps.append(slot) or step(slot)       # type: ignore[method-assign]

    def asked(slots, at_rows, amounts) -> tuple[list[float], int, int]:
        steps.clear()
        weights, missing = kept.known(slots, at_rows, amounts)
        return weights.tolist(), len(missing), len(steps)

    assert asked(table.slots, rows, table.amounts)[1:] == (3, 3)     # nothing kept yet
    kept.keep(table.slots, rows, table.amounts, np.array([8.0, 10.0, 12.0]))
    assert asked(table.slots, rows, table.amounts) == ([8.0, 10.0, 12.0], 0, 3)
    assert asked(table.slots, rows, table.amounts) == ([8.0, 10.0, 12.0], 0, 0)
    again = builder.build(slot_ads, [], config).table
    assert again is table
    assert asked(again.slots, rows, again.amounts) == ([8.0, 10.0, 12.0], 0, 0)
    fewer = table.amounts.copy()
    fewer[0, table.assets.index("Cpus")] = 1
    assert asked(table.slots, rows, fewer)[1:] == (1, 3)
    assert asked(table.slots, rows, table.amounts) == ([8.0, 10.0, 12.0], 0, 3)    # the last had one missing
    assert asked(table.slots, rows[:2], table.amounts[:2]) == ([8.0, 10.0], 0, 2)


def test_a_cycle_with_no_idle_job_over_kept_weights_does_not_enter_the_match_space():
    """A replay runs a cycle whenever a job ends, idle jobs or not: with no job to assess and
    every weight kept, the cycle reads nothing into the match space (the space stays at the
    last cycle's clock), and the next cycle with jobs enters it and decides as from scratch."""
    config = settings()
    slot_ads = [pslot(f"p{i}", cpus=4, SlotWeight=expr("Cpus * 2")) for i in range(3)]
    builder, descriptions, compilations = SnapshotBuilder(), AdDescriptions(), Compilations()

    def cycle(job_ads: list, now: int):
        snapshot = builder.build(slot_ads, job_ads, config)
        return run_cycle(snapshot, AccountantState(), config, now, descriptions=descriptions,
                         compilations=compilations)

    cycle(jobs("alice", 2), NOW)
    kept = compilations.match_space
    assert kept is not None and kept.space is not None
    assert kept.space.context.now == NOW
    idle = cycle([], NOW + 60)
    assert kept.space.context.now == NOW and not idle.matches
    later = cycle(jobs("bob", 5), NOW + 120)
    assert kept.space.context.now == NOW + 120
    fresh = run_cycle(SnapshotBuilder().build(slot_ads, jobs("bob", 5), config), AccountantState(), config,
                      NOW + 120)
    assert [(m.job, m.slot, m.cost) for m in later.matches] == [(m.job, m.slot, m.cost) for m in fresh.matches]
    assert later.matches
