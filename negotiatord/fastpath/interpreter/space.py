"""A universe of slots (rows of its columns), the compiled root expressions over it and its static store.

Compilation happens per *root* (slot Requirements, job Requirements, Consumption<asset>, ...) and
per *job shape*: which job attributes the root reads, and whether each is missing, a literal or
which expression. Jobs of the same shape (most autoclusters of a submitter: they differ in
request sizes, not in the structure of their ads) reuse the same compiled root; their literal
values are scalar inputs evaluated once per autocluster.

Static values (sub-expressions of slot literals only) are computed once per slot and kept in the
static store, one row per IR node.

A space reads its slots through the rows of its columns (:class:`SlotRows`): a cycle's own columns
are its slot table's rows, a daemon's or a replay's are slot records, kept from one cycle to the
next with the space itself (kept_space.py). There a record a cycle brings takes the place of a
slot gone of its class (:meth:`Space.universe`), or the universe grows by it and each
compilation takes it in when next asked for (root_families.py); what reads the cycle's clock is
worked out again when it moves (:meth:`Space.enter`). The answers given on a cycle's first shared
offers are kept with the space for the next cycle (shared_offer.py), and told which universe rows
changed: those new records took, and those where a value the leaves read moved with the clock.

What resolution and lowering make depends on no slot table, and is kept across cycles in the
context's compilations (compilations.py): a space follows each root's known resolutions by its
slots' classes (compiler/groups.py) and files the leaves it reaches under ids of its own, so it
resolves and lowers only what no earlier cycle did.
"""

from __future__ import annotations

from copy import copy
from itertools import count
from dataclasses import dataclass
from collections.abc import Callable, Iterable, Iterator

import numpy as np

from negotiatord.classad.parser import Node
from negotiatord.classad.values import BOOL, INT, REAL, Value
from negotiatord.fastpath.compiler.cells import (
    CLOCK_COLUMNS, CellTable, JobCells, SlotColumns, distinct_rows, grown,
)
from negotiatord.fastpath.compiler.ir import CONST, IRGraph, collect
from negotiatord.fastpath.compiler.leaves import Leaf
from negotiatord.fastpath.compiler.lowering import Operand, PyStep, lower
from negotiatord.fastpath.compiler.groups import SlotClasses
from negotiatord.fastpath.compiler.resolution import Mode
from negotiatord.fastpath.instructions import SINK_MATCH, SINK_RAW, SOURCE_SCALAR, SOURCE_STATIC
from negotiatord.fastpath.interpreter.compilations import Compiled
from negotiatord.fastpath.interpreter.execution import Frame, Triple, encode, run_plan, triple
from negotiatord.fastpath.interpreter.python_inputs import PythonInputs
from negotiatord.fastpath.interpreter.root_families import CompiledRoot, RootFamilies
from negotiatord.fastpath.interpreter.shared_offer import SharedOffer, differ_bitwise
from negotiatord.fastpath.interpreter.stacks import Stacks
from negotiatord.fastpath.interpreter.tables import LeafTables
from negotiatord.fastpath.strings import StringTable
from negotiatord.pool.snapshot import SlotTable


@dataclass(frozen=True)
class Context:
    """What every space of one evaluator shares: the compilations of its scoping mode (kept across
    cycles, see compilations.py) and the slot table's cell columns at the cycle's clock."""

    compiled: Compiled
    columns: SlotColumns     # read into ``compiled.cells``
    now: int

    @property
    def graph(self) -> IRGraph:
        return self.compiled.graph

    @property
    def cells(self) -> CellTable:
        return self.compiled.cells

    @property
    def strings(self) -> StringTable:
        return self.compiled.strings

    @property
    def assets(self) -> int:
        """Asset columns of the slot table (the compilations are kept for one list of assets)."""
        return len(self.compiled.assets)

    @property
    def old_semantics(self) -> bool:
        """classad2's scoping mode (classad/semantics.py)."""
        return self.compiled.old_semantics

    @property
    def scalar_plans(self) -> dict:
        """Node tuple -> (plan, inputs), see job_scalars.py."""
        return self.compiled.scalar_plans

    @property
    def scalar_values(self) -> dict:
        """(node, *input keys) -> value, see job_scalars.py."""
        return self.compiled.scalar_values

    @property
    def scalar_inputs(self) -> dict:
        """Node -> the job and clock nodes it reads."""
        return self.compiled.scalar_inputs


