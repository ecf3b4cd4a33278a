"""Compilations kept across cycles (fastpath/interpreter/compilations.py) change nothing a cycle
decides: a sequence of cycles over changing pools and queues, negotiated with one Compilations
(and one AdDescriptions, as the daemon and the replay keep them) and with a fresh evaluator each
cycle, makes the same matches at the same costs and consumption, in the same order, with the same
rejections, preemptions and usage.

The sequences change what a compilation depends on: slot ads whose expressions change between
cycles (a START rewritten, an attribute turned from a literal into an expression), attributes
appearing in the pool that jobs' Requirements read, slots reading ``CurrentTime`` or ``time()``
while the cycle's clock passes their deadline, p-slots shrinking as jobs start, the bundled sample
pool, OSPool-shaped pools from benchmarks/pool_generator.py, and hypothesis-drawn sequences of
slot and job variants. Each cycle is also checked against the classad2 reference evaluator where
that is cheap, so the sequences themselves are known to be answered right.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

import classad2
import hypothesis.strategies as st
from hypothesis import HealthCheck, given, settings as hypothesis_settings

from negotiatord.accountant import AccountantState
from negotiatord.accountant.after_cycle import after_cycle
from negotiatord.ads import parse_ads
from negotiatord.cycle.result import CycleResult
from negotiatord.evaluation import ClassAdEvaluator
from negotiatord.fastpath.compiler.descriptions import AdDescriptions
from negotiatord.fastpath.interpreter.compilations import Compilations
from negotiatord.pool.builder import SnapshotBuilder
from negotiatord.runtime import run_cycle
from negotiatord.settings import Settings, load_settings
from tests.builders import expr, jobs, pslot, settings, static_slot

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from pool_generator import CONFIG_PATH, generate_pool  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
NOW = 1_700_000_000

Cycle = tuple[Sequence[classad2.ClassAd], Sequence[classad2.ClassAd], int]     # slot ads, job ads, clock


def decided(result: CycleResult) -> tuple:
    """Everything a cycle decides, in order."""
    return (result.matches, result.rejections, result.preemptions, result.usage, result.charges, result.held,
            result.problems)


def negotiate_both_ways(cycles: Sequence[Cycle], config: Settings, reference: bool = False,
                        starts: int = 1) -> list[CycleResult]:
    """Each cycle negotiated with compilations and descriptions kept from the earlier ones, and
    with a fresh evaluator (and, with ``reference``, with classad2's); asserts they decide alike,
    and that the compilations started ``starts`` times; returns the kept-compilations results."""
    builder, descriptions, compilations = SnapshotBuilder(), AdDescriptions(), Compilations()
    kept_state = fresh_state = AccountantState()
    results = []
    for index, (slot_ads, job_ads, now) in enumerate(cycles):
        kept = run_cycle(builder.build(slot_ads, job_ads, config), kept_state, config, now,
                         descriptions=descriptions, compilations=compilations)
        snapshot = SnapshotBuilder().build(slot_ads, job_ads, config)
        fresh = run_cycle(snapshot, fresh_state, config, now)
        assert decided(kept) == decided(fresh), f"cycle {index}"
        if reference:
            checked = run_cycle(snapshot, fresh_state, config, now,
                                evaluator=ClassAdEvaluator(snapshot.table, config, now))
            assert checked.matches == fresh.matches, f"cycle {index} against classad2"
        kept_state = after_cycle(kept_state, now, kept.usage, kept.held, config)
        fresh_state = after_cycle(fresh_state, now, fresh.usage, fresh.held, config)
        results.append(kept)
    assert compilations.started == starts
    return results


def test_expressions_that_change_between_cycles_are_compiled_again():
    """A slot's START turns from a literal into an expression reading a job attribute, then into
    another; a job's Requirements read an attribute the pool only later advertises (absent, then
    a literal, then an expression). The same slot names and jobs throughout."""
    config = settings()
    job_ads = [*jobs("alice", 3, Requirements=expr("TARGET.HasDocker =?= true || TARGET.Cpus >= 6")),
               *jobs("bob", 3, cluster=2, memory=3000, Requirements=expr("TARGET.Arch == \"X86_64\""))]
    variants = [
        {},
        {"Start": expr("TARGET.RequestMemory < 2000")},
        {"Start": expr("TARGET.RequestMemory < 2000"), "HasDocker": True},
        {"Start": expr("TARGET.Owner == \"bob\""), "HasDocker": expr("Cpus > 100"), "Arch": "X86_64"},
        {"Start": True, "Arch": expr("strcat(\"X86\", \"_64\")")},
    ]
    cycles = []
    for step, changes in enumerate(variants):
        slot_ads = [pslot(f"p{i}", cpus=4 + i, **changes) for i in range(3)]
        slot_ads += [static_slot(f"s{i}", cpus=2, memory=4096, **(changes if i % 2 else {})) for i in range(2)]
        cycles.append((slot_ads, job_ads, NOW + 60 * step))
    results = negotiate_both_ways(cycles + cycles[::-1], config, reference=True)
    assert len({repr(r.matches) for r in results}) >= 3      # the changes change what matches


def clock_reading_slots(dies: int, deadline: int, timer_start: str) -> list[classad2.ClassAd]:
    """A glidein whose START reads ``CurrentTime`` (undefined in its ad) against ``dies``, and a
    slot whose START is ``timer_start``, reading ``time()`` and its ``Deadline``."""
    return [
        pslot("glidein", GLIDEIN_ToDie=dies, Start=expr("CurrentTime < GLIDEIN_ToDie"),
              Requirements=expr("START && TARGET.RequestCpus <= MY.Cpus")),
        pslot("timer", Deadline=deadline, Start=expr(timer_start),
              Requirements=expr("START && TARGET.RequestCpus <= MY.Cpus")),
    ]


def test_slots_reading_the_clock_stop_matching_when_the_cycles_clock_passes_their_deadline():
    """``CurrentTime`` (the ad's own, and frozen at the cycle's clock where undefined, as
    HTCondor's negotiator evaluates it) and ``time()`` read each cycle's clock, also when every
    compilation else is kept."""
    config = settings()
    slot_ads = [*clock_reading_slots(NOW + 150, NOW + 90, "time() < Deadline"), pslot("plain", cpus=1)]
    job_ads = jobs("alice", 4, Requirements=expr("TARGET.Name =!= \"plain\" || CurrentTime > 0"))
    cycles = [(slot_ads, job_ads, NOW + 60 * step) for step in range(5)]
    results = negotiate_both_ways(cycles, config, reference=True)
    counts = [len(result.matches) for result in results]
    assert counts[0] > counts[2] > counts[4] >= 1


def test_cycles_whose_clock_alone_moves_compile_nothing_new():
    """The clock is data the kernels read, not compiled in: once the first cycle compiled a pool
    whose START reads ``time()`` and ``CurrentTime``, later cycles that differ only in their clock
    add no IR node (so no leaf either) and no static store row. A daemon's idle cycles over
    glideins (whose START reads the clock) compiled START again each cycle, and kept every copy."""
    config = settings()
    slot_ads = clock_reading_slots(NOW + 10_000, NOW + 10_000, "time() < Deadline && time() - Deadline < Cpus")
    job_ads = jobs("alice", 2, Requirements=expr("TARGET.Cpus >= RequestCpus"))
    builder, descriptions, compilations = SnapshotBuilder(), AdDescriptions(), Compilations()
    sizes = []
    for step in range(4):
        result = run_cycle(builder.build(slot_ads, job_ads, config), AccountantState(), config, NOW + 60 * step,
                           descriptions=descriptions, compilations=compilations)
        assert len(result.matches) == 2
        kept = compilations.kept
        assert kept is not None
        sizes.append((len(kept.graph.nodes), len(kept.static_rows)))
    assert sizes[1:] == sizes[:1] * 3
    assert compilations.started == 1


def test_p_slots_shrinking_as_jobs_start():
    """What the replay and the daemon see: each cycle a p-slot's Cpus and Memory are what the last
    cycle's matches left, and the queue loses the jobs that started."""
    config = load_settings(ROOT / "config" / "cpu_centric.conf")
    queue = [*jobs("alice", 6, cpus=2, memory=1500), *jobs("bob", 6, cluster=2, cpus=1, memory=700)]
    left = {f"p{i}": (8.0, 8192.0) for i in range(3)}
    cycles: list[Cycle] = []
    builder, descriptions, compilations = SnapshotBuilder(), AdDescriptions(), Compilations()
    for step in range(5):
        slot_ads = [pslot(name, cpus=cpus, memory=memory) for name, (cpus, memory) in left.items() if cpus >= 1]
        cycles.append((slot_ads, list(queue), NOW + 60 * step))
        result = run_cycle(builder.build(slot_ads, queue, config), AccountantState(), config, NOW + 60 * step,
                           descriptions=descriptions, compilations=compilations)
        started = set()
        for match in result.matches[:3]:          # a few start each cycle
            cpus, memory = left[match.slot]
            left[match.slot] = (cpus - match.consumed["Cpus"], memory - match.consumed["Memory"])
            started.add(match.job)
        queue = [job for job in queue if f"{job['GlobalJobId'].split('#')[1]}" not in started]
    results = negotiate_both_ways(cycles, config, reference=True)
    assert sum(len(result.matches) for result in results) > 10


def test_compilations_start_over_when_the_pools_assets_change():
    """Leaves read an asset by its column in the slot table: a pool that starts advertising GPUs
    (a column more) is compiled afresh, and so is the pool without them after it."""
    config = settings()
    plain = [pslot(f"p{i}", cpus=4) for i in range(2)]
    gpus = [*plain, pslot("gpu", cpus=4, GPUs=2, MachineResources="Cpus Memory Disk Swap GPUs")]
    job_ads = [*jobs("alice", 2), *jobs("bob", 2, cluster=2, RequestGPUs=1)]
    cycles = [(pool, job_ads, NOW + 60 * step) for step, pool in enumerate((plain, plain, gpus, plain))]
    results = negotiate_both_ways(cycles, config, reference=True, starts=3)
    assert any(match.slot == "gpu" for match in results[2].matches)


def test_the_bundled_sample_pool_changing_cycle_by_cycle():
    """samples/: slots leave and come back, some with their START rewritten, jobs leave the queue."""
    config = load_settings(ROOT / "config" / "default.conf")
    slot_ads = list(parse_ads((ROOT / "samples" / "slots.ads").read_text()).ads)
    job_ads = list(parse_ads((ROOT / "samples" / "jobs.ads").read_text()).ads)
    cycles: list[Cycle] = []
    for step in range(4):
        slots = [ad for index, ad in enumerate(slot_ads) if (index + step) % 3]
        if step % 2:
            rewritten = classad2.ClassAd(str(slots[0]))
            rewritten["Start"] = expr("TARGET.RequestMemory <= MY.Memory / 2")
            slots = [rewritten, *slots[1:]]
        cycles.append((slots, job_ads[step:], NOW + 60 * step))
    negotiate_both_ways(cycles, config)


def test_generated_ospool_shaped_pools():
    """OSPool-shaped pools (real START, WithinResourceLimits and Rank expressions) of different
    seeds one after another: new slot images and job shapes each cycle, and repeats of earlier ones."""
    config = load_settings(CONFIG_PATH)
    pools = [generate_pool(150, 200, seed=seed, now=NOW, scenario=scenario)
             for seed, scenario in ((1, "mixed"), (2, "fill"), (1, "mixed"), (3, "steady"))]
    cycles = [(pool.slot_ads, list(pool.job_ads), NOW + 60 * step) for step, pool in enumerate(pools)]
    results = negotiate_both_ways(cycles, config)
    assert sum(len(result.matches) for result in results) > 50


# -- hypothesis-drawn sequences ---------------------------------------------------------------------

SLOT_VARIANTS = [
    {},
    {"Start": expr("TARGET.RequestMemory <= 2000")},
    {"Start": expr("TARGET.Owner =!= \"bob\""), "HasDocker": True},
    {"HasDocker": expr("Cpus >= 4")},
    {"Deadline": NOW + 100, "Start": expr("time() < Deadline")},
    {"GLIDEIN_ToDie": NOW + 130, "Start": expr("CurrentTime < GLIDEIN_ToDie")},
    {"Arch": "ARM64"},
    {"Requirements": expr("START && TARGET.RequestCpus <= MY.Cpus && isUndefined(TARGET.Veto)")},
]
JOB_VARIANTS = [
    {},
    {"Requirements": expr("TARGET.HasDocker =?= true")},
    {"Requirements": expr("TARGET.Arch =!= \"ARM64\" && TARGET.Memory >= RequestMemory")},
    {"Rank": expr("TARGET.Cpus")},
    {"Veto": True},
    {"Requirements": expr("ifThenElse(RequestCpus > 1, TARGET.Cpus >= 4, CurrentTime > 0)")},
]

slot_draw = st.tuples(st.sampled_from(range(len(SLOT_VARIANTS))), st.sampled_from([1, 2, 4, 8]),
                      st.booleans())
job_draw = st.tuples(st.sampled_from(["alice", "bob", "carol"]), st.sampled_from(range(len(JOB_VARIANTS))),
                     st.sampled_from([1, 2]), st.sampled_from([500, 1500, 3000]))
cycle_draw = st.tuples(st.lists(slot_draw, min_size=1, max_size=6), st.lists(job_draw, min_size=1, max_size=5),
                       st.integers(min_value=0, max_value=3))


@hypothesis_settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(cycle_draw, min_size=2, max_size=4))
def test_drawn_sequences_decide_alike_with_kept_compilations(drawn):
    config = settings()
    cycles: list[Cycle] = []
    for step, (slot_draws, job_draws, minutes) in enumerate(drawn):
        slot_ads = [(pslot if partitionable else static_slot)(f"slot{i}", cpus=cpus, **SLOT_VARIANTS[variant])
                    for i, (variant, cpus, partitionable) in enumerate(slot_draws)]
        job_ads = [ad for cluster, (owner, variant, cpus, memory) in enumerate(job_draws, start=1)
                   for ad in jobs(owner, 2, cluster=cluster, cpus=cpus, memory=memory, **JOB_VARIANTS[variant])]
        cycles.append((slot_ads, job_ads, NOW + 60 * step + 30 * minutes))
    negotiate_both_ways(cycles, config)
