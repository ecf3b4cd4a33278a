"""The match space kept across cycles over slot records (fastpath/interpreter/kept_space.py).

Each sequence is negotiated with kept compilations and from scratch, and where cheap with the
classad2 reference (tests/fastpath/test_compilations.py's ``negotiate_both_ways``): the same
matches, costs and order. The sequences exercise what keeping the space adds:

* slots of known images joining the universe, which compilations take in without compiling again;
* updated ads, whose new records take the universe rows of the old ones;
* slots of a new image whose resolution asks the jobs something a compilation was not filed by;
* the cycle's clock moving under slot-only and job-and-slot conjuncts that read ``time()``, and
  under classad2 steps that read it, asked again only where the values they read changed;
* the configuration changing an expression that keeps its root's name;
* records of slots gone piling up, until the space starts over;
* a cycle failing half-way, after which the next starts over;
* the answers kept per distinct job values passing their bound;
* a cycle over unchanged ads taking the last cycle's answers, and asking again where a slot changed;
* hypothesis-drawn pools whose slots keep their records, get new ones (of their image or
  another) or leave, while the clock moves.
"""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace

import classad2
import numpy as np

import hypothesis.strategies as st
import pytest
from hypothesis import HealthCheck, given, settings as hypothesis_settings

from negotiatord.accountant import AccountantState
from negotiatord.fastpath.compiler.descriptions import AdDescriptions
from negotiatord.fastpath.interpreter.compilations import Compilations
from negotiatord.fastpath.interpreter import kernels, root_families, shared_offer
from negotiatord.fastpath.interpreter import space as space_module
from negotiatord.fastpath.interpreter.one_call import OneCallAssessment
from negotiatord.fastpath.interpreter.root_families import CompiledRoot
from negotiatord.fastpath.interpreter.space import RootSpec
from negotiatord.fastpath.interpreter.stacks import Stacks
from negotiatord.pool.builder import SnapshotBuilder
from negotiatord.runtime import run_cycle
from tests.builders import expr, jobs, pslot, settings, static_slot
from tests.cycle.test_preemption import NOW as PREEMPTION_NOW, UWCS, accountant, claimed
from tests.fastpath.test_compilations import JOB_VARIANTS, NOW, SLOT_VARIANTS, Cycle, decided, negotiate_both_ways


