"""Each job's compiled roots and the job-side values their leaves read, at the current call's clock.

A job here is an autocluster: its representative's ad is read through
:class:`~negotiatord.fastpath.compiler.cells.JobCells`, its roots are compiled (or found among
the compilations of jobs of the same shape) on first use in each epoch of the match space, and the
values of its job-only nodes are computed once per wall-clock second they depend on. Slot-only
roots (SlotWeight) and calls without a job share one compilation per space.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from collections.abc import Callable

import numpy as np

from negotiatord.fastpath.compiler.cells import JobCells
from negotiatord.fastpath.compiler.descriptions import AdDescriptions
from negotiatord.fastpath.compiler.leaves import Leaf
from negotiatord.fastpath.interpreter.execution import Frame, NeedsFallback, Triple
from negotiatord.fastpath.interpreter.job_scalars import JobScalars, forget_current_time
from negotiatord.fastpath.interpreter.root_families import CompiledRoot
from negotiatord.fastpath.interpreter.space import Context, RootSpec, SlotRows, Space, match_array
from negotiatord.fastpath.interpreter.stacks import JobStatic, Stack
from negotiatord.fastpath.interpreter.tables import JobTables
from negotiatord.pool.autoclusters import Autocluster
from negotiatord.pool.snapshot import SlotTable


@dataclass
class JobLayout:
    """What was compiled and laid out for one job in one epoch of a space. It holds no context, so
    a job's record keeps the match space's (kept_jobs.py) for a later cycle over the same space."""

    epoch: tuple[int, int] = (-1, -1)               # the space's serial and epoch
    stack: Stack | None = None                      # the one-call path's roots for this epoch
    tables: JobTables | None = None                 # scalar inputs of the stack's leaves (both paths read them)
    job_static: JobStatic | None = None             # with ``tables``
    roots: dict[str, CompiledRoot] = field(default_factory=dict)
    scalar_triples: dict[tuple[int, int], Triple] = field(default_factory=dict)
    scalar_ok: dict[tuple[int, int], bool] = field(default_factory=dict)

    def start(self, epoch: tuple[int, int]) -> None:
        """Empty, for ``epoch`` (in place: a job's record may hold this layout)."""
        self.epoch = epoch
        self.stack, self.tables, self.job_static = None, None, None
        self.roots.clear()
        self.scalar_triples.clear()
        self.scalar_ok.clear()


@dataclass
class JobState:
    """One job (autocluster) of an evaluator: its ad's cells, its job-only values, and its layout
    in the space it is asked about."""

    cells: JobCells | None
    scalars: JobScalars
    layout: JobLayout = field(default_factory=JobLayout)

    def enter(self, space: Space) -> None:
        """Forget what was laid out for another space, or for an earlier universe of this one."""
        epoch = (space.serial, space.epoch)
        if self.layout.epoch != epoch:
            self.layout.start(epoch)


class JobRoots:
    """The jobs of one evaluator (one classad2 scoping mode) and their compiled roots."""

    def __init__(self, table: SlotTable, context: Context, match_space: Space, descriptions: AdDescriptions) -> None:
        self._table = table
        self._context = context
        self._match_space = match_space
        self._descriptions = descriptions
        self._jobs: dict[int, JobState] = {}
        self._no_job = JobState(None, JobScalars(context, None))
        self._shared: dict[tuple[int, int, str], CompiledRoot] = {}
        self.clock = 0           # wall-clock second of the current call (old-semantics CurrentTime)

    def known(self, autocluster: Autocluster) -> JobState | None:
        return self._jobs.get(autocluster.id)

    def add(self, autocluster: Autocluster) -> JobState:
        """A job not seen before: its representative's cells, job-only values and layout in the
        match space, kept by the ad's record from an earlier cycle over the same compilations
        (kept_jobs.py), else read (the ad described once per record) and kept."""
        representative = autocluster.representative
        context = self._context
        kept = context.compiled.jobs.of(representative)
        if kept.cells is None:
            kept.cells = JobCells(representative.ad, context.cells, context.now, self._descriptions.of(representative))
        elif kept.cells.move_to(context.now):
            forget_current_time(context, kept.values)
            kept.layout = None
        if kept.layout is None:
            kept.layout = JobLayout()
        state = self._jobs[autocluster.id] = JobState(kept.cells, JobScalars(context, kept.cells, kept.values),
                                                      kept.layout)
        return state

    def compiled(self, spec: RootSpec, job: JobState | None, space: Space) -> CompiledRoot:
        if job is None or spec.mode.no_target:
            key = (id(space), space.epoch, spec.name)
            found = self._shared.get(key)
            if found is None:
                found = self._shared[key] = space.compiled(spec, None, self._domain(spec))
            return found
        found = job.layout.roots.get(spec.name)
        if found is None or not found.made_for(spec):
            job.scalars.set_clock(self.clock)
            found = job.layout.roots[spec.name] = space.compiled(spec, job.cells, self._domain(spec), job.scalars.value)
        return found

    def _domain(self, spec: RootSpec) -> Callable[[SlotRows, np.ndarray], np.ndarray]:
        """The rows a root applies to (rows of the space's columns): Consumption<asset> on
        consumption-policy slots having the asset, each Requirements root on its kind of slot, the
        rest everywhere. It reads nothing of the cycle's table, so a space kept across cycles
        can ask it of slots that join later."""
        if spec.mode.consume is not None:
            column = self._table.asset_column(spec.mode.consume)
            return lambda slots, rows: slots.consumption_policy[rows] & slots.has_amount[rows, column]
        if spec.name.endswith("requirements"):
            return lambda slots, rows: ~slots.consumption_policy[rows]
        if spec.name.endswith("requirements_cp"):
            return lambda slots, rows: slots.consumption_policy[rows]
        return lambda slots, rows: np.ones(len(rows), dtype=bool)

    def scalars(self, job: JobState | None, leaf: Leaf) -> Triple:
        """The job's values of the leaf's scalar inputs."""
        tables = job.layout.tables if job is not None else None
        if tables is not None and tables.has(leaf.id) and tables.holds(self.clock):
            return tables.part(leaf.id)
        state = job or self._no_job
        state.scalars.set_clock(self.clock)
        key = (leaf.id, self.clock if leaf.uses_clock else 0)
        found = state.layout.scalar_triples.get(key)
        if found is None:
            found = state.layout.scalar_triples[key] = state.scalars.triple(leaf.scalar_nodes)
        return found

    def values(self, job: JobState, nodes: list[int]) -> Triple:
        """The job's values of job-only ``nodes`` at the current call's clock."""
        job.scalars.set_clock(self.clock)
        return job.scalars.triple(nodes)

    def job_static_ok(self, job: JobState | None, leaf: Leaf, universe_rows: np.ndarray) -> np.ndarray:
        """Whether the leaf's job-and-slot conjuncts match on ``universe_rows`` (space.job_static_ok)."""
        values = self.values(job or self._no_job, leaf.job_static_nodes)
        return self._match_space.job_static_ok(leaf, values, universe_rows)

    def scalar_ok(self, job: JobState | None, leaf: Leaf) -> bool:
        """Whether every job-only conjunct of a Requirements leaf matches for this job."""
        if not leaf.scalar_conjuncts:
            return True
        state = job or self._no_job
        state.scalars.set_clock(self.clock)
        clocked = any(self._context.graph[n].uses_clock for n in leaf.scalar_conjuncts)
        key = (leaf.id, self.clock if clocked else 0)
        found = state.layout.scalar_ok.get(key)
        if found is None:
            found = state.layout.scalar_ok[key] = bool(match_array(*state.scalars.triple(leaf.scalar_conjuncts)).all())
        return found

    def fill_python_inputs(self, leaf: Leaf, positions: np.ndarray, job: JobState | None, frame: Frame) -> bool:
        """Fill the leaf's classad2-step inputs for ``positions``; False if one needs a fallback."""
        space = self._match_space
        if frame.dynamic[0].shape[0] < space.dynamic_input_rows:       # classad2 steps compiled since
            grown = space.dynamic_inputs(frame.dynamic[0].shape[1])
            for new, old in zip(grown, frame.dynamic):
                new[: old.shape[0]] = old
            frame.dynamic = grown
        try:
            space.fill_python_inputs(leaf.python_inputs, positions, frame.universe_rows, self.scalars(job, leaf),
                                     frame.dynamic)
        except NeedsFallback:
            return False
        return True
