"""A whole assessment in one kernel call (kernels.assess_rows), for jobs whose roots allow it.

The job's roots are compiled into a :class:`~negotiatord.fastpath.interpreter.stacks.Stack`; its
scalar inputs and job-only conjuncts are laid out once per job (:class:`JobTables`), its
job-and-slot conjuncts looked up per distinct job values; classad2 steps over job values and slot
literals are computed before the kernel; rows a known consumption does not fit are left out
before it (bounds.py). When some leaf the rows reach needs Python (classad2 steps the kernel
cannot be handed, or fallbacks), the caller assesses in stages instead. A request alike to one
assessed before on the shared offer, in this cycle or on the same first offer in the last,
takes its answer (shared_offer.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from operator import itemgetter

import numpy as np

from negotiatord.evaluation.protocol import UNRANKED, Assessment
from negotiatord.fastpath.interpreter import kernels
from negotiatord.fastpath.interpreter.bounds import misfits
from negotiatord.fastpath.interpreter.evaluation_counts import FastPathStats
from negotiatord.fastpath.interpreter.execution import Frame, NeedsFallback, Triple, each, triple
from negotiatord.fastpath.interpreter.jobs import JobRoots, JobState
from negotiatord.fastpath.interpreter.shared_offer import Answered, Changed
from negotiatord.fastpath.interpreter.space import Context, RootSpec, Space, by_leaf, match_array
from negotiatord.fastpath.interpreter.stacks import JobStatic, Stack
from negotiatord.fastpath.interpreter.tables import JobTables

_PRUNE_FROM = 16        # rows; on fewer, pruning first costs more than the kernel rows it saves


@dataclass(frozen=True)
class Offer:
    """Slot-table columns gathered for one array of rows."""

    rows: np.ndarray
    universe_rows: np.ndarray         # the rows in the match space's universe
    consumption_policy: np.ndarray
    base: np.ndarray                  # the amounts in the slots' ads
    integer: np.ndarray               # whether each is an integer literal there


class OneCallAssessment:
    """Assessments of jobs against rows of the match space, each in one kernel call."""

    def __init__(self, context: Context, space: Space, roots: JobRoots, specs: list[RootSpec | None],
                 stats: FastPathStats) -> None:
        self._context = context
        self._space = space
        self._roots = roots
        self._specs = specs                  # in kernels.assess_rows' order
        self._stats = stats
        self._registers = triple((1, 1))
        self._shared = space.shared_offer

    def assess(self, job: JobState, offer: Offer, amounts: np.ndarray) -> Assessment | None:
        """The whole assessment in one kernel call; None when some leaf the rows reach needs
        Python (classad2 steps or fallbacks): the staged path does those."""
        space, stack = self._space, self._stack(job)
        job_tables = self._job_tables(job, stack)
        rows, universe_rows = offer.rows, offer.universe_rows
        n = len(rows)
        try:
            job_ok = self._job_ok(job, stack, universe_rows)
        except NeedsFallback:
            return None
        shared = not stack.python_roots and self._shared.holds(
            rows, amounts, (universe_rows, offer.consumption_policy, offer.base, offer.integer))
        alike = _asked_alike(stack, job_tables, job) if shared else None
        if alike is not None:
            found = self._shared.answered(alike, stack, job.layout.job_static)
            if found is not None:
                answered, changed = found
                if changed is not None:
                    asked = self._asked_again(answered, changed, stack, job_tables, job_ok)
                    if asked is None:
                        return None
                    answered = asked
                    self._shared.keep_answer(alike, answered)
                self._stats.reused_assessments += 1
                return Assessment(rows, *_scattered(answered.answers, answered.matched, n))
        consumption_policy, base, integer = offer.consumption_policy, offer.base, offer.integer
        if stack.python_roots:        # classad2 steps' values, computed before the kernel reads them
            frame = Frame(n, universe_rows, triple(1), static=space.static, dynamic=space.dynamic_inputs(n))
            if not self._python_inputs_of(stack, job, frame):
                return None
            answers = self._kernel(stack, job_tables, job_ok, frame.dynamic, universe_rows, consumption_policy,
                                   amounts, base, integer)
        else:
            answers = self._pruned_kernel(stack, job_tables, job_ok, universe_rows, consumption_policy, amounts,
                                          base, integer)
        if answers is None:
            return None
        assessment = Assessment(rows, *answers)
        if alike is not None:
            matched = np.flatnonzero(assessment.matched)
            self._shared.keep_answer(alike, Answered(stack, job.layout.job_static, matched,
                                                     tuple(answer[matched] for answer in answers)))
        return assessment

    def _asked_again(self, answered: Answered, changed: Changed, stack: Stack, job_tables: JobTables,
                     job_ok: np.ndarray) -> Answered | None:
        """``answered``, with its entries where the offer ``changed`` since it was given asked of
        the kernel anew; None when a leaf there needs Python."""
        amounts, universe_rows, consumption_policy, base, integer = changed.arrays
        fresh = self._kernel(stack, job_tables, job_ok, self._space.dynamic_inputs(len(universe_rows)), universe_rows,
                             consumption_policy, amounts, base, integer)
        if fresh is None:
            return None
        kept = ~changed.at[answered.matched]
        matched = np.flatnonzero(fresh[0])
        return Answered(answered.stack, answered.job_static,
                        np.concatenate([answered.matched[kept], changed.positions[matched]]),
                        tuple(np.concatenate([old[kept], new[matched]]) for old, new in zip(answered.answers, fresh)))

    def _pruned_kernel(self, stack: Stack, job_tables: JobTables, job_ok: np.ndarray, universe_rows: np.ndarray,
                       consumption_policy: np.ndarray, amounts: np.ndarray, base: np.ndarray,
                       integer: np.ndarray) -> tuple[np.ndarray, ...] | None:
        """:meth:`_kernel` over these positions, those a consumption known beforehand does not
        fit left out first (the kernel's answer for them)."""
        n = len(universe_rows)
        fits = None
        if stack.known_consumption.any and n >= _PRUNE_FROM:
            fits = self._fitting(stack, job_tables, universe_rows, consumption_policy, base, amounts)
        if fits is not None:
            universe_rows, consumption_policy = universe_rows[fits], consumption_policy[fits]
            amounts, base, integer = amounts[fits], base[fits], integer[fits]
        answers = self._kernel(stack, job_tables, job_ok, self._space.dynamic_inputs(len(universe_rows)),
                               universe_rows, consumption_policy, amounts, base, integer)
        return answers if answers is None or fits is None else _scattered(answers, fits, n)

    def _fitting(self, stack: Stack, job_tables: JobTables, universe_rows: np.ndarray,
                 consumption_policy: np.ndarray, base: np.ndarray, amounts: np.ndarray) -> np.ndarray | None:
        """Positions not ruled out by a consumption known before the kernel (bounds.py); None
        when nothing is ruled out."""
        misfit = misfits(stack.known_consumption, stack.leaf_of, universe_rows, consumption_policy, base, amounts,
                         job_tables.scalar_base, job_tables.scalars, self._space.static)
        if misfit is None or not misfit.any():
            return None
        self._stats.pruned_pairs += int(misfit.sum())
        return np.flatnonzero(~misfit)

    def _python_inputs_of(self, stack: Stack, job: JobState, frame: Frame) -> bool:
        """Fill the classad2-step inputs of every leaf the frame's rows reach; False if one needs
        a fallback."""
        space = self._space
        for r in stack.python_roots:
            for leaf_id, positions in by_leaf(stack.leaf_of[r, frame.universe_rows], np.arange(frame.n),
                                              allow_outside=True):
                leaf = space.leaves[leaf_id]
                if leaf.python_inputs and leaf.plan is not None and not self._roots.fill_python_inputs(
                        leaf, positions, job, frame):
                    return False
        return True

    def _kernel(self, stack: Stack, job_tables: JobTables, job_ok: np.ndarray, dynamic: Triple,
                universe_rows: np.ndarray, consumption_policy: np.ndarray, amounts: np.ndarray, base: np.ndarray,
                integer: np.ndarray) -> tuple[np.ndarray, ...] | None:
        """kernels.assess_rows over these rows: (matched, consumption, cost, rank), or None when
        a leaf needs Python."""
        n = len(universe_rows)
        matched = np.zeros(n, dtype=bool)
        consumption = np.empty((n, self._context.assets))
        cost, rank = np.empty(n), np.empty((n, 3))
        arguments = (universe_rows, consumption_policy, amounts, base, integer,
                     *self.evaluation_inputs(stack, job_tables, job_ok, dynamic, n), matched, consumption, cost, rank)
        if not kernels.assess_rows(*arguments):
            return None
        self._stats.kernel_batches += 1
        return matched, consumption, cost, rank

    def evaluation_inputs(self, stack: Stack, job_tables: JobTables, job_ok: np.ndarray, dynamic: Triple,
                          n: int) -> tuple:
        """kernels.assess_rows' arguments after the rows' own columns and before its outputs:
        the job's compiled roots, its values, the space's slot values and the scratch space for
        ``n`` rows."""
        tables = self._space.tables
        if self._registers[0].shape[0] < tables.registers or self._registers[0].shape[1] < n:
            self._registers = triple((tables.registers, max(n, 2 * self._registers[0].shape[1])))
        strings = self._context.strings
        conversions = strings.conversions() if tables.converts else triple((5, 1))
        return (stack.leaf_of, stack.python_leaves, tables.leaves, tables.segments, tables.static_ok, job_ok,
                job_tables.scalar_base, job_tables.scalar_ok, tables.code, *job_tables.scalars, *self._space.static,
                *self._registers, *dynamic, strings.lower(), strings.ranks(), *conversions)

    def loading_inputs(self, job: JobState, universe_rows: np.ndarray) -> tuple | None:
        """What the job's known consumptions are (bounds.py) and :meth:`evaluation_inputs`, for
        re-assessing one row at a time inside a loading kernel, with the job-and-slot conjuncts
        known for ``universe_rows``; None when the job's roots
        need Python (classad2 steps) or its values follow the wall clock (old-semantics
        CurrentTime, which each call reads anew)."""
        stack = self._stack(job)
        if stack.python_roots:
            return None
        job_tables = self._job_tables(job, stack)
        if job_tables.layout.uses_clock:
            return None
        try:
            job_ok = self._job_ok(job, stack, universe_rows)
        except NeedsFallback:
            return None
        known = stack.known_consumption
        return (known.prunable, known.kind, known.index,
                *self.evaluation_inputs(stack, job_tables, job_ok, self._space.dynamic_inputs(1), 1))

    def _stack(self, job: JobState) -> Stack:
        """The job's roots compiled into one stack, made the first time the job is asked."""
        layout = job.layout
        if layout.stack is None or not layout.stack.made_for(self._specs):
            space = self._space
            layout.stack = space.stacks.of(space, [self._roots.compiled(spec, job, space) if spec is not None else None
                                                   for spec in self._specs])
        return layout.stack

    def _job_tables(self, job: JobState, stack: Stack) -> JobTables:
        """Scalar inputs and job-only conjuncts of every leaf of the stack, computed together
        (one scalar plan per job)."""
        tables = job.layout.tables
        clock = self._roots.clock
        if tables is None or tables.layout is not stack.layout or not tables.holds(clock):
            values = self._roots.values(job, stack.layout.nodes)
            tables = job.layout.tables = JobTables(stack.layout, values, match_array(*values), clock)
            job.layout.job_static = None
        return tables

    def _job_ok(self, job: JobState, stack: Stack, universe_rows: np.ndarray) -> np.ndarray:
        """[root, universe row]: whether the job-and-slot conjuncts of each row's leaf match (true
        where the leaf has none), known for ``universe_rows``; computed once per row and distinct
        job inputs (space.job_static_ok)."""
        state = job.layout.job_static
        if state is None:
            values = self._roots.values(job, stack.job_static_nodes)
            key = tuple(v.tobytes() for v in values)
            state = stack.job_static_states.get(key)
            if state is None:
                index = {node: i for i, node in enumerate(stack.job_static_nodes)}
                inputs = {leaf.id: each(itemgetter([index[n] for n in leaf.job_static_nodes]), values)
                          for _, leaves in stack.job_static for leaf in leaves}
                state = stack.job_static_states[key] = JobStatic(np.ones(stack.leaf_of.shape, dtype=bool),
                                                                 ~stack.job_static_rows, inputs)
            job.layout.job_static = state
        missing = universe_rows[~state.known[universe_rows]]
        if len(missing):
            for r, leaves in stack.job_static:
                leaf_of = stack.leaf_of[r, missing]
                for leaf in leaves:
                    mine = missing[leaf_of == leaf.id]
                    if len(mine):
                        state.ok[r, mine] = self._space.job_static_ok(leaf, state.inputs[leaf.id], mine)
            state.known[missing] = True
        return state.ok


def _asked_alike(stack: Stack, job_tables: JobTables, job: JobState) -> tuple:
    """What makes two requests on the shared offer the same question to the kernel: the stack,
    the job-and-slot conjuncts' answers and the job's values."""
    return (id(stack), id(job.layout.job_static), job_tables.scalar_ok.tobytes(),
            *(values.tobytes() for values in job_tables.scalars))


def _scattered(answers: tuple[np.ndarray, ...], positions: np.ndarray, n: int) -> tuple[np.ndarray, ...]:
    """Answers for ``positions`` of ``n`` rows spread over all ``n``: the others unmatched, as the
    kernel leaves a row it rejects (no cost, no consumption, unranked)."""
    matched, consumption, cost, rank = answers
    full = (np.zeros(n, dtype=bool), np.full((n, consumption.shape[1]), np.nan), np.full(n, np.nan),
            np.full((n, 3), UNRANKED))
    for whole, part in zip(full, (matched, consumption, cost, rank)):
        whole[positions] = part
    return full