@dataclass(frozen=True)
class RootSpec:
    """One expression the negotiator asks about, where it lives and how it is converted."""

    name: str
    side: str                 # SLOT or JOB: the ad that is MY
    attribute: str | None     # the root attribute (lower case), or None for ``ast``
    ast: Node | None
    mode: Mode
    sink: int


@dataclass
class SlotRows:
    """The rows of a space's columns as a cycle sees them: where each slot-table row is among
    them, and the two facts about each that the roots' domains read."""

    column_of: np.ndarray              # slot-table row -> column row
    consumption_policy: np.ndarray     # column row -> the slot has a consumption policy
    has_amount: np.ndarray             # [column row, asset column] -> the slot has the asset

    @classmethod
    def of_table(cls, table: SlotTable) -> SlotRows:
        """Columns over the table's own rows."""
        return cls(np.arange(len(table)), table.consumption_policy, ~np.isnan(table.amounts))

    @classmethod
    def plain(cls, slots: int) -> SlotRows:
        """``slots`` rows of their own, without assets or consumption policies."""
        return cls(np.arange(slots), np.zeros(slots, dtype=bool), np.zeros((slots, 0), dtype=bool))

    def __len__(self) -> int:
        return len(self.consumption_policy)


_SERIALS = count()   # each space's own, so a job's layout knows the space it was made in
# Past this, the answers a kept space holds per distinct job values (its job-and-slot conjuncts'
# and its stacks') are dropped when a cycle enters it: a daemon meets ever new job values.
MAX_JOB_ANSWER_BYTES = 64 * 2**20