@contextmanager
def counted_compilations(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The names of the roots a space compiles (not those found compiled), in order."""
    compiled: list[str] = []

    def counting(spec: RootSpec, leaf_of: np.ndarray) -> CompiledRoot:
        compiled.append(spec.name)
        return CompiledRoot(spec, leaf_of)

    monkeypatch.setattr(root_families, "CompiledRoot", counting)
    yield compiled


def counted_kernel_calls(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The rows of each assessment kernel call from now on, in order."""
    calls: list[int] = []
    assess_rows = kernels.assess_rows

    def counting(universe_rows: np.ndarray, *arguments: object) -> bool:
        calls.append(len(universe_rows))
        return assess_rows(universe_rows, *arguments)

    monkeypatch.setattr(kernels, "assess_rows", counting)
    return calls


def starting(start: str) -> dict:
    """A slot's START, and Requirements that read it (as HTCondor's startd advertises them)."""
    return {"Start": expr(start), "Requirements": expr("START && TARGET.RequestCpus <= MY.Cpus && "
                                                       "TARGET.RequestMemory <= MY.Memory")}


def glideins(first: int, count: int) -> list:
    """``count`` p-slots of one image, named from ``first`` on."""
    return [pslot(f"glidein{i}", cpus=4, memory=8192, **starting("TARGET.RequestDisk <= MY.Disk"))
            for i in range(first, first + count)]


def queue() -> list:
    return [*jobs("alice", 6, memory=1000, Requirements=expr("TARGET.Cpus >= RequestCpus")),
            *jobs("bob", 4, cluster=2, cpus=2, memory=3000, Rank=expr("TARGET.Memory"))]


def test_a_later_cycle_over_the_same_slots_compiles_nothing(monkeypatch):
    config = settings()
    slot_ads, job_ads = glideins(0, 4), queue()
    with counted_compilations(monkeypatch) as compiled:
        results = negotiate_both_ways([(slot_ads, job_ads, NOW), (slot_ads, job_ads, NOW + 60)], config)
    # the fresh evaluators compile everything each cycle; the kept space only in the first
    per_cycle = len(compiled) // 3
    assert per_cycle > 0 and len(compiled) == 3 * per_cycle
    assert len(results[1].matches) == len(results[0].matches) > 0


def test_slots_of_a_known_image_joining_are_taken_in_without_compiling(monkeypatch):
    """New records of the image the space holds (a glidein pool growing) resolve by their class:
    the compilations take them in, and the cycle decides as one from scratch."""
    config = settings()
    job_ads = queue()
    builder, descriptions, compilations = SnapshotBuilder(), AdDescriptions(), Compilations()
    first = glideins(0, 2)
    grown = [*first, *glideins(2, 3)]
    with counted_compilations(monkeypatch) as compiled:
        run_cycle(builder.build(first, job_ads, config), AccountantState(), config, NOW,
                  descriptions=descriptions, compilations=compilations)
        before = len(compiled)
        kept = run_cycle(builder.build(grown, job_ads, config), AccountantState(), config, NOW + 60,
                         descriptions=descriptions, compilations=compilations)
        assert len(compiled) == before
    fresh = run_cycle(SnapshotBuilder().build(grown, job_ads, config), AccountantState(), config, NOW + 60)
    assert decided(kept) == decided(fresh)
    assert {match.slot for match in kept.matches} & {"glidein2", "glidein3", "glidein4"}


def test_updated_ads_take_the_places_of_their_old_records(monkeypatch):
    """A pool re-advertising some of its slots each cycle (new records of the same image, other
    amounts): each new record takes the universe row of a slot gone of its class, so nothing is
    compiled and no job's stack is laid out again; the cycles decide as from scratch and as
    classad2."""
    config = settings()
    # the slots' Site is read by a job-and-slot conjunct (bob's) and a classad2 step (alice's)
    job_ads = [*jobs("alice", 6, Sites="east,north",
                     Requirements=expr("stringListMember(TARGET.Site, MY.Sites) && TARGET.Cpus >= RequestCpus")),
               *jobs("bob", 4, cluster=2, cpus=2, Requirements=expr("TARGET.Site == \"west\""),
                     Rank=expr("TARGET.Memory"))]

    def glidein(index: int, site: str, cpus: int = 4) -> classad2.ClassAd:
        return pslot(f"glidein{index}", cpus=cpus, memory=8192 - 1024 * (4 - cpus), Site=site,
                     **starting("TARGET.RequestDisk <= MY.Disk"))

    slot_ads = [glidein(i, ("east", "west")[i % 2]) for i in range(6)]
    cycles = [(list(slot_ads), job_ads, NOW)]
    for step in range(1, 5):
        slot_ads[step] = glidein(step, ("west", "east")[step % 2], cpus=4 - step % 3)
        cycles.append((list(slot_ads), job_ads, NOW + 60 * step))
    stacks_made: list[int] = []
    original = Stacks._make

    def counting(self: Stacks, *args: object) -> object:
        stacks_made.append(1)
        return original(self, *args)

    monkeypatch.setattr(Stacks, "_make", counting)
    builder, descriptions, compilations = SnapshotBuilder(), AdDescriptions(), Compilations()
    with counted_compilations(monkeypatch) as compiled:
        for step, (slots, job_ads_now, now) in enumerate(cycles):
            kept = run_cycle(builder.build(slots, job_ads_now, config), AccountantState(), config, now,
                             descriptions=descriptions, compilations=compilations)
            if step == 0:
                first = (len(compiled), len(stacks_made))
            assert len(kept.matches) > 0
    # a new record's weight may be worked out in the cycle's weight space (weights are kept by
    # record, and by text and amounts): nothing else is compiled
    assert set(compiled[first[0]:]) <= {"weight"}
    assert len(stacks_made) == first[1]
    negotiate_both_ways(cycles, config, reference=True)


@pytest.mark.parametrize("slots", [4, 70])
def test_a_cycle_over_unchanged_ads_takes_the_last_cycles_answers(monkeypatch, slots):
    """A daemon's cycle over ads that did not change offers first what the last one did, in new
    arrays of the same content: its requests take the last cycle's answers (shared_offer.py) and
    the kernel is not asked, though the clock moved (no slot reads it). A slot re-advertised
    with other amounts, or with another Site that the jobs read, gets a new record, which takes
    the old one's universe row: on an offer compared position by position (70 slots) the kernel
    is asked again on that slot's row only, on a small one (4 slots, compared whole) on every
    row. Every cycle decides as one from scratch."""
    config = settings()
    job_ads = [*jobs("alice", 6, memory=1000, Requirements=expr('TARGET.Site == "east" && TARGET.Cpus >= RequestCpus')),
               *jobs("bob", 4, cluster=2, cpus=2, memory=3000, Rank=expr("TARGET.Memory"))]
    kernel_calls = counted_kernel_calls(monkeypatch)

    def glidein(index: int, cpus: int = 4, site: str = "east") -> classad2.ClassAd:
        return pslot(f"glidein{index}", cpus=cpus, memory=8192, Site=site,
                     **starting("TARGET.RequestDisk <= MY.Disk"))

    first = [glidein(i) for i in range(slots)]
    shrunk = [*first[:3], glidein(3, cpus=2), *first[4:]]
    moved = [glidein(0, site="west"), *shrunk[1:]]
    # the same ad objects from one cycle to the next, as the daemon's store keeps them
    pools = [first, first, shrunk, shrunk, moved, moved]
    builder, descriptions, compilations = SnapshotBuilder(), AdDescriptions(), Compilations()
    asked, alices = [], []
    for step, slot_ads in enumerate(pools):
        now = NOW + 60 * step
        kernel_calls.clear()
        kept = run_cycle(builder.build(slot_ads, job_ads, config), AccountantState(), config, now,
                         descriptions=descriptions, compilations=compilations)
        asked.append(list(kernel_calls))
        alices.append({match.slot for match in kept.matches if match.submitter == "alice@site"})
        fresh = run_cycle(SnapshotBuilder().build(slot_ads, job_ads, config), AccountantState(), config, now)
        assert decided(kept) == decided(fresh), f"cycle {step}"
    assert "glidein0" in alices[3] and "glidein0" not in alices[4] | alices[5]
    assert asked[0] and asked[1] == asked[3] == asked[5] == []
    again = 1 if slots >= shared_offer.COMPARED_BY_POSITION_FROM else slots
    for step in (2, 4):
        assert len(asked[step]) == len(asked[0]) and set(asked[step]) == {again}, f"cycle {step}"


def test_a_preemption_cycle_takes_the_last_cycles_answers_on_both_its_offers(monkeypatch):
    """With preemption on, a cycle offers each request the slots on offer and then the claimed
    ones (its match list and its preemption list): two shared offers, asked in turn. A daemon's
    later cycle over the same ads, a minute on, takes the last cycle's answers on both and asks
    the kernel nothing, deciding as one from scratch (the UWCS policy's ``time() -
    EnteredCurrentState > 3600`` reads the clock, but its answer stands). The first cycle's
    claimed slots join the universe after its first offer, so the second asks again once."""
    config = settings(consider_preemption=True, preemption_requirements=UWCS)
    slot_ads = [*(static_slot(f"idle{i}", cpus=1, memory=1024) for i in range(2)),
                *(claimed(f"busy{i}", "carol@site", Site=("east", "west")[i % 2]) for i in range(70))]
    job_ads = [*jobs("alice", 5, memory=500, Requirements=expr('TARGET.Site =!= "west"')),
               *jobs("bob", 5, cluster=2, memory=800)]
    state = accountant(alice=0.5, bob=0.5, carol=500.0)
    kernel_calls = counted_kernel_calls(monkeypatch)
    builder, descriptions, compilations = SnapshotBuilder(), AdDescriptions(), Compilations()
    asked = []
    for step in range(3):
        now = PREEMPTION_NOW + 60 * step
        kernel_calls.clear()
        kept = run_cycle(builder.build(slot_ads, job_ads, config), state, config, now,
                         descriptions=descriptions, compilations=compilations)
        asked.append(list(kernel_calls))
        fresh = run_cycle(SnapshotBuilder().build(slot_ads, job_ads, config), state, config, now)
        assert decided(kept) == decided(fresh), f"cycle {step}"
        assert {p.submitter for p in kept.preemptions} == {"alice@site", "bob@site"}
    assert set(asked[0]) == {2, 70} and asked[2] == []


def test_a_new_image_asking_the_jobs_something_new_is_compiled_for():
    """The joining slots' START reads a job attribute no earlier slot's did: the compilations made
    before cannot serve them (they were filed by what they read of the jobs), and the jobs that
    set it and those that do not now part."""
    config = settings()
    job_ads = [*jobs("alice", 3, WantDocker=True), *jobs("bob", 3, cluster=2)]
    docker = [pslot(f"docker{i}", cpus=2, **starting("TARGET.WantDocker =?= true")) for i in range(2)]
    first = glideins(0, 1)
    cycles = [(first, job_ads, NOW), ([*first, *docker], job_ads, NOW + 60), ([*first, *docker], job_ads, NOW + 120)]
    results = negotiate_both_ways(cycles, config, reference=True)
    on_docker = {match.submitter.split("@")[0] for match in results[1].matches if match.slot.startswith("docker")}
    assert on_docker == {"alice"}


def test_clock_reading_conjuncts_follow_the_cycles_clock():
    """A slot-only START (``time() < Retire``) and a job-and-slot conjunct
    (``TARGET.Retire - time() > MaxRuntime``) read the cycle's clock: over the same records, as the
    clock moves, the slots retire and the long jobs stop fitting before the short ones."""
    config = settings()
    slot_ads = [pslot(f"retiring{i}", cpus=2, Retire=NOW + 200 + 100 * i, **starting("time() < MY.Retire"))
                for i in range(3)]
    job_ads = [*jobs("alice", 4, MaxRuntime=30, Requirements=expr("TARGET.Retire - time() > MY.MaxRuntime")),
               *jobs("bob", 4, cluster=2, MaxRuntime=150,
                     Requirements=expr("TARGET.Retire - time() > MY.MaxRuntime"))]
    cycles = [(slot_ads, job_ads, NOW + 60 * step) for step in range(8)]
    results = negotiate_both_ways(cycles, config, reference=True)
    owners = [{match.submitter.split("@")[0] for match in result.matches} for result in results]
    assert owners[0] == {"alice", "bob"}
    assert owners[4] == {"alice", "bob"}      # at +240 s bob's 150 s still fit before the last retires
    assert owners[5] == {"alice"}             # at +300 s only alice's 30 s do
    assert owners[-1] == set()


def test_a_moving_clock_asks_again_only_the_slots_whose_clock_reading_values_changed(monkeypatch):
    """The OSPool's glidein STARTs read the clock in a job-and-slot conjunct:
    ``ifThenElse(TARGET.Long, MY.ToDie - time() >= 600, MY.ToDie - time() >= 60)`` (the real
    ones compare ``GLIDEIN_ToDie - CurrentTime`` to 144000 or 36000 by JobDurationCategory). The
    slot values the conjunct reads are the two comparisons, and each minute one glidein's first
    turns false. The next cycle asks the kernel again on that glidein's row only, not on the
    seventy, and decides as one from scratch: the long jobs leave the glidein, the short stay."""
    config = settings()
    start = "ifThenElse(TARGET.Long =?= true, MY.ToDie - time() >= 600, MY.ToDie - time() >= 60)"
    slot_ads = [pslot(f"glidein{i}", cpus=1, memory=8192, ToDie=NOW + 630 + 60 * i, **starting(start))
                for i in range(70)]
    # each set of jobs prefers the glideins dying soonest, so each cycle one of theirs turns
    job_ads = [*jobs("alice", 3, Long=True, Rank=expr("-TARGET.ToDie")),
               *jobs("bob", 3, cluster=2, Long=False, Rank=expr("-TARGET.ToDie"))]
    kernel_calls = counted_kernel_calls(monkeypatch)
    builder, descriptions, compilations = SnapshotBuilder(), AdDescriptions(), Compilations()
    asked, matched = [], []
    for step in range(4):
        now = NOW + 60 * step
        kernel_calls.clear()
        kept = run_cycle(builder.build(slot_ads, job_ads, config), AccountantState(), config, now,
                         descriptions=descriptions, compilations=compilations)
        asked.append(list(kernel_calls))
        matched.append({owner: {m.slot for m in kept.matches if m.submitter.startswith(owner)}
                        for owner in ("alice", "bob")})
        fresh = run_cycle(SnapshotBuilder().build(slot_ads, job_ads, config), AccountantState(), config, now)
        assert decided(kept) == decided(fresh), f"cycle {step}"
    for step in (1, 2, 3):
        assert f"glidein{step - 1}" in matched[step - 1]["alice"] - matched[step]["alice"], f"cycle {step}"
        assert f"glidein{step - 1}" in matched[step]["bob"], f"cycle {step}"
        assert asked[step] and set(asked[step]) == {1}, f"cycle {step}"
    assert max(asked[0]) == len(slot_ads)


def test_classad2_steps_reading_the_clock_follow_it():
    """A job-and-slot conjunct that classad2 evaluates (``stringListMember``) over a slot value
    that reads the clock (whether the slot retired) is asked again as the clock moves, beside
    one over a slot value that does not (the slot's Site): the slots stop matching once they
    retire, as classad2 says."""
    config = settings()
    slot_ads = [pslot(f"retiring{i}", cpus=2, Retire=NOW + 150 + 120 * i, Site="east",
                      **starting('stringListMember(string(MY.Retire > time()), TARGET.Alive) && '
                                 'stringListMember(MY.Site, TARGET.Sites)')) for i in range(3)]
    job_ads = jobs("alice", 4, Alive="true,yes", Sites="east,north")
    cycles = [(slot_ads, job_ads, NOW + 60 * step) for step in range(8)]
    results = negotiate_both_ways(cycles, config, reference=True)
    matched = [{match.slot for match in result.matches} for result in results]
    assert matched[0] == {"retiring0", "retiring1", "retiring2"}
    assert matched[3] == {"retiring1", "retiring2"}       # at +180 s the first has retired
    assert matched[-1] == set()


def test_classad2_steps_over_a_value_following_the_clock_do_not_pile_up_its_values():
    """A classad2 step over a slot value that moves with every tick of the clock (``string(MY.Retire
    - time())``) meets new slot sides every cycle: the step keeps those its rows hold, not every
    cycle's, and the cycles decide as classad2."""
    config = settings()
    slot_ads = [pslot(f"retiring{i}", cpus=2, Retire=NOW + 600 + 1000 * i,
                      **starting("stringListMember(string(MY.Retire - time()), TARGET.Lives)")) for i in range(3)]
    lives = ",".join(str(600 + 1000 * i - 60 * step) for i in range(3) for step in range(0, 8, 2))
    cycles = [(slot_ads, jobs("alice", 2, Lives=lives), NOW + 60 * step) for step in range(8)]
    builder, descriptions, compilations = SnapshotBuilder(), AdDescriptions(), Compilations()
    results = negotiate_both_ways(cycles, config, reference=True)
    assert [bool(result.matches) for result in results] == [True, False] * 4
    for slot_ads_now, job_ads, now in cycles:
        run_cycle(builder.build(slot_ads_now, job_ads, config), AccountantState(), config, now,
                  descriptions=descriptions, compilations=compilations)
    space = compilations.match_space.space
    steps = space.python._steps.values()
    assert steps and all(len(step.distinct) <= 2 * len(slot_ads) for step in steps)


def test_a_configured_rank_changed_between_cycles_is_compiled_again():
    """NEGOTIATOR_PRE_JOB_RANK keeps its root's name when the configuration changes it: the kept
    space compiles the new expression, and the matches follow it."""
    slot_ads = [static_slot(f"s{i}", cpus=1, memory=1024 * (i + 1)) for i in range(4)]
    job_ads = jobs("alice", 2)
    builder, descriptions, compilations = SnapshotBuilder(), AdDescriptions(), Compilations()
    chosen = []
    for step, rank in enumerate(("MY.Memory", "-MY.Memory", "MY.Memory")):
        config = settings(pre_job_rank=rank)
        kept = run_cycle(builder.build(slot_ads, job_ads, config), AccountantState(), config, NOW + 60 * step,
                         descriptions=descriptions, compilations=compilations)
        fresh = run_cycle(SnapshotBuilder().build(slot_ads, job_ads, config), AccountantState(), config,
                          NOW + 60 * step)
        assert decided(kept) == decided(fresh), f"cycle {step}"
        chosen.append({match.slot for match in kept.matches})
    assert chosen[0] == chosen[2] == {"s2", "s3"}
    assert chosen[1] == {"s0", "s1"}


def test_a_cycle_that_fails_half_way_leaves_nothing_half_made(monkeypatch):
    """A cycle stopped by an error in the middle of its matchmaking (the kept space entered, rows
    taken in) leaves the next cycle to start over, and that cycle decides as one from scratch."""
    config = settings()
    job_ads = queue()
    builder, descriptions, compilations = SnapshotBuilder(), AdDescriptions(), Compilations()
    run_cycle(builder.build(glideins(0, 3), job_ads, config), AccountantState(), config, NOW,
              descriptions=descriptions, compilations=compilations)
    grown = [*glideins(0, 3), *glideins(3, 2)]

    def failing(*args: object) -> object:
        raise RuntimeError("stopped half-way")

    with monkeypatch.context() as patched:
        patched.setattr(OneCallAssessment, "assess", failing)
        with pytest.raises(RuntimeError):
            run_cycle(builder.build(grown, job_ads, config), AccountantState(), config, NOW + 60,
                      descriptions=descriptions, compilations=compilations)
    assert compilations.kept is None and compilations.match_space is None
    kept = run_cycle(builder.build(grown, job_ads, config), AccountantState(), config, NOW + 120,
                     descriptions=descriptions, compilations=compilations)
    fresh = run_cycle(SnapshotBuilder().build(grown, job_ads, config), AccountantState(), config, NOW + 120)
    assert decided(kept) == decided(fresh)
    assert compilations.started == 2


def test_answers_kept_per_job_values_are_bounded(monkeypatch):
    """Past a bound, a cycle entering the kept space drops the job-and-slot answers it holds per
    distinct job values (a daemon meets ever new ones); the cycles still decide as from scratch."""
    monkeypatch.setattr(space_module, "MAX_JOB_ANSWER_BYTES", 1)
    config = settings()
    slot_ads = [pslot(f"s{i}", cpus=2, Site=("east", "west")[i % 2]) for i in range(4)]
    cycles = [(slot_ads, jobs("alice", 2, cluster=step + 1, memory=100 * (step + 1),
                              Requirements=expr("TARGET.Site == \"east\"")), NOW + 60 * step)
              for step in range(4)]
    results = negotiate_both_ways(cycles, config, reference=True)
    assert all(result.matches for result in results)
    builder, descriptions, compilations = SnapshotBuilder(), AdDescriptions(), Compilations()
    epochs = []
    for slot_ads_now, job_ads, now in cycles:
        run_cycle(builder.build(slot_ads_now, job_ads, config), AccountantState(), config, now,
                  descriptions=descriptions, compilations=compilations)
        assert compilations.match_space is not None and compilations.match_space.space is not None
        epochs.append(compilations.match_space.space.epoch)
    assert epochs[1] < epochs[2] < epochs[3]        # each later cycle dropped what the last kept


def test_records_of_slots_gone_do_not_pile_up():
    """Every cycle's slot ads are new records (a pool re-advertising everything): the space holds at
    most about twice the table's records, starting over when those of slots gone outnumber them."""
    config = settings()
    job_ads = queue()
    builder, descriptions, compilations = SnapshotBuilder(), AdDescriptions(), Compilations()
    held = []
    for step in range(12):
        kept = run_cycle(builder.build(glideins(0, 40), job_ads, config), AccountantState(), config,
                         NOW + 60 * step, descriptions=descriptions, compilations=compilations)
        assert len(kept.matches) > 0
        assert compilations.match_space is not None
        held.append(len(compilations.match_space))
    assert max(held) <= 2 * 40 + 64
    assert held.count(40) >= 3             # it started over, with this cycle's records alone


def test_records_of_slots_gone_are_let_go_and_their_rows_read_as_absent_after():
    """A cycle lets go of the slot records no table has held for a cycle (an ad is most of a
    record's memory), keeping their rows for their class. After that: a slot that comes back (its ad the
    same object), new records of the image taking released rows, and a configured rank reading an
    attribute no cycle read before (read as absent on the released rows, as the slots that come
    back must not read it), each cycle deciding as one from scratch."""
    job_ads = queue()
    first = glideins(0, 6)
    first[3] = pslot("glidein3", cpus=4, memory=8192, Speed=20, **starting("TARGET.RequestDisk <= MY.Disk"))
    ranked = [pslot(f"glidein{i}", cpus=4, memory=8192, Speed=i, **starting("TARGET.RequestDisk <= MY.Disk"))
              for i in range(6, 9)]
    pools = [(first, None), (first[:3], None), ([*first[:4], *ranked], None), ([*first[:4], *ranked], "MY.Speed")]
    builder, descriptions, compilations = SnapshotBuilder(), AdDescriptions(), Compilations()
    records = []
    for step, (slot_ads, rank) in enumerate(pools):
        config = settings(pre_job_rank=rank)
        snapshot = builder.build(slot_ads, job_ads, config)
        records.append({slot.name: weakref.ref(slot) for slot in snapshot.table.slots})
        kept = run_cycle(snapshot, AccountantState(), config, NOW + 60 * step,
                         descriptions=descriptions, compilations=compilations)
        fresh = run_cycle(SnapshotBuilder().build(slot_ads, job_ads, config), AccountantState(), config,
                          NOW + 60 * step)
        assert decided(kept) == decided(fresh), f"cycle {step}"
        matched = {match.slot for match in kept.matches}
        del snapshot, kept
        gc.collect()
        if step == 1:       # the last table, held while a cycle begins, still holds the slots that left
            assert all(records[0][f"glidein{i}"]() is not None for i in range(3, 6))
        if step == 2:       # a cycle later, the columns alone did
            assert all(records[0][f"glidein{i}"]() is None for i in (4, 5))
            assert all(record() is not None for record in records[2].values())
    assert {"glidein3", "glidein8"} <= matched      # the rank reads Speed: the fastest come first


def test_a_record_that_leaves_and_comes_back_reads_what_its_ad_holds():
    """A record that left the table while something else still held it (a replay's node left out
    of a table may come back, the very record) is not let go: when it comes back it reads what
    its ad holds, not what a released row reads (an attribute first read after it left would read
    as absent there). Here a rank on such an attribute must put the returning fastest slot first."""
    slot_ads = [pslot(f"s{i}", cpus=4, Speed=10 * i, **starting("TARGET.RequestDisk <= MY.Disk")) for i in range(4)]
    job_ads = jobs("alice", 2)
    builder, descriptions, compilations = SnapshotBuilder(), AdDescriptions(), Compilations()
    config = settings()
    first = builder.build(slot_ads, job_ads, config)
    for step, table_slots in enumerate((slot_ads, slot_ads[:2], slot_ads[:2])):      # s2 and s3 leave
        run_cycle(first if step == 0 else builder.build(table_slots, job_ads, config), AccountantState(), config,
                  NOW + 60 * step, descriptions=descriptions, compilations=compilations)
    config = settings(pre_job_rank="MY.Speed")
    back = replace(builder.build(slot_ads, job_ads, config), table=first.table)     # the first cycle's records
    kept = run_cycle(back, AccountantState(), config, NOW + 180, descriptions=descriptions, compilations=compilations)
    assert decided(kept) == decided(run_cycle(back, AccountantState(), config, NOW + 180))
    assert "s3" in {match.slot for match in kept.matches}


# -- hypothesis-drawn pools whose slots keep, change or lose their records -------------------------

KEEP, UPDATE, LEAVE = "keep", "update", "leave"
SITES = ["east", "west"]
# jobs reading the slots' Site: a job-and-slot conjunct, a classad2 step, and one beside an asset
SITE_JOB_VARIANTS = [
    {"Requirements": expr("TARGET.Site == \"east\"")},
    {"Sites": "east,north", "Requirements": expr("stringListMember(TARGET.Site, MY.Sites)")},
    {"Requirements": expr("TARGET.Site =!= \"east\" && TARGET.Cpus >= RequestCpus")},
]
DRAWN_JOB_VARIANTS = JOB_VARIANTS + SITE_JOB_VARIANTS
slot_draw = st.tuples(st.sampled_from(range(len(SLOT_VARIANTS))), st.sampled_from([1, 2, 4]),
                      st.sampled_from(range(len(SITES))))
slot_change = st.tuples(st.sampled_from([KEEP, KEEP, UPDATE, LEAVE]), slot_draw)


@hypothesis_settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(slot_draw, st.booleans()), min_size=2, max_size=8),
       st.lists(st.tuples(st.lists(slot_change, min_size=8, max_size=8), st.integers(min_value=0, max_value=3)),
                min_size=1, max_size=4),
       st.lists(st.tuples(st.sampled_from(range(len(DRAWN_JOB_VARIANTS))), st.sampled_from([1, 2])),
                min_size=1, max_size=4))
