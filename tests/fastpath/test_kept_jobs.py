"""Job cells and job-only values kept by job ad record across cycles (fastpath/interpreter/kept_jobs.py).

The job's side of its Requirements may read an undefined ``CurrentTime``, which HTCondor's
ClassAd library resolves to the current time (classad/cycle_time.py freezes it at the cycle's
clock): cycles negotiated with kept jobs decide what cycles from scratch and classad2 decide
(tests/fastpath/test_compilations.py's ``negotiate_both_ways``) while that clock passes a job's
deadline. An unchanged job is not read again in the next cycle.
"""

from __future__ import annotations

from negotiatord.accountant import AccountantState
from negotiatord.fastpath.compiler.descriptions import AdDescriptions
from negotiatord.fastpath.interpreter.compilations import Compilations
from negotiatord.pool.builder import SnapshotBuilder
from negotiatord.runtime import run_cycle
from tests.builders import expr, jobs, pslot, settings
from tests.fastpath.test_compilations import NOW, negotiate_both_ways

DEADLINE = NOW + 150


def deadline_jobs() -> list:
    """alice's jobs want a slot only before their deadline (their ads and the slots' lack
    ``CurrentTime``: it is the clock); bob's read no clock."""
    return [*jobs("alice", 3, Deadline=DEADLINE,
                  Requirements=expr("CurrentTime < MY.Deadline && TARGET.Cpus >= RequestCpus")),
            *jobs("bob", 2, cluster=2, Requirements=expr("TARGET.Cpus >= RequestCpus"))]


def test_cycles_with_kept_jobs_decide_as_from_scratch_and_as_classad2_while_the_clock_passes_a_deadline():
    config = settings()
    slot_ads = [pslot(f"p{i}", cpus=4) for i in range(2)]
    job_ads = deadline_jobs()          # the same ads each cycle: their records are kept
    cycles = [(slot_ads, job_ads, NOW + 60 * step) for step in range(5)]
    results = negotiate_both_ways(cycles, config, reference=True)
    owners = [{match.submitter.split("@")[0] for match in result.matches} for result in results]
    assert owners[0] == {"alice", "bob"}
    assert owners[-1] == {"bob"}          # past the deadline alice's jobs match nothing


def test_kept_jobs_are_not_read_again():
    config = settings()
    slot_ads = [pslot(f"p{i}", cpus=4) for i in range(2)]
    job_ads = deadline_jobs()
    builder, descriptions, compilations = SnapshotBuilder(), AdDescriptions(), Compilations()
    cells = []
    for step in range(2):
        snapshot = builder.build(slot_ads, job_ads, config)
        run_cycle(snapshot, AccountantState(), config, NOW + 60 * step, descriptions=descriptions,
                  compilations=compilations)
        kept = compilations.kept
        assert kept is not None
        cells.append([kept.jobs.of(autocluster.representative).cells for autocluster in snapshot.autoclusters])
    assert len(cells[1]) == 2
    assert all(later is earlier for later, earlier in zip(cells[1], cells[0]))