class Space:
    """``rows``: the universe's first rows, as rows of the context's columns; ``slot_rows`` the
    cycle's view of those columns."""

    def __init__(self, context: Context, rows: np.ndarray, slot_rows: SlotRows) -> None:
        self.context = context
        self.slot_rows = slot_rows
        self.rows = np.asarray(rows, dtype=np.int64)        # universe row -> column row
        self._universe_of = np.full(len(slot_rows), -1, dtype=np.int64)      # column row -> universe row
        self._universe_of[self.rows] = np.arange(len(self.rows))
        self._universe_index = self._universe_of[slot_rows.column_of]
        stored = max(16, len(context.compiled.static_rows))      # the rows earlier cycles numbered
        self.static: Triple = triple((stored, max(len(self.rows), 1)))
        self._computed = np.zeros((stored, max(len(self.rows), 1)), dtype=bool)
        self.python = PythonInputs(context.strings)
        self.classes = SlotClasses(self.rows, context.columns)
        self.leaves: list[Leaf] = []
        self.tables = LeafTables(len(self.rows))
        self.stacks = Stacks(context.assets)
        self.serial = next(_SERIALS)
        self.epoch = 0                   # see _new_epoch
        self._prepared: dict[int, np.ndarray] = {}        # leaf id -> whether each universe row's static inputs are in
        self._clocked: dict[int, bool] = {}               # static store row -> its node reads the cycle's clock
        self._leaf_ids: dict[tuple[int | None, int, str], int] = {}
        self._families = RootFamilies()
        self._job_static: dict[tuple, tuple[np.ndarray, np.ndarray]] = {}  # (leaf, job values) -> (ok, computed)
        self.shared_offer = SharedOffer()       # answers kept while what the universe rows hold stands

    # -- universe ----------------------------------------------------------------------------------

    @property
    def universe_index(self) -> np.ndarray:
        """Each table row's universe row (-1: not in the universe); the array is updated in place
        when the universe grows."""
        return self._universe_index

    def universe(self, rows: np.ndarray) -> np.ndarray:
        """Universe rows of table rows ``rows``. Rows not seen yet take the place of slots gone
        of their class (everything compiled stands), or else join, and each compilation takes
        them in when next asked for."""
        found = self._universe_index[rows]
        if (found < 0).any():
            new = distinct_rows(self.slot_rows.column_of[rows[found < 0]], len(self.slot_rows))
            new, classes = self._in_place_of_slots_gone(new)
            if len(new):
                self._universe_of[new] = np.arange(len(self.rows), len(self.rows) + len(new))
                self.rows = np.concatenate([self.rows, new])
                self.classes.grow(new, classes)
                self._grow(len(self.static[0]), len(self.rows))
                self.tables.widen(len(self.rows))
                self._new_epoch()
            self._universe_index[:] = self._universe_of[self.slot_rows.column_of]
            found = self._universe_index[rows]
        return found

    def _in_place_of_slots_gone(self, new: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Put each of column ``new`` where a slot the table no longer holds stood, of its class in
        every attribute any resolution asked and with its domain's facts (so every compilation
        maps it to the same leaf: groups.py); returns the rows left, and their classes."""
        gone = self._slots_gone()
        if not len(gone):
            return new, self.classes.classify(new)
        self.classes.list(sorted({a for tree in self.context.compiled.resolutions.values()
                                  for a in tree.slot_attributes}))
        classes = self.classes.classify(new)
        free: dict[tuple, list[int]] = {}
        for row, of in zip(gone.tolist(), self.classes.of[gone].tolist()):
            free.setdefault(self._kind(of, int(self.rows[row])), []).append(row)
        placed, left = [], []
        for position, (column, of) in enumerate(zip(new.tolist(), classes.tolist())):
            rows = free.get(self._kind(of, column))
            if rows:
                placed.append((rows.pop(), column))
            else:
                left.append(position)
        if placed:
            universe_rows, columns = (np.array(side, dtype=np.int64) for side in zip(*placed))
            self._reuse(universe_rows, columns)
        return new[left], classes[left]

    def _kind(self, of: int, column: int) -> tuple:
        """What a slot (at column row ``column``, of class ``of``) must share with the one whose
        place it takes: its class and what the roots' domains read of it."""
        slots = self.slot_rows
        return of, bool(slots.consumption_policy[column]), slots.has_amount[column].tobytes()

    def _slots_gone(self) -> np.ndarray:
        """Universe rows whose slot the cycle's table no longer holds."""
        present = np.zeros(len(self.rows), dtype=bool)
        present[self._universe_index[self._universe_index >= 0]] = True
        return np.flatnonzero(~present)

    def _reuse(self, universe_rows: np.ndarray, columns: np.ndarray) -> None:
        """Column rows ``columns`` stand at ``universe_rows``: what was worked out of the slots
        there is worked out again of them, the leaves they reach unchanged."""
        gone = self.rows[universe_rows]
        self._universe_of[gone[self._universe_of[gone] == universe_rows]] = -1
        self._universe_of[columns] = universe_rows
        self.rows[universe_rows] = columns
        self.classes.replace(universe_rows, columns)
        self._computed[:, universe_rows] = False
        self.shared_offer.forget_rows(universe_rows)
        for _, computed in self._job_static.values():
            computed[universe_rows[universe_rows < len(computed)]] = False
        self.python.forget_rows(universe_rows)
        self.stacks.forget(universe_rows)
        for leaf_id, prepared in self._prepared.items():
            inside = universe_rows[universe_rows < len(prepared)]
            reached = inside[prepared[inside]]
            if len(reached):
                self.prepare(self.leaves[leaf_id], reached)

    def enter(self, context: Context, slot_rows: SlotRows) -> None:
        """A later cycle over the same columns: its clock (``context``) and its table's rows."""
        if len(slot_rows) > len(self._universe_of):
            self._universe_of = grown(self._universe_of, len(slot_rows), -1)
        self.slot_rows = slot_rows
        self._universe_index = self._universe_of[slot_rows.column_of]
        self.shared_offer.next_cycle()
        if context.now != self.context.now:
            self.context = context
            self._move_clock()
        self.context = context
        held = sum(ok.nbytes + computed.nbytes for ok, computed in self._job_static.values())
        if held + self.stacks.job_answer_bytes() > MAX_JOB_ANSWER_BYTES:
            self._job_static.clear()
            self._new_epoch()

    def _new_epoch(self) -> None:
        """What is laid out over the universe is stale (it grew, or answers were dropped): the
        stacks go, and the jobs' layouts with them (JobState.enter)."""
        self.stacks.clear()
        self.shared_offer.forget()
        self.epoch += 1

    def _move_clock(self) -> None:
        """The cycle's clock moved: the static values that read it are worked out again, and
        whatever was derived from them (slot-only conjuncts, job-and-slot conjuncts' answers,
        classad2 steps' slot sides, the shared offer's answers) is asked again on the universe
        rows where one of those the leaves read changed. A START's ``GLIDEIN_ToDie - CurrentTime
        >= 144000`` is such a value: it turns false for a few glideins a cycle, not for all."""
        clocked = {row for row, reads in self._clocked.items() if reads}
        if not clocked:
            return
        static_row = self.context.compiled.static_row
        moved = [leaf for leaf in self.leaves if any(static_row(node) in clocked for node in leaf.static_nodes)]
        read = sorted({static_row(node) for leaf in moved for node in leaf.static_nodes} & clocked)
        tags, ints, floats = self.static
        before = (tags[read], ints[read], floats[read]), self._computed[read]
        self._computed[sorted(clocked)] = False
        for leaf in moved:
            prepared = self._prepared.get(leaf.id)
            if prepared is not None:
                self.prepare(leaf, np.flatnonzero(prepared))
        changed = self._changed_since(read, *before)
        self.shared_offer.forget_rows(changed)
        self.stacks.forget(changed)
        moved_ids = {leaf.id for leaf in moved}
        for key, (_, computed) in self._job_static.items():
            if key[0] in moved_ids:
                computed[changed[changed < len(computed)]] = False
        steps = [step for leaf in moved
                 for step in (*leaf.python_inputs, *(leaf.job_static_inputs.python if leaf.job_static_inputs else ()))]
        self.python.forget_rows(changed, [step.dst for step in steps if self._reads_clock(step)])

    def _changed_since(self, rows: list[int], values: Triple, computed: np.ndarray) -> np.ndarray:
        """Universe rows where static store ``rows`` no longer hold ``values`` (compared bit for
        bit), or were worked out then (``computed``) but not since."""
        width = computed.shape[1]
        changed = ~self._computed[rows, :width]
        for store, before in zip(self.static, values):
            changed |= differ_bitwise(store[rows, :width], before)
        return np.flatnonzero((computed & changed).any(axis=0))

    def _reads_clock(self, step: PyStep) -> bool:
        """Whether classad2 step ``step`` reads a static value that reads the clock (or one not
        worked out yet, whose reading is unknown)."""
        return any(kind == SOURCE_STATIC and self._clocked.get(row, True) for kind, row in step.operands)

    def _grow(self, nodes: int, width: int) -> None:
        old, computed = self.static, self._computed
        self.static = triple((nodes, width))
        self._computed = np.zeros((nodes, width), dtype=bool)
        for new, previous in zip(self.static, old):
            new[: previous.shape[0], : previous.shape[1]] = previous
        self._computed[: computed.shape[0], : computed.shape[1]] = computed

    # -- static store ------------------------------------------------------------------------------

    def static_row(self, node: int) -> int:
        """The static store row of slot-only ``node``, numbered alike in every space of the
        compilations (leaves.InputRows)."""
        row = self.context.compiled.static_row(node)
        if row >= len(self.static[0]):
            self._grow(max(row + 1, 2 * len(self.static[0])), len(self.rows))
        return row

    def python_row(self, node: int) -> int:
        """The row of classad2 step ``node`` among the dynamic inputs after the assets'
        (leaves.InputRows)."""
        return self.context.compiled.python_row(node)

    def prepare_static(self, nodes: list[int], universe_rows: np.ndarray) -> None:
        """Compute static ``nodes`` for universe rows ``universe_rows`` where not done yet."""
        graph = self.context.graph
        rows = [self.static_row(n) for n in nodes]      # first: numbering a node may grow the store
        pending = [n for n, row in zip(nodes, rows) if not self._computed[row, universe_rows].all()]
        if not pending:
            return
        leaves: set[int] = set()
        for node in pending:
            collect(graph, node, lambda n: graph[n].kind == "slot", leaves)
        for node in sorted(leaves):
            self._fill_slot_column(node, universe_rows)
        computed = [n for n in pending if graph[n].kind != "slot"]
        for node in computed:
            if self.static_row(node) not in self._clocked:
                reached: set[int] = set()
                collect(graph, node, lambda n: graph[n].kind == "slot", reached)
                self._clocked[self.static_row(node)] = any(self._clocked[self.static_row(n)] for n in reached)
        if not computed:
            return
        consts: list[int] = []

        def operand(node: int) -> Operand | None:
            ir = graph[node]
            if ir.kind == "slot":
                return (SOURCE_STATIC, self.static_row(node))
            if ir.level == CONST:
                consts.append(node)
                return (SOURCE_SCALAR, len(consts) - 1)
            return None

        plan = lower(graph, computed, operand)
        scalars = encode([graph[n].payload for n in consts], self.context.strings)
        missing = universe_rows[~self._computed[[self.static_row(n) for n in computed]][:, universe_rows].all(axis=0)]
        frame = Frame(len(missing), missing, scalars, static=self.static, out=triple((len(computed), len(missing))))
        run_plan(plan, np.arange(len(missing)), frame, self.context.strings,
                 [(SINK_RAW, j) for j in range(len(computed))])
        for j, node in enumerate(computed):
            row = self.static_row(node)
            for store, out in zip(self.static, frame.out):
                store[row, missing] = out[j]
            self._computed[row, missing] = True

    def _fill_slot_column(self, node: int, universe_rows: np.ndarray) -> None:
        row = self.static_row(node)
        self._clocked[row] = self.context.graph[node].payload in CLOCK_COLUMNS
        missing = universe_rows[~self._computed[row, universe_rows]]
        if not len(missing):
            return
        cells = self.context.columns.column(self.context.graph[node].payload, self.rows[missing])
        for store, values in zip(self.static, self.context.cells.arrays()[:3]):
            store[row, missing] = values[cells]
        self._computed[row, missing] = True

    # -- compiled roots ----------------------------------------------------------------------------

    def compiled(self, spec: RootSpec, job: JobCells | None, domain: Callable[[SlotRows, np.ndarray], np.ndarray],
                 scalar_value: Callable[[int], Value] | None = None) -> CompiledRoot:
        """``spec`` compiled for jobs shaped like ``job``, over the universe rows ``domain`` keeps
        (given the space's slot rows and the rows of its columns); ``scalar_value`` gives the
        job's value of a job-only node. Most jobs find a compilation made for another
        (root_families.py)."""
        return self._families.compiled(self, spec, job, domain, scalar_value)

    def universe_of_columns(self, rows: np.ndarray) -> np.ndarray:
        """The universe rows of column ``rows``."""
        return self._universe_of[rows]

    def leaf(self, node: int | None, sink: int, reason: str) -> Leaf:
        """The space's leaf of IR root ``node`` for ``sink``: the compilations' (lowered once for
        every space) under an id of this space."""
        key = (node, sink, reason if node is None else "")
        found = self._leaf_ids.get(key)
        if found is not None:
            return self.leaves[found]
        leaf = copy(self.context.compiled.leaf(node, sink, reason))
        leaf.id = len(self.leaves)
        self._leaf_ids[key] = leaf.id
        self.leaves.append(leaf)
        self.tables.add(leaf.id, leaf.plan, leaf.chain, leaf.never)
        return leaf

    def prepare(self, leaf: Leaf, universe_rows: np.ndarray) -> None:
        """Static inputs of ``leaf`` for universe rows ``universe_rows``, and which rows its slot-only
        conjuncts already rule out."""
        self.prepare_static(leaf.static_nodes, universe_rows)
        prepared = self._prepared.get(leaf.id)
        if prepared is None or len(prepared) < len(self.rows):
            prepared = self._prepared[leaf.id] = grown(prepared, len(self.rows), False, bool)
        prepared[universe_rows] = True
        if leaf.chain is None:
            return
        ok = np.ones(len(universe_rows), dtype=bool)
        for conjunct in leaf.static_conjuncts:
            row = self.static_row(conjunct)
            ok &= match_array(self.static[0][row, universe_rows], self.static[1][row, universe_rows],
                              self.static[2][row, universe_rows])
        self.tables.static_ok[leaf.id, universe_rows] = ok

    # -- conjuncts of job and slot values ----------------------------------------------------------

    def job_static_ok(self, leaf: Leaf, scalars: Triple, universe_rows: np.ndarray) -> np.ndarray:
        """Whether the leaf's job-and-slot conjuncts match on universe rows ``universe_rows`` for a job
        whose job-side inputs are ``scalars``; cached per distinct job-side values."""
        key = (leaf.id, tuple(zip(scalars[0].tolist(), scalars[1].tolist(), scalars[2].tolist())))
        found = self._job_static.get(key)
        if found is None or len(found[0]) < len(self.rows):
            ok, computed = found or (None, None)
            found = self._job_static[key] = (grown(ok, len(self.rows), False, bool),
                                              grown(computed, len(self.rows), False, bool))
        ok, computed = found
        # sorted and deduplicated, so the results line up with the rows they are written to
        # (universe_rows is in the call's order, which is not the universe's once non-candidates joined)
        missing = distinct_rows(universe_rows[~computed[universe_rows]], len(self.rows))
        if len(missing):
            ok[missing] = self._run_job_static(leaf, scalars, missing)
            computed[missing] = True
        return ok[universe_rows]

    @property
    def dynamic_input_rows(self) -> int:
        """A frame's dynamic input rows: three per asset (the amounts offered, used and in the
        slot's ad), then one per classad2 step (the compilations' ``python_rows``), whose values are computed before
        the kernel reads them (:meth:`fill_python_inputs`)."""
        return 3 * self.context.assets + len(self.context.compiled.python_rows)

    def dynamic_inputs(self, n: int) -> Triple:
        """Dynamic inputs over ``n`` positions (:attr:`dynamic_input_rows`)."""
        return triple((self.dynamic_input_rows, max(n, 1)))

    def fill_python_inputs(self, steps: Iterable[PyStep], positions: np.ndarray, universe_rows: np.ndarray,
                           scalars: Triple, dynamic: Triple) -> None:
        """Compute classad2 steps' values at ``positions`` into their rows of ``dynamic`` (see
        :meth:`dynamic_inputs`); raises NeedsFallback where classad2 cannot give a scalar."""
        first = 3 * self.context.assets
        for step in steps:
            self.python.fill(step, positions, universe_rows, scalars, self.static, dynamic, first + step.dst)

    def _run_job_static(self, leaf: Leaf, scalars: Triple, universe_rows: np.ndarray) -> np.ndarray:
        plan, inputs = leaf.job_static, leaf.job_static_inputs
        assert plan is not None and inputs is not None    # only leaves with job-and-slot conjuncts are asked
        frame = Frame(len(universe_rows), universe_rows, scalars, static=self.static, out=triple((len(plan.results),
                                                                                                  len(universe_rows))),
                      dynamic=self.dynamic_inputs(len(universe_rows)))
        positions = np.arange(len(universe_rows))
        self.fill_python_inputs(inputs.python, positions, universe_rows, scalars, frame.dynamic)
        run_plan(plan, positions, frame, self.context.strings, [(SINK_MATCH, j) for j in range(len(plan.results))])
        return (frame.out[2] == 1.0).all(axis=0)


def match_array(tags: np.ndarray, ivals: np.ndarray, fvals: np.ndarray) -> np.ndarray:
    """ClassAd.matches, element-wise: true, or a non-zero number."""
    return (((tags == BOOL) | (tags == INT)) & (ivals != 0)) | ((tags == REAL) & (fvals != 0.0))


def by_leaf(leaf_ids: np.ndarray, positions: np.ndarray,
            allow_outside: bool = False) -> Iterator[tuple[int, np.ndarray]]:
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
