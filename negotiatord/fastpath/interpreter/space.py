"""A universe of slot-table rows, the compiled root expressions over it and its static store.

Compilation happens per *root* (slot Requirements, job Requirements, Consumption<asset>, ...) and
per *job shape*: which job attributes the root reads, and whether each is missing, a literal or
which expression. Jobs of the same shape (most autoclusters of a submitter: they differ in
request sizes, not in the structure of their ads) reuse the same compiled root; their literal
values are scalar inputs evaluated once per autocluster.

Static values (sub-expressions of slot literals only) are computed once per slot for the whole
cycle and kept in the static store, one row per IR node.

What resolution and lowering make depends on no slot table, and is kept across cycles in the
context's compilations (compilations.py): a space follows each root's known resolutions by its
slots' classes (compiler/groups.py) and files the leaves it reaches under ids of its own, so it
resolves and lowers only what no earlier cycle did.
"""

from __future__ import annotations

from copy import copy
from dataclasses import dataclass
from functools import cached_property
from collections.abc import Callable, Iterable, Iterator

import numpy as np

from negotiatord.classad.parser import Node
from negotiatord.classad.values import BOOL, INT, REAL, UNDEF, Value
from negotiatord.fastpath.compiler.cells import CellTable, JobCells, SlotColumns, distinct_rows
from negotiatord.fastpath.compiler.ir import CONST, IRGraph, collect
from negotiatord.fastpath.compiler.leaves import Leaf
from negotiatord.fastpath.compiler.lowering import Operand, PyStep, lower
from negotiatord.fastpath.compiler.groups import SlotClasses, resolve
from negotiatord.fastpath.compiler.resolution import GUARD, Builder, Mode, guard_key, probe_class
from negotiatord.fastpath.instructions import SINK_MATCH, SINK_RAW, SOURCE_SCALAR, SOURCE_STATIC
from negotiatord.fastpath.interpreter.compilations import Compiled
from negotiatord.fastpath.interpreter.execution import Frame, Triple, encode, run_plan, triple
from negotiatord.fastpath.interpreter.python_inputs import PythonInputs
from negotiatord.fastpath.interpreter.tables import LeafTables
from negotiatord.fastpath.strings import StringTable


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
class CompiledRoot:
    leaf_of: np.ndarray                  # universe row -> leaf id (-1: not in the root's domain)
    nodes: list[int | None]              # each group's IR root (None: the group falls back)

    @cached_property
    def leaf_ids(self) -> np.ndarray:
        return np.unique(self.leaf_of[self.leaf_of >= 0])


_NONE = object()     # no job, or no job values: no compilation that read them can have seen this


