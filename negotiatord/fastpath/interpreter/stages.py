"""Assessment in stages, each one kernel call over the rows still in the running, with classad2
steps and fallbacks between: the path for jobs some of whose leaves need Python, and for the
pool's slot weights.

An assessment's stages, so a row stops costing anything at the first thing that rules it out:

1. consumption-policy slots: every Consumption<asset> (MY = slot, TARGET = job, a missing
   Request<asset> reads 0), then HTCondor's cp_sufficient_assets;
2. the slot's Requirements, then 3. the job's Requirements, with Request<asset> replaced by the
   consumption on consumption-policy slots (cp_override_requested);
4. SlotWeight, before and (consumption policy) after deducting the consumption: the match cost
   (cp_deduct_assets), or the whole SlotWeight on legacy slots;
5. the three ranks, for matched rows only.
"""

from __future__ import annotations

from dataclasses import dataclass
from collections.abc import Callable

import numpy as np

from negotiatord.evaluation.protocol import UNRANKED, Assessment
from negotiatord.fastpath.compiler.leaves import Leaf
from negotiatord.fastpath.compiler.lowering import Plan
from negotiatord.fastpath.compiler.resolution import JOB, SLOT
from negotiatord.fastpath.instructions import SINK_FILTER, SINK_FILTER_LAST
from negotiatord.fastpath.interpreter import kernels
from negotiatord.fastpath.interpreter.evaluation_counts import FastPathStats
from negotiatord.fastpath.interpreter.execution import Frame, NeedsFallback, Triple, run_batch, run_plan, triple
from negotiatord.fastpath.interpreter.fallback import ReferenceFallback
from negotiatord.fastpath.interpreter.jobs import JobRoots, JobState
from negotiatord.fastpath.interpreter.roots import REQUIREMENTS, WEIGHT, CycleRoots
from negotiatord.fastpath.interpreter.space import Context, RootSpec, Space, by_leaf
from negotiatord.fastpath.strings import StringTable
from negotiatord.pool.autoclusters import Autocluster
from negotiatord.pool.snapshot import SlotTable

# output rows of one assessment
SLOT_REQ, JOB_REQ, WEIGHT_BEFORE, WEIGHT_AFTER, PRE_RANK, JOB_RANK, POST_RANK, CONSUMED = range(8)
RANK_ROWS = (PRE_RANK, JOB_RANK, POST_RANK)
_NO_CODE = np.zeros((0, 8), dtype=np.int64)


@dataclass
class Task:
    """One root over some positions of the call, written to one output row."""

    spec: RootSpec
    positions: np.ndarray
    out_row: int
    fallback_root: str                # the root's name for the reference fallback
    asset_base: int = 0
    override: bool = False
    asset: str | None = None


class Batch:
    """Kernel blocks collected for one stage; ``run`` executes them in one call."""

    def __init__(self) -> None:
        self.codes: list[np.ndarray] = []
        self.code_at: dict[int, int] = {}
        self.code_size = 0
        self.scalars: list[Triple] = []
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

    def scalar_base(self, leaf: Leaf, values: Callable[[], Triple]) -> int:
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
        if self.scalars:
            t, i, f = zip(*self.scalars)
            frame.scalars = np.concatenate(t), np.concatenate(i), np.concatenate(f)
        else:
            frame.scalars = triple(1)
        frame.static = space.static
        frame.ensure_registers(self.registers)
        run_batch(np.concatenate(self.codes) if self.codes else _NO_CODE, np.array(self.blocks, dtype=np.int64),
                  np.concatenate(self.perms), frame, strings, self.converts)
        return True


