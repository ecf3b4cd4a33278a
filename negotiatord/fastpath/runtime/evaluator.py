""":class:`FastEvaluator`: the cycle's :class:`~negotiatord.evaluation.protocol.PairEvaluator`,
compiled and vectorised, answering exactly what :class:`~negotiatord.evaluation.reference.ClassAdEvaluator`
answers.

An ``assess`` call runs in stages, each one kernel call over the rows still in the running, so a
row stops costing anything at the first thing that rules it out:

0. rows a consumption known beforehand does not fit are left out (bounds.py);
1. consumption-policy slots: every Consumption<asset> (MY = slot, TARGET = job, a missing
   Request<asset> reads 0), then HTCondor's cp_sufficient_assets;
2. the slot's Requirements, then 3. the job's Requirements, with Request<asset> replaced by the
   consumption on consumption-policy slots (cp_override_requested);
4. SlotWeight, before and (consumption policy) after deducting the consumption: the match cost
   (cp_deduct_assets), or the whole SlotWeight on legacy slots;
5. the three ranks, for matched rows only.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable

import classad2
import numpy as np

from negotiatord.classad.parser import ParseError, parse
from negotiatord.classad.semantics import old_semantics
from negotiatord.evaluation.protocol import UNRANKED, Assessment
from negotiatord.fastpath.instructions import (
    LEAF_KIND, LEAF_PYTHON, SINK_CONSUME, SINK_FILTER, SINK_FILTER_LAST, SINK_MATCH, SINK_NUMBER,
    SINK_RANK_UNRANKED, SINK_RANK_ZERO,
)
from negotiatord.fastpath.compiler.cells import CONSUMPTION_PREFIX, SLOT_WEIGHT, CellTable, JobCells, SlotColumns
from negotiatord.fastpath.compiler.descriptions import PROCESS_DESCRIPTIONS, AdDescriptions
from negotiatord.fastpath.compiler.ir import IRGraph
from negotiatord.fastpath.compiler.leaves import Leaf
from negotiatord.fastpath.compiler.resolution import JOB, SLOT, Mode
from negotiatord.fastpath.runtime import kernels
from negotiatord.fastpath.runtime.bounds import KnownConsumption, known_consumption, misfits
from negotiatord.fastpath.runtime.evaluation_counts import FastPathStats
from negotiatord.fastpath.runtime.execution import Frame, NeedsFallback, Triple, run_batch, run_plan, triple
from negotiatord.fastpath.runtime.fallback import ReferenceFallback
from negotiatord.fastpath.runtime.job_scalars import JobScalars
from negotiatord.fastpath.runtime.space import CompiledRoot, Context, RootSpec, Space, match_array
from negotiatord.fastpath.runtime.tables import JobTables, ScalarLayout
from negotiatord.fastpath.strings import StringTable
from negotiatord.pool.autoclusters import Autocluster
from negotiatord.pool.snapshot import SlotTable
from negotiatord.settings import Settings

# output rows of one assess call
SLOT_REQ, JOB_REQ, WEIGHT_BEFORE, WEIGHT_AFTER, PRE_RANK, JOB_RANK, POST_RANK, CONSUMED = range(8)
RANK_ROWS = (PRE_RANK, JOB_RANK, POST_RANK)

WEIGHT = RootSpec("weight", SLOT, SLOT_WEIGHT, None, Mode(no_target=True), SINK_NUMBER)
REQUIREMENTS = {       # (side, on consumption-policy slots) -> that Requirements root
    (side, override): RootSpec(f"{side}_requirements{'_cp' if override else ''}", side, "requirements", None,
                               Mode(override=override), SINK_MATCH)
    for side in (SLOT, JOB) for override in (False, True)
}
JOB_RANK_SPEC = RootSpec("job_rank", JOB, "rank", None, Mode(), SINK_RANK_ZERO)
_NO_CODE = np.zeros((0, 8), dtype=np.int64)
_PRUNE_FROM = 16        # rows; on fewer, pruning first costs more than the kernel rows it saves


@dataclass
class _Task:
    """One root over some positions of the call, written to one output row."""

    spec: RootSpec
    positions: np.ndarray
    out_row: int
    fallback_root: str                # the root's name for the reference fallback
    asset_base: int = 0
    override: bool = False
    asset: str | None = None


@dataclass
class _Stack:
    """One combination of compiled roots (the kernel path's), and what every job whose roots
    compiled to it shares."""

    compiled: tuple[CompiledRoot | None, ...]   # held, so the id() key cannot be reused
    leaf_of: np.ndarray                         # [root, universe row] -> leaf id (-1: outside the domain)
    python_roots: list[int]                     # roots reaching a leaf with classad2-step inputs
    python_leaves: bool                         # some leaf is left to Python (the kernel checks the rows)
    job_static: list[tuple[int, list[Leaf]]]    # roots with their leaves that have job-and-slot conjuncts
    job_static_rows: np.ndarray                 # universe rows reaching one of those leaves
    job_static_nodes: list[int]                 # the job-only inputs of those leaves
    layout: ScalarLayout
    known_consumption: KnownConsumption         # Consumption roots whose values are known before the kernel
    job_static_states: dict[tuple[bytes, ...], _JobStatic] = field(default_factory=dict)  # by input values


@dataclass
class _JobStatic:
    """The job-and-slot conjuncts of the jobs giving the stack's job-static leaves the same inputs,
    [root, universe row] (true where the row's leaf has none): filled for the rows calls ask
    about, so a re-assessment, or a job like one seen before, is a lookup."""

    ok: np.ndarray
    known: np.ndarray                           # universe rows filled in every root
    inputs: dict[int, Triple]                   # leaf id -> the values of its inputs


@dataclass(frozen=True)
class _Offer:
    """Slot-table columns gathered for one array of rows."""

    rows: np.ndarray
    universe_rows: np.ndarray                 # the rows in the match space's universe
    consumption_policy: np.ndarray
    base: np.ndarray                  # the amounts in the slots' ads
    integer: np.ndarray               # whether each is an integer literal there


@dataclass
class _JobState:
    cells: JobCells | None
    scalars: JobScalars
    epoch: int = 0                                  # the match space's epoch these roots belong to
    stack: _Stack | None = None                     # the kernel path's roots for this epoch
    tables: JobTables | None = None
    job_static: _JobStatic | None = None            # with ``tables``
    roots: dict[str, CompiledRoot] = field(default_factory=dict)
    scalar_triples: dict[tuple[int, int], tuple[np.ndarray, ...]] = field(default_factory=dict)
    scalar_ok: dict[tuple[int, int], bool] = field(default_factory=dict)


class _Batch:
    """Kernel blocks collected for one stage; ``run`` executes them in one call."""

    def __init__(self) -> None:
        self.codes: list[np.ndarray] = []
        self.code_at: dict[int, int] = {}
        self.code_size = 0
        self.scalars: list[tuple[np.ndarray, ...]] = []
        self.scalar_at: dict[int, int] = {}
        self.scalar_size = 0
        self.blocks: list[list[int]] = []
        self.perms: list[np.ndarray] = []
        self.perm_size = 0
        self.registers = 1
        self.converts = False

    def code(self, key: int, code: np.ndarray) -> int:
        if key not in self.code_at:
            self.code_at[key] = self.code_size
            self.codes.append(code)
            self.code_size += len(code)
        return self.code_at[key]

    def scalar_base(self, leaf: Leaf, values: Callable[[], tuple[np.ndarray, ...]]) -> int:
        if leaf.id not in self.scalar_at:
            self.scalar_at[leaf.id] = self.scalar_size
            part = values()
            self.scalars.append(part)
            self.scalar_size += len(part[0])
        return self.scalar_at[leaf.id]

    def positions(self, positions: np.ndarray) -> tuple[int, int]:
        start = self.perm_size
        self.perms.append(positions)
        self.perm_size += len(positions)
        return start, self.perm_size

    def run(self, frame: Frame, space: Space, strings: StringTable) -> bool:
        if not self.blocks:
            return False
        frame.scalars = tuple(np.concatenate(parts) for parts in zip(*self.scalars)) if self.scalars else triple(1)
        frame.static = space.static
        frame.ensure_registers(self.registers)
        run_batch(np.concatenate(self.codes) if self.codes else _NO_CODE, np.array(self.blocks, dtype=np.int64),
                  np.concatenate(self.perms), frame, strings, self.converts)
        return True


class FastEvaluator:
    """PairEvaluator over a :class:`SlotTable` for one cycle (``now`` is the cycle's ``time()``).

    ``descriptions`` keeps what was read of each slot and job ad, by the ad's record; by default
    the process's :data:`~negotiatord.fastpath.compiler.descriptions.PROCESS_DESCRIPTIONS`, so a
    daemon's next cycle, building a new evaluator over the records its snapshot builder kept,
    reads no unchanged ad again. A caller may keep a cache of its own instead.
    """

    def __init__(self, table: SlotTable, settings: Settings, now: int,
                 descriptions: AdDescriptions = PROCESS_DESCRIPTIONS) -> None:
        self._table = table
        self._settings = settings
        self._now = now
        self._descriptions = descriptions
        self.stats = FastPathStats()
        self._assets = len(table.assets)
        self._fallback = ReferenceFallback(table, settings, now)
        self._consumption = [
            RootSpec(f"consumption_{a.lower()}", SLOT, CONSUMPTION_PREFIX + a.lower(), None,
                     Mode(consume=a.lower()), SINK_CONSUME)
            for a in table.assets
        ]
        self._ranks = [self._rank_spec("pre_rank", settings.pre_job_rank), JOB_RANK_SPEC,
                       self._rank_spec("post_rank", settings.post_job_rank)]
        # the roots of the one-call kernel path, in kernels.assess_rows' order
        self._kernel_specs = [*self._consumption, REQUIREMENTS[SLOT, False], REQUIREMENTS[SLOT, True],
                              REQUIREMENTS[JOB, False], REQUIREMENTS[JOB, True], WEIGHT, *self._ranks]
        self._clock = 0           # wall-clock second of the current call (old-semantics CurrentTime)
        self._reset(old_semantics())

    def _reset(self, old: bool) -> None:
        """Everything compiled depends on classad2's scoping mode; start over when it changes."""
        table = self._table
        strings = StringTable()
        cells = CellTable(strings)
        columns = SlotColumns(table.slots, {a.lower(): i for i, a in enumerate(table.assets)}, cells, self._now,
                              self._descriptions)
        self._context = Context(IRGraph(), cells, columns, strings, self._assets, self._now, old)
        self._match_space = Space(self._context, np.flatnonzero(table.candidate), len(table))
        self._weight_space: Space | None = None
        self._jobs: dict[int, _JobState] = {}
        self._no_job = _JobState(None, JobScalars(self._context, None))
        self._shared: dict[tuple[int, int, str], CompiledRoot] = {}
        self._reported: set[tuple[int, int]] = set()
        self._stacks: dict[tuple[int, ...], _Stack] = {}          # id() of each compiled root -> stack
        self._registers = triple((1, 1))
        self._offer: _Offer | None = None                          # in this match space

    # -- PairEvaluator ------------------------------------------------------------------------------

    def slot_weights(self, rows: np.ndarray, amounts: np.ndarray) -> np.ndarray:
        rows = np.asarray(rows, dtype=np.int64)
        self._start_call()
        if self._weight_space is None:
            self._weight_space = Space(self._context, np.arange(len(self._table)), len(self._table))
        space = self._weight_space
        self.stats.weight_rows += len(rows)
        frame = self._frame(space, rows, amounts, np.full(amounts.shape, np.nan), rows_out=1)
        frame.out[2][0] = np.nan
        pending = self._stage([_Task(WEIGHT, np.arange(len(rows)), 0, "weight")], None, space, frame)
        for task, positions in pending:
            for k in positions:
                self.stats.fallback_evaluations["weight"] += 1
                frame.out[2][0, k] = self._fallback.weight(int(rows[k]), amounts[k])
        return frame.out[2][0].copy()

    def assess(self, autocluster: Autocluster, rows: np.ndarray, amounts: np.ndarray) -> Assessment:
        rows = np.asarray(rows, dtype=np.int64)
        amounts = np.ascontiguousarray(amounts, dtype=np.float64)
        self._start_call()
        self.stats.assess_calls += 1
        self.stats.pairs += len(rows)
        job = self._job(autocluster)
        offer = self._offer_of(rows)
        universe_rows = offer.universe_rows
        if job.epoch != self._match_space.epoch:
            job.roots.clear()
            job.stack, job.tables, job.job_static = None, None, None
            job.epoch = self._match_space.epoch
        done = self._assess_in_kernel(job, offer, amounts)
        if done is not None:
            self.stats.kernel_batches += 1
            return done
        return self._assess_in_stages(autocluster, job, rows, amounts)

    def _offer_of(self, rows: np.ndarray) -> _Offer:
        """The per-row columns of ``rows``, gathered once for a row array passed again (the cycle
        offers one read-only array to every autocluster until a match changes the pool)."""
        offer = self._offer
        if offer is None or offer.rows is not rows or rows.flags.writeable:
            table = self._table
            offer = self._offer = _Offer(rows, self._match_space.universe(rows), table.consumption_policy[rows],
                                         table.amounts[rows], table.integer_amounts[rows])
        return offer

    def _assess_in_kernel(self, job: _JobState, offer: _Offer, amounts: np.ndarray) -> Assessment | None:
        """The whole assessment in one kernel call (kernels.assess_rows); None when some leaf
        the rows reach needs Python (classad2 steps or fallbacks): the staged path does those."""
        space = self._match_space
        if job.stack is None:
            job.stack = self._stack([self._compiled(spec, job, space) if spec is not None else None
                                     for spec in self._kernel_specs])
        stack = job.stack
        job_tables = self._job_tables(job, stack)
        rows, universe_rows = offer.rows, offer.universe_rows
        n = len(rows)
        try:
            job_ok = self._job_ok(job, stack, universe_rows)
        except NeedsFallback:
            return None
        consumption_policy, base, integer = offer.consumption_policy, offer.base, offer.integer
        fits = None
        if stack.python_roots:        # classad2 steps' values, computed before the kernel reads them
            frame = Frame(n, universe_rows, triple(1), static=space.static, dynamic=space.dynamic_inputs(n))
            if not self._python_inputs_of(stack, job, frame):
                return None
            dynamic = frame.dynamic
        else:
            if stack.known_consumption.any and n >= _PRUNE_FROM:
                fits = self._fitting(stack, job_tables, offer, amounts)
            if fits is not None:      # the kernel sees only the rows whose known consumption fits
                universe_rows, consumption_policy = universe_rows[fits], consumption_policy[fits]
                amounts, base, integer = amounts[fits], base[fits], integer[fits]
            dynamic = space.dynamic_inputs(len(universe_rows))
        answers = self._kernel(stack, job_tables, job_ok, dynamic, universe_rows, consumption_policy, amounts, base,
                               integer)
        if answers is None:
            return None
        if fits is not None:
            answers = _scattered(answers, fits, n)
        return Assessment(rows, *answers)

    def _fitting(self, stack: _Stack, job_tables: JobTables, offer: _Offer,
                 amounts: np.ndarray) -> np.ndarray | None:
        """Positions not ruled out by a consumption known before the kernel (bounds.py); None
        when nothing is ruled out."""
        misfit = misfits(stack.known_consumption, stack.leaf_of, offer.universe_rows, offer.consumption_policy,
                         offer.base, amounts, job_tables.scalar_base, job_tables.scalars, self._match_space.static)
        if misfit is None or not misfit.any():
            return None
        self.stats.pruned_pairs += int(misfit.sum())
        return np.flatnonzero(~misfit)

    def _python_inputs_of(self, stack: _Stack, job: _JobState, frame: Frame) -> bool:
        """Fill the classad2-step inputs of every leaf the frame's rows reach; False if one needs
        a fallback."""
        space = self._match_space
        for r in stack.python_roots:
            for leaf_id, positions in _by_leaf(stack.leaf_of[r, frame.universe_rows], np.arange(frame.n),
                                               allow_outside=True):
                leaf = space.leaves[leaf_id]
                if leaf.python_inputs and leaf.plan is not None and not self._python_inputs(leaf, positions,
                                                                                             job, frame):
                    return False
        return True

    def _kernel(self, stack: _Stack, job_tables: JobTables, job_ok: np.ndarray, dynamic: Triple,
                universe_rows: np.ndarray, consumption_policy: np.ndarray, amounts: np.ndarray, base: np.ndarray,
                integer: np.ndarray) -> tuple[np.ndarray, ...] | None:
        """kernels.assess_rows over these rows: (matched, consumption, cost, rank), or None when
        a leaf needs Python."""
        tables = self._match_space.tables
        n = len(universe_rows)
        if self._registers[0].shape[0] < tables.registers or self._registers[0].shape[1] < n:
            self._registers = triple((tables.registers, max(n, 2 * self._registers[0].shape[1])))
        strings = self._context.strings
        conversions = strings.conversions() if tables.converts else triple((5, 1))
        matched = np.zeros(n, dtype=bool)
        consumption = np.empty((n, self._assets))
        cost, rank = np.empty(n), np.empty((n, 3))
        ok = kernels.assess_rows(universe_rows, consumption_policy, amounts, base, integer, stack.leaf_of,
                                 stack.python_leaves, tables.leaves, tables.segments, tables.static_ok, job_ok,
                                 job_tables.scalar_base, job_tables.scalar_ok, tables.code, *job_tables.scalars,
                                 *self._match_space.static, *self._registers, *dynamic, strings.lower(),
                                 strings.ranks(), *conversions, matched, consumption, cost, rank)
        return (matched, consumption, cost, rank) if ok else None

    def _stack(self, compiled: list[CompiledRoot | None]) -> _Stack:
        """The stack of these compiled roots, made when a job first compiles to them."""
        key = tuple(id(c) for c in compiled)
        found = self._stacks.get(key)
        if found is None:
            space = self._match_space
            leaf_of = np.stack([c.leaf_of if c is not None else np.full(len(space.rows), -1) for c in compiled])
            python = [r for r, c in enumerate(compiled)
                      if c is not None and any(space.leaves[i].python_inputs for i in c.leaf_ids)]
            reached = np.unique(leaf_of[leaf_of >= 0])
            python_leaves = bool((space.tables.leaves[reached, LEAF_KIND] == LEAF_PYTHON).any())
            job_static = []
            reaching = np.zeros(len(space.rows), dtype=bool)
            for r, c in enumerate(compiled):
                leaves = [space.leaves[i] for i in (c.leaf_ids if c is not None else ())
                          if space.leaves[i].job_static is not None]
                if leaves:
                    job_static.append((r, leaves))
                    reaching |= np.isin(leaf_of[r], [leaf.id for leaf in leaves])
            inputs = sorted({n for _, leaves in job_static for leaf in leaves
                             for n in leaf.job_static_inputs.scalar_nodes})
            planned = {i: space.leaves[i] for c in compiled if c is not None for i in c.leaf_ids
                       if space.leaves[i].plan is not None}
            layout = ScalarLayout(list(planned.values()), len(space.leaves))
            found = self._stacks[key] = _Stack(tuple(compiled), leaf_of, python, python_leaves, job_static, reaching,
                                               inputs, layout, known_consumption(leaf_of, space.tables, self._assets))
        return found

    def _job_tables(self, job: _JobState, stack: _Stack) -> JobTables:
        """Scalar inputs and job-only conjuncts of every leaf of the stack, computed together
        (one scalar plan per job)."""
        tables = job.tables
        if tables is None or tables.layout is not stack.layout or not tables.holds(self._clock):
            job.scalars.set_clock(self._clock)
            values = job.scalars.triple(stack.layout.nodes)
            tables = job.tables = JobTables(stack.layout, values, match_array(*values), self._clock)
            job.job_static = None
        return tables

    def _job_ok(self, job: _JobState, stack: _Stack, universe_rows: np.ndarray) -> np.ndarray:
        """[root, universe row]: whether the job-and-slot conjuncts of each row's leaf match (true
        where the leaf has none), known for ``universe_rows``; computed once per row and distinct job
        inputs (space.job_static_ok)."""
        state = job.job_static
        if state is None:
            job.scalars.set_clock(self._clock)
            values = job.scalars.triple(stack.job_static_nodes)
            key = tuple(v.tobytes() for v in values)
            state = stack.job_static_states.get(key)
            if state is None:
                index = {node: i for i, node in enumerate(stack.job_static_nodes)}
                inputs = {leaf.id: tuple(v[[index[n] for n in leaf.job_static_inputs.scalar_nodes]] for v in values)
                          for _, leaves in stack.job_static for leaf in leaves}
                state = stack.job_static_states[key] = _JobStatic(np.ones(stack.leaf_of.shape, dtype=bool),
                                                                  ~stack.job_static_rows, inputs)
            job.job_static = state
        missing = universe_rows[~state.known[universe_rows]]
        if len(missing):
            for r, leaves in stack.job_static:
                leaf_of = stack.leaf_of[r, missing]
                for leaf in leaves:
                    mine = missing[leaf_of == leaf.id]
                    if len(mine):
                        state.ok[r, mine] = self._match_space.job_static_ok(leaf, state.inputs[leaf.id], mine)
            state.known[missing] = True
        return state.ok

    def _assess_in_stages(self, autocluster: Autocluster, job: _JobState, rows: np.ndarray,
                          amounts: np.ndarray) -> Assessment:
        n = len(rows)
        space = self._match_space
        consumption_policy = self._table.consumption_policy[rows]
        has = ~np.isnan(self._table.amounts[rows])
        used = np.full(amounts.shape, np.nan)
        frame = self._frame(space, rows, amounts, used, rows_out=CONSUMED + self._assets)
        out = frame.out[2]
        out[WEIGHT_BEFORE:WEIGHT_AFTER + 1] = np.nan
        resolve = self._resolver(autocluster, rows, amounts, used, frame)

        # 1. consumption and cp_sufficient_assets
        sufficient = ~consumption_policy
        if consumption_policy.any():
            tasks = [_Task(spec, np.flatnonzero(consumption_policy & has[:, c]), CONSUMED + c, "consumption",
                           asset=spec.mode.consume) for c, spec in enumerate(self._consumption)]
            resolve(self._stage(tasks, job, space, frame))
            used[consumption_policy] = np.where(has[consumption_policy], out[CONSUMED:, consumption_policy].T, np.nan)
            self._dynamic_inputs(frame, rows, amounts, used)
            sufficient = sufficient.copy()
            sufficient[consumption_policy] = kernels.sufficient_assets(used[consumption_policy],
                                                                       amounts[consumption_policy])

        # 2-3. both Requirements, each on the rows the previous stage left
        alive = np.flatnonzero(sufficient)
        for side, row in ((SLOT, SLOT_REQ), (JOB, JOB_REQ)):
            legacy, partitionable = alive[~consumption_policy[alive]], alive[consumption_policy[alive]]
            resolve(self._stage([
                _Task(REQUIREMENTS[side, False], legacy, row, f"{side}_requirements"),
                _Task(REQUIREMENTS[side, True], partitionable, row, f"{side}_requirements", override=True),
            ], job, space, frame))
            alive = alive[out[row, alive] > 0.5]

        # 4. match cost
        partitionable = alive[consumption_policy[alive]]
        resolve(self._stage([
            _Task(WEIGHT, alive, WEIGHT_BEFORE, "weight"),
            _Task(WEIGHT, partitionable, WEIGHT_AFTER, "weight_after", asset_base=2 * self._assets),
        ], job, space, frame))
        price = np.where(consumption_policy, out[WEIGHT_BEFORE] - out[WEIGHT_AFTER], out[WEIGHT_BEFORE])
        matched = np.zeros(n, dtype=bool)
        matched[alive] = ~np.isnan(price[alive])

        # 5. ranks
        winners = np.flatnonzero(matched)
        rank = np.full((n, 3), UNRANKED)
        tasks = [_Task(spec, winners, row, spec.name) for row, spec in zip(RANK_ROWS, self._ranks) if spec is not None]
        resolve(self._stage(tasks, job, space, frame))
        for column, (row, spec) in enumerate(zip(RANK_ROWS, self._ranks)):
            if spec is not None:
                rank[winners, column] = out[row, winners]

        consumption = np.where(consumption_policy[:, None], used, amounts)
        consumption[~matched] = np.nan
        return Assessment(rows=rows, matched=matched, consumption=consumption,
                          cost=np.where(matched, price, np.nan), rank=rank)

    # -- stages ------------------------------------------------------------------------------------

    def _stage(self, tasks: list[_Task], job: _JobState | None, space: Space,
               frame: Frame) -> list[tuple[_Task, np.ndarray]]:
        """Run the tasks' compiled leaves (one kernel call, plus plans with classad2 steps);
        return the (task, positions) that fall back to classad2."""
        batch = _Batch()
        pending: list[tuple[_Task, np.ndarray]] = []
        for task in tasks:
            if not len(task.positions):
                continue
            compiled = self._compiled(task.spec, job, space)
            for leaf_id, positions in _by_leaf(compiled.leaf_of[frame.universe_rows[task.positions]], task.positions):
                leaf = space.leaves[leaf_id]
                if leaf.plan is None:
                    if (id(space), leaf_id) not in self._reported:
                        self._reported.add((id(space), leaf_id))
                        self.stats.fallback_leaves[leaf.reason] += 1
                    pending.append((task, positions))
                elif leaf.python_inputs and not self._python_inputs(leaf, positions, job, frame):
                    pending.append((task, positions))
                elif leaf.chain is not None:
                    try:
                        self._chain(batch, leaf, task, positions, job, frame)
                    except NeedsFallback:
                        pending.append((task, positions))
                elif leaf.plan.native:
                    self._block(batch, leaf, task, positions, job)
                else:
                    frame.scalars, frame.static = self._scalars(job, leaf), space.static
                    try:
                        run_plan(leaf.plan, positions, frame, self._context.strings, [(task.spec.sink, task.out_row)],
                                 asset_base=task.asset_base)
                    except NeedsFallback:
                        pending.append((task, positions))
        if batch.run(frame, space, self._context.strings):
            self.stats.kernel_batches += 1
        self.stats.compiled_leaves = len(self._match_space.leaves) + len(self._weight_space.leaves if
                                                                           self._weight_space else ())
        return pending

    def _python_inputs(self, leaf: Leaf, positions: np.ndarray, job: _JobState | None, frame: Frame) -> bool:
        """Fill the leaf's classad2-step inputs for ``positions``; False if one needs a fallback."""
        space = self._match_space
        if frame.dynamic[0].shape[0] < space.dynamic_input_rows:       # classad2 steps compiled since
            grown = space.dynamic_inputs(frame.dynamic[0].shape[1])
            for new, old in zip(grown, frame.dynamic):
                new[: old.shape[0]] = old
            frame.dynamic = grown
        try:
            space.fill_python_inputs(leaf.python_inputs, positions, frame.universe_rows, self._scalars(job, leaf),
                                     frame.dynamic)
        except NeedsFallback:
            return False
        return True

    def _block(self, batch: _Batch, leaf: Leaf, task: _Task, positions: np.ndarray, job: _JobState | None) -> None:
        plan = leaf.plan
        start = batch.code(leaf.id, plan.code)
        base = batch.scalar_base(leaf, lambda: self._scalars(job, leaf))
        batch.registers = max(batch.registers, plan.registers)
        batch.converts |= plan.converts
        p0, p1 = batch.positions(positions)
        kind, idx = plan.results[0]
        batch.blocks.append([start, start + len(plan.code), p0, p1, kind, idx, task.spec.sink, task.out_row, base,
                             task.asset_base, 0])

    def _chain(self, batch: _Batch, leaf: Leaf, task: _Task, positions: np.ndarray, job: _JobState | None,
               frame: Frame) -> None:
        """A Requirements leaf: 0 everywhere, then 1 where every conjunct matches."""
        frame.out[2][task.out_row, positions] = 0.0
        if leaf.never or not self._scalar_ok(job, leaf):
            return
        positions = positions[self._match_space.tables.static_ok[leaf.id, frame.universe_rows[positions]]]
        if leaf.job_static is not None:
            positions = positions[self._job_static_ok(job, leaf, frame.universe_rows[positions])]
        chain = leaf.chain
        if not len(positions):
            return
        if not chain.results:
            frame.out[2][task.out_row, positions] = 1.0
            return
        start = batch.code(leaf.id, chain.code)
        base = batch.scalar_base(leaf, lambda: self._scalars(job, leaf))
        batch.registers = max(batch.registers, chain.registers)
        batch.converts |= chain.converts
        p0, p1 = batch.positions(positions)
        previous = 0
        for j, ((kind, idx), end) in enumerate(zip(chain.results, chain.ends)):
            last = j == len(chain.results) - 1
            batch.blocks.append([start + previous, start + end, p0, p1, kind, idx,
                                 SINK_FILTER_LAST if last else SINK_FILTER, task.out_row, base,
                                 task.asset_base, 1 if j else 0])
            previous = end

    # -- pieces ------------------------------------------------------------------------------------

    def _start_call(self) -> None:
        self._clock = int(time.time())

    def _rank_spec(self, name: str, text: str | None) -> RootSpec | None:
        if not text:
            return None
        try:
            ast = parse(str(classad2.ExprTree(text)))
        except ParseError:
            ast = ("call", "eval", ())       # resolves as unsupported: classad2 evaluates it
        return RootSpec(name, SLOT, None, ast, Mode(), SINK_RANK_UNRANKED)

    def _job(self, autocluster: Autocluster) -> _JobState:
        state = self._jobs.get(autocluster.id)
        if state is None:
            if old_semantics() != self._context.old_semantics:
                self._reset(not self._context.old_semantics)
            representative = autocluster.representative
            cells = JobCells(representative.ad, self._context.cells, self._now,
                             self._descriptions.of(representative))
            state = self._jobs[autocluster.id] = _JobState(cells, JobScalars(self._context, cells))
        return state

    def _frame(self, space: Space, rows: np.ndarray, amounts: np.ndarray, used: np.ndarray, rows_out: int) -> Frame:
        frame = Frame(len(rows), space.universe(rows), triple(1), out=triple((rows_out, len(rows))))
        frame.dynamic = triple((3 * self._assets, max(len(rows), 1)))
        self._dynamic_inputs(frame, rows, amounts, used)
        return frame

    def _dynamic_inputs(self, frame: Frame, rows: np.ndarray, amounts: np.ndarray, used: np.ndarray) -> None:
        kernels.asset_inputs(np.ascontiguousarray(amounts, dtype=np.float64), self._table.amounts[rows],
                       self._table.integer_amounts[rows], used, *frame.dynamic)

    def _compiled(self, spec: RootSpec, job: _JobState | None, space: Space) -> CompiledRoot:
        if job is None or spec.mode.no_target:
            key = (id(space), space.epoch, spec.name)
            found = self._shared.get(key)
            if found is None:
                found = self._shared[key] = space.compiled(spec, None, self._domain(spec))
            return found
        found = job.roots.get(spec.name)
        if found is None:
            job.scalars.set_clock(self._clock)
            found = job.roots[spec.name] = space.compiled(spec, job.cells, self._domain(spec), job.scalars.value)
        return found

    def _domain(self, spec: RootSpec) -> Callable[[np.ndarray], np.ndarray]:
        table = self._table
        if spec.mode.consume is not None:
            column = table.asset_column(spec.mode.consume)
            return lambda rows: table.consumption_policy[rows] & ~np.isnan(table.amounts[rows, column])
        if spec.name.endswith("requirements"):
            return lambda rows: ~table.consumption_policy[rows]
        if spec.name.endswith("requirements_cp"):
            return lambda rows: table.consumption_policy[rows]
        return lambda rows: np.ones(len(rows), dtype=bool)

    def _scalars(self, job: _JobState | None, leaf: Leaf) -> tuple[np.ndarray, ...]:
        tables = job.tables if job is not None else None
        if tables is not None and tables.has(leaf.id) and tables.holds(self._clock):
            return tables.part(leaf.id)
        state = job or self._no_job
        state.scalars.set_clock(self._clock)
        key = (leaf.id, self._clock if leaf.uses_clock else 0)
        found = state.scalar_triples.get(key)
        if found is None:
            found = state.scalar_triples[key] = state.scalars.triple(leaf.scalar_nodes)
        return found

    def _job_static_ok(self, job: _JobState | None, leaf: Leaf, universe_rows: np.ndarray) -> np.ndarray:
        """Whether the leaf's job-and-slot conjuncts match on ``universe_rows`` (space.job_static_ok)."""
        state = job or self._no_job
        state.scalars.set_clock(self._clock)
        values = state.scalars.triple(leaf.job_static_inputs.scalar_nodes)
        return self._match_space.job_static_ok(leaf, values, universe_rows)

    def _scalar_ok(self, job: _JobState | None, leaf: Leaf) -> bool:
        """Whether every job-only conjunct of a Requirements leaf matches for this job."""
        if not leaf.scalar_conjuncts:
            return True
        state = job or self._no_job
        state.scalars.set_clock(self._clock)
        clocked = any(self._context.graph[n].uses_clock for n in leaf.scalar_conjuncts)
        key = (leaf.id, self._clock if clocked else 0)
        found = state.scalar_ok.get(key)
        if found is None:
            found = state.scalar_ok[key] = bool(match_array(*state.scalars.triple(leaf.scalar_conjuncts)).all())
        return found

    def _resolver(self, autocluster: Autocluster, rows: np.ndarray, amounts: np.ndarray, used: np.ndarray,
                  frame: Frame) -> Callable[[list[tuple[_Task, np.ndarray]]], None]:
        """classad2 values for the (task, positions) a stage left to the reference."""

        def resolve(pending: list[tuple[_Task, np.ndarray]]) -> None:
            for task, positions in pending:
                for k in positions:
                    self.stats.fallback_evaluations[task.fallback_root] += 1
                    frame.out[2][task.out_row, k] = self._fallback.value(
                        task.fallback_root, int(rows[k]), autocluster, amounts[k], used[k], task.override, task.asset)

        return resolve


def _scattered(answers: tuple[np.ndarray, ...], positions: np.ndarray, n: int) -> tuple[np.ndarray, ...]:
    """Answers for ``positions`` of ``n`` rows spread over all ``n``: the others unmatched, as the
    kernel leaves a row it rejects (no cost, no consumption, unranked)."""
    matched, consumption, cost, rank = answers
    full = (np.zeros(n, dtype=bool), np.full((n, consumption.shape[1]), np.nan), np.full(n, np.nan),
            np.full((n, 3), UNRANKED))
    for whole, part in zip(full, (matched, consumption, cost, rank)):
        whole[positions] = part
    return full


def _by_leaf(leaf_ids: np.ndarray, positions: np.ndarray, allow_outside: bool = False):
    """(leaf id, positions) groups; rows outside the root's domain (-1) only when allowed, and
    then skipped."""
    if not len(leaf_ids):
        return
    first = leaf_ids[0]
    if (leaf_ids == first).all():
        if first >= 0:
            yield int(first), positions
        elif not allow_outside:
            raise RuntimeError("row outside the compiled root's domain")
        return
    order = np.argsort(leaf_ids, kind="stable")
    ids = leaf_ids[order]
    cuts = np.flatnonzero(ids[1:] != ids[:-1]) + 1
    for chunk in np.split(order, cuts):
        leaf_id = int(leaf_ids[chunk[0]])
        if leaf_id < 0:
            if allow_outside:
                continue
            raise RuntimeError("row outside the compiled root's domain")
        yield leaf_id, positions[chunk]