class Space:
    def __init__(self, context: Context, rows: np.ndarray, table_size: int) -> None:
        self.context = context
        self.rows = np.asarray(rows, dtype=np.int64)
        self._universe_index = np.full(table_size, -1, dtype=np.int64)
        self._universe_index[self.rows] = np.arange(len(self.rows))
        stored = max(16, len(context.compiled.static_rows))      # the rows earlier cycles numbered
        self.static: Triple = triple((stored, max(len(self.rows), 1)))
        self._computed = np.zeros((stored, max(len(self.rows), 1)), dtype=bool)
        self.python = PythonInputs(context.strings)
        self.classes = SlotClasses(self.rows, context.columns)
        self.leaves: list[Leaf] = []
        self.tables = LeafTables(len(self.rows))
        self.epoch = 0                   # bumped when the universe grows (compiled roots are then stale)
        self._leaf_ids: dict[tuple[int | None, int, str], int] = {}
        # root -> (job attributes read, GUARD nodes) -> what the attributes showed -> [(GUARD values, compilation)]
        self._roots: dict[str, dict[tuple, dict[tuple, list[tuple[tuple, CompiledRoot]]]]] = {}
        self._job_static: dict[tuple, tuple[np.ndarray, np.ndarray]] = {}  # (leaf, job values) -> (ok, computed)

    # -- universe ----------------------------------------------------------------------------------

    @property
    def universe_index(self) -> np.ndarray:
        """Each table row's universe row (-1: not in the universe); the array is updated in place
        when the universe grows."""
        return self._universe_index

    def universe(self, rows: np.ndarray) -> np.ndarray:
        """Universe rows of table rows ``rows``; rows not seen yet join (compiled roots are then
        rebuilt, as the new rows may read job attributes the old shapes never looked at)."""
        found = self._universe_index[rows]
        if (found < 0).any():
            new = np.unique(rows[found < 0])
            self._universe_index[new] = np.arange(len(self.rows), len(self.rows) + len(new))
            self.rows = np.concatenate([self.rows, new])
            self.classes.grow(new)
            self._grow(len(self.static[0]), len(self.rows))
            self.tables.widen(len(self.rows))
            self._roots.clear()
            self._job_static.clear()
            self.epoch += 1
            found = self._universe_index[rows]
        return found

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
        missing = universe_rows[~self._computed[row, universe_rows]]
        if not len(missing):
            return
        cells = self.context.columns.column(self.context.graph[node].payload, self.rows[missing])
        for store, values in zip(self.static, self.context.cells.arrays()[:3]):
            store[row, missing] = values[cells]
        self._computed[row, missing] = True

    # -- compiled roots ----------------------------------------------------------------------------

    def compiled(self, spec: RootSpec, job: JobCells | None, domain: Callable[[np.ndarray], np.ndarray],
                 scalar_value: Callable[[int], Value] | None = None) -> CompiledRoot:
        """``spec`` compiled for jobs shaped like ``job``, over the universe rows ``domain`` keeps.

        A compilation is reused for every job that agrees with the one it was made for on what it
        read of the job (resolution.probe_class, and the values of GUARD conditions), so most
        autoclusters compile nothing. ``scalar_value`` gives the job's value of a job-only node.

        Compilations are filed by the attributes they read, then by what they saw there (at most
        one agrees with a job: one that did would have been reused), so a job finds its own by a
        lookup per set of attributes; GUARD values, which cost a scalar plan, are only computed
        for compilations the job agrees with on everything else.
        """
        families = self._roots.setdefault(spec.name, {})
        cells = self.context.cells
        for (attributes, guards), seen in families.items():
            shown = (tuple([probe_class(cells, job.cell(probe), mode) for probe, mode in attributes])
                     if job is not None else (_NONE,) * len(attributes))
            for values, compiled in seen.get(shown, ()):
                if all(self._guard(node, scalar_value) == value for node, value in zip(guards, values)):
                    return compiled
        compiled, probes = self._compile(spec, job, domain, scalar_value)
        attributes = tuple(key for key in probes if key[1] != GUARD)
        guards = tuple(probe for probe, mode in probes if mode == GUARD)
        seen = families.setdefault((attributes, guards), {})
        seen.setdefault(tuple(probes[key] for key in attributes), []).append(
            (tuple(probes[probe, GUARD] for probe in guards), compiled))
        return compiled

    @staticmethod
    def _guard(probe: str, scalar_value: Callable[[int], Value] | None) -> object:
        """The job's value of a GUARD condition, as a compilation saw it."""
        return _NONE if scalar_value is None else guard_key(scalar_value(int(probe)))

    def _compile(self, spec: RootSpec, job: JobCells | None, domain: Callable[[np.ndarray], np.ndarray],
                 scalar_value: Callable[[int], Value] | None) -> tuple[CompiledRoot, dict[tuple[str, str], object]]:
        context = self.context
        universe = np.arange(len(self.rows))
        members = universe[domain(self.rows)]

        def builder(group: np.ndarray) -> Builder:
            return Builder(context.graph, context.cells, context.columns, job, group, spec.mode,
                           context.old_semantics, scalar_value)

        def root(b: Builder) -> int:
            if spec.attribute is None:
                assert spec.ast is not None        # a root without an attribute is its expression
                return b.build(spec.ast, spec.side)
            found = b.attribute(spec.side, spec.attribute)      # looked up directly, as reference.py does
            return context.graph.const((UNDEF, None)) if found is None else found

        known = context.compiled.resolutions_of((spec, job is not None))
        grouping = resolve(builder, root, members, self.classes, context.columns, known)
        leaf_of = np.full(len(self.rows), -1, dtype=np.int64)
        nodes = []
        for group, node, reason in grouping.groups:
            nodes.append(node)
            leaf = self.leaf(node, spec.sink, reason)
            universe_rows = self._universe_index[group]
            leaf_of[universe_rows] = leaf.id
            if leaf.plan is not None:
                self._prepare(leaf, universe_rows)
        return CompiledRoot(leaf_of, nodes), grouping.probes

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

    def _prepare(self, leaf: Leaf, universe_rows: np.ndarray) -> None:
        """Static inputs of ``leaf`` for universe rows ``universe_rows``, and which rows its slot-only
        conjuncts already rule out."""
        self.prepare_static(leaf.static_nodes, universe_rows)
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
        if found is None:
            found = self._job_static[key] = (np.zeros(len(self.rows), dtype=bool),
                                              np.zeros(len(self.rows), dtype=bool))
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