class StagedAssessment:
    """The staged path over the match space, and slot weights over a space of the whole table."""

    def __init__(self, table: SlotTable, context: Context, space: Space, roots: JobRoots, specs: CycleRoots,
                 fallback: ReferenceFallback, stats: FastPathStats) -> None:
        self._table = table
        self._context = context
        self._space = space
        self._roots = roots
        self._specs = specs
        self._fallback = fallback
        self._stats = stats
        self._assets = context.assets
        self._weight_space: Space | None = None
        self._reported: set[tuple[int, int]] = set()

    def slot_weights(self, rows: np.ndarray, amounts: np.ndarray) -> np.ndarray:
        """SlotWeight of table ``rows`` at ``amounts`` (PairEvaluator.slot_weights). The weight
        space holds the rows first asked (a cycle asks for the slots whose weights were not kept
        from the last: a daemon's changed slots, not its whole pool); others join it if asked."""
        if self._weight_space is None:
            slot_rows = self._space.slot_rows
            self._weight_space = Space(self._context, np.unique(slot_rows.column_of[rows]), slot_rows)
        space = self._weight_space
        self._stats.weight_rows += len(rows)
        frame = self._frame(space, rows, amounts, np.full(amounts.shape, np.nan), rows_out=1)
        frame.out[2][0] = np.nan
        pending = self._stage([Task(WEIGHT, np.arange(len(rows)), 0, "weight")], None, space, frame)
        for _task, positions in pending:
            for k in positions:
                self._stats.fallback_evaluations["weight"] += 1
                frame.out[2][0, k] = self._fallback.weight(int(rows[k]), amounts[k])
        return frame.out[2][0].copy()

    def assess(self, autocluster: Autocluster, job: JobState, rows: np.ndarray, amounts: np.ndarray) -> Assessment:
        """The job's assessment against table ``rows`` at ``amounts``, stage by stage."""
        n = len(rows)
        space = self._space
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
            tasks = [Task(spec, np.flatnonzero(consumption_policy & has[:, c]), CONSUMED + c, "consumption",
                           asset=spec.mode.consume) for c, spec in enumerate(self._specs.consumption)]
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
                Task(REQUIREMENTS[side, False], legacy, row, f"{side}_requirements"),
                Task(REQUIREMENTS[side, True], partitionable, row, f"{side}_requirements", override=True),
            ], job, space, frame))
            alive = alive[out[row, alive] > 0.5]

        # 4. match cost
        partitionable = alive[consumption_policy[alive]]
        resolve(self._stage([
            Task(WEIGHT, alive, WEIGHT_BEFORE, "weight"),
            Task(WEIGHT, partitionable, WEIGHT_AFTER, "weight_after", asset_base=2 * self._assets),
        ], job, space, frame))
        price = np.where(consumption_policy, out[WEIGHT_BEFORE] - out[WEIGHT_AFTER], out[WEIGHT_BEFORE])
        matched = np.zeros(n, dtype=bool)
        matched[alive] = ~np.isnan(price[alive])

        # 5. ranks
        winners = np.flatnonzero(matched)
        rank = np.full((n, 3), UNRANKED)
        tasks = [Task(spec, winners, row, spec.name)
                 for row, spec in zip(RANK_ROWS, self._specs.ranks) if spec is not None]
        resolve(self._stage(tasks, job, space, frame))
        for column, (row, spec) in enumerate(zip(RANK_ROWS, self._specs.ranks)):
            if spec is not None:
                rank[winners, column] = out[row, winners]

        consumption = np.where(consumption_policy[:, None], used, amounts)
        consumption[~matched] = np.nan
        return Assessment(rows=rows, matched=matched, consumption=consumption,
                          cost=np.where(matched, price, np.nan), rank=rank)

    def raw(self, spec: RootSpec, job: JobState, rows: np.ndarray, amounts: np.ndarray) -> tuple[Triple, np.ndarray]:
        """``spec``'s values for the job on table ``rows`` at ``amounts``, as (tag, integer,
        real) arrays, and the positions whose leaves classad2 must evaluate instead."""
        frame = self._frame(self._space, rows, amounts, np.full(amounts.shape, np.nan), rows_out=1)
        pending = self._stage([Task(spec, np.arange(len(rows)), 0, spec.name)], job, self._space, frame)
        left = np.concatenate([positions for _, positions in pending]) if pending else np.zeros(0, dtype=np.int64)
        return (frame.out[0][0], frame.out[1][0], frame.out[2][0]), left

    def _stage(self, tasks: list[Task], job: JobState | None, space: Space,
               frame: Frame) -> list[tuple[Task, np.ndarray]]:
        """Run the tasks' compiled leaves (one kernel call, plus plans with classad2 steps);
        return the (task, positions) that fall back to classad2."""
        batch = Batch()
        pending: list[tuple[Task, np.ndarray]] = []
        for task in tasks:
            if not len(task.positions):
                continue
            compiled = self._roots.compiled(task.spec, job, space)
            for leaf_id, positions in by_leaf(compiled.leaf_of[frame.universe_rows[task.positions]], task.positions):
                leaf = space.leaves[leaf_id]
                if leaf.plan is None:
                    if (id(space), leaf_id) not in self._reported:
                        self._reported.add((id(space), leaf_id))
                        self._stats.fallback_leaves[leaf.reason] += 1
                    pending.append((task, positions))
                elif leaf.python_inputs and not self._roots.fill_python_inputs(leaf, positions, job, frame):
                    pending.append((task, positions))
                elif leaf.chain is not None:
                    try:
                        self._chain(batch, leaf, leaf.chain, task, positions, job, frame)
                    except NeedsFallback:
                        pending.append((task, positions))
                elif leaf.plan.native:
                    self._block(batch, leaf, leaf.plan, task, positions, job)
                else:
                    frame.scalars, frame.static = self._roots.scalars(job, leaf), space.static
                    try:
                        run_plan(leaf.plan, positions, frame, self._context.strings, [(task.spec.sink, task.out_row)],
                                 asset_base=task.asset_base)
                    except NeedsFallback:
                        pending.append((task, positions))
        if batch.run(frame, space, self._context.strings):
            self._stats.kernel_batches += 1
        weighing = self._weight_space.leaves if self._weight_space else ()
        self._stats.compiled_leaves = len(self._space.leaves) + len(weighing)
        return pending

    def _block(self, batch: Batch, leaf: Leaf, plan: Plan, task: Task, positions: np.ndarray,
               job: JobState | None) -> None:
        start = batch.code(leaf.id, plan.code)
        base = batch.scalar_base(leaf, lambda: self._roots.scalars(job, leaf))
        batch.registers = max(batch.registers, plan.registers)
        batch.converts |= plan.converts
        p0, p1 = batch.positions(positions)
        kind, idx = plan.results[0]
        batch.blocks.append([start, start + len(plan.code), p0, p1, kind, idx, task.spec.sink, task.out_row, base,
                             task.asset_base, 0])

    def _chain(self, batch: Batch, leaf: Leaf, chain: Plan, task: Task, positions: np.ndarray,
               job: JobState | None, frame: Frame) -> None:
        """A Requirements leaf: 0 everywhere, then 1 where every conjunct matches."""
        frame.out[2][task.out_row, positions] = 0.0
        if leaf.never or not self._roots.scalar_ok(job, leaf):
            return
        positions = positions[self._space.tables.static_ok[leaf.id, frame.universe_rows[positions]]]
        if leaf.job_static is not None:
            positions = positions[self._roots.job_static_ok(job, leaf, frame.universe_rows[positions])]
        if not len(positions):
            return
        if not chain.results:
            frame.out[2][task.out_row, positions] = 1.0
            return
        start = batch.code(leaf.id, chain.code)
        base = batch.scalar_base(leaf, lambda: self._roots.scalars(job, leaf))
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

    def _frame(self, space: Space, rows: np.ndarray, amounts: np.ndarray, used: np.ndarray, rows_out: int) -> Frame:
        frame = Frame(len(rows), space.universe(rows), triple(1), out=triple((rows_out, len(rows))))
        frame.dynamic = triple((3 * self._assets, max(len(rows), 1)))
        self._dynamic_inputs(frame, rows, amounts, used)
        return frame

    def _dynamic_inputs(self, frame: Frame, rows: np.ndarray, amounts: np.ndarray, used: np.ndarray) -> None:
        kernels.asset_inputs(np.ascontiguousarray(amounts, dtype=np.float64), self._table.amounts[rows],
                       self._table.integer_amounts[rows], used, *frame.dynamic)

    def _resolver(self, autocluster: Autocluster, rows: np.ndarray, amounts: np.ndarray, used: np.ndarray,
                  frame: Frame) -> Callable[[list[tuple[Task, np.ndarray]]], None]:
        """classad2 values for the (task, positions) a stage left to the reference."""

        def resolve(pending: list[tuple[Task, np.ndarray]]) -> None:
            for task, positions in pending:
                for k in positions:
                    self._stats.fallback_evaluations[task.fallback_root] += 1
                    frame.out[2][task.out_row, k] = self._fallback.value(
                        task.fallback_root, int(rows[k]), autocluster, amounts[k], used[k], task.override, task.asset)

        return resolve