def test_drawn_pools_keeping_changing_and_losing_records_decide_alike(first, changes, job_draws):
    """Each later cycle keeps some slots' ad objects (their records), re-advertises others as new
    ads (of the same or another image, another Site, other amounts: in the place of the old
    record or not) and loses some, while the clock moves; the kept space decides as from scratch."""
    config = settings()

    def slot(index: int, drawn: tuple[int, int, int], partitionable: bool) -> classad2.ClassAd:
        variant, cpus, site = drawn
        return (pslot if partitionable else static_slot)(f"slot{index}", cpus=cpus, Site=SITES[site],
                                                         **SLOT_VARIANTS[variant])

    job_ads = [ad for cluster, (variant, cpus) in enumerate(job_draws, start=1)
               for ad in jobs(("alice", "bob")[cluster % 2], 2, cluster=cluster, cpus=cpus,
                              **DRAWN_JOB_VARIANTS[variant])]
    kinds = [partitionable for _, partitionable in first]
    current = {index: slot(index, drawn, partitionable) for index, (drawn, partitionable) in enumerate(first)}
    cycles: list[Cycle] = [(list(current.values()), job_ads, NOW)]
    for step, (slot_changes, minutes) in enumerate(changes, start=1):
        for index, (change, drawn) in enumerate(slot_changes[: len(first)]):
            if change == UPDATE:
                current[index] = slot(index, drawn, kinds[index])
            elif change == LEAVE and index:      # slot0 stays: an empty pool has no assets, and starts over
                current.pop(index, None)
            elif index not in current:       # a slot that left comes back, as a new ad
                current[index] = slot(index, drawn, kinds[index])
        cycles.append((list(current.values()), job_ads, NOW + 60 * step + 30 * minutes))
    negotiate_both_ways(cycles, config)
