"""A space's compiled leaves as the assessment kernel reads them: one code array, a leaf table,
a conjunct table and, per (leaf, universe row), whether the leaf's slot-only conjuncts match.

Everything here is shared by every job: per-job values (scalar inputs, job-only conjuncts) live in
:class:`JobTables`, laid out by a :class:`ScalarLayout`.
"""

from __future__ import annotations

import numpy as np

from negotiatord.fastpath.compiler.cells import grown
from negotiatord.fastpath.compiler.leaves import Leaf
from negotiatord.fastpath.compiler.lowering import Plan
from negotiatord.fastpath.instructions import (
    LEAF_CHAIN, LEAF_COLUMNS, LEAF_KIND, LEAF_NEVER, LEAF_PLAIN, LEAF_PYTHON, LEAF_SEGMENTS_END,
    LEAF_SEGMENTS_START, SINK_FILTER, SINK_FILTER_LAST, SINK_OWN,
)
from negotiatord.fastpath.interpreter.execution import Triple, each


class LeafTables:
    def __init__(self, width: int) -> None:
        self.code = np.zeros((256, 8), dtype=np.int64)
        self.code_size = 0
        self.leaves = np.zeros((64, LEAF_COLUMNS), dtype=np.int64)
        self.segments = np.zeros((64, 5), dtype=np.int64)    # code start, end, result kind, index, sink
        self.segment_size = 0
        self.static_ok = np.zeros((64, max(width, 1)), dtype=bool)
        self.registers = 1
        self.converts = False

    def add(self, leaf_id: int, plan: Plan | None, chain: Plan | None, never: bool) -> None:
        """Register leaf ``leaf_id``: a native plan (one segment, written through the root's own
        sink), a conjunct chain (a FILTER segment per conjunct), or one left to Python (None)."""
        if leaf_id >= len(self.leaves):
            self.leaves = grown(self.leaves, 2 * len(self.leaves))
            self.static_ok = grown(self.static_ok, 2 * len(self.static_ok))
        row = self.leaves[leaf_id]
        if plan is None or not plan.native:
            row[LEAF_KIND] = LEAF_PYTHON
            return
        used = chain if chain is not None else plan
        start = self._append_code(used.code)
        self.registers = max(self.registers, plan.registers, used.registers)
        self.converts |= plan.converts or used.converts
        row[LEAF_SEGMENTS_START] = self.segment_size
        if chain is None:
            row[LEAF_KIND] = LEAF_PLAIN
            self._append_segment(start, start + len(plan.code), *plan.results[0], SINK_OWN)
        else:
            row[LEAF_KIND] = LEAF_CHAIN
            row[LEAF_NEVER] = never
            previous = 0
            for j, ((kind, idx), end) in enumerate(zip(chain.results, chain.ends)):
                sink = SINK_FILTER_LAST if j == len(chain.results) - 1 else SINK_FILTER
                self._append_segment(start + previous, start + end, kind, idx, sink)
                previous = end
        row[LEAF_SEGMENTS_END] = self.segment_size

    def _append_segment(self, start: int, end: int, kind: int, idx: int, sink: int) -> None:
        if self.segment_size == len(self.segments):
            self.segments = grown(self.segments, 2 * len(self.segments))
        self.segments[self.segment_size] = (start, end, kind, idx, sink)
        self.segment_size += 1

    def widen(self, width: int) -> None:
        """The universe grew to ``width`` rows."""
        if width > self.static_ok.shape[1]:
            grown = np.zeros((len(self.static_ok), width), dtype=bool)
            grown[:, : self.static_ok.shape[1]] = self.static_ok
            self.static_ok = grown

    def _append_code(self, code: np.ndarray) -> int:
        start = self.code_size
        while start + len(code) > len(self.code):
            self.code = grown(self.code, 2 * len(self.code))
        self.code[start: start + len(code)] = code
        self.code_size += len(code)
        return start


class ScalarLayout:
    """Where each leaf's scalar inputs sit in a job's scalar column, for one set of leaves.

    Every job whose roots compiled to the same leaves shares it, so a job's tables take one scalar
    plan (the union of the leaves' job-only nodes) and a gather, not a pass over the leaves.
    """

    def __init__(self, leaves: list[Leaf], width: int) -> None:
        self.nodes = sorted({n for leaf in leaves for n in (*leaf.scalar_nodes, *leaf.scalar_conjuncts)})
        index = {node: i for i, node in enumerate(self.nodes)}
        self.scalar_base = np.full(width, -1, dtype=np.int64)
        self.sizes = np.zeros(width, dtype=np.int64)
        gather: list[int] = []
        for leaf in leaves:
            self.scalar_base[leaf.id] = len(gather)
            self.sizes[leaf.id] = len(leaf.scalar_nodes)
            gather.extend(index[n] for n in leaf.scalar_nodes)
        self.gather = np.array(gather, dtype=np.int64)
        self.leaf_ids = np.array([leaf.id for leaf in leaves], dtype=np.int64)
        self.conjuncts = np.array([index[n] for leaf in leaves for n in leaf.scalar_conjuncts], dtype=np.int64)
        self.conjunct_leaf = np.array([leaf.id for leaf in leaves for _ in leaf.scalar_conjuncts], dtype=np.int64)
        self.uses_clock = any(leaf.uses_clock for leaf in leaves)


class JobTables:
    """One job's side of the leaf tables: where each leaf's scalar inputs start in ``scalars``
    (-1: not a leaf of the layout) and whether its job-only conjuncts match."""

    def __init__(self, layout: ScalarLayout, values: Triple, matches: np.ndarray, clock: int) -> None:
        """``values`` are the job's values of ``layout.nodes`` and ``matches`` whether each matches."""
        self.layout = layout
        self.clock = clock               # the wall-clock second the values hold for
        self.scalar_base = layout.scalar_base
        self.scalar_ok = np.zeros(len(layout.scalar_base), dtype=bool)
        self.scalar_ok[layout.leaf_ids] = True
        self.scalar_ok[layout.conjunct_leaf[~matches[layout.conjuncts]]] = False
        self._values = each(lambda v: v[layout.gather], values)
        if len(layout.gather):
            self.scalars = each(lambda v: v.reshape(-1, 1), self._values)
        else:                            # the kernel still wants one (unread) scalar row
            self.scalars = (np.zeros((1, 1), np.int8), np.zeros((1, 1), np.int64), np.zeros((1, 1)))

    def holds(self, clock: int) -> bool:
        """Whether the values are still those of wall-clock second ``clock``."""
        return not self.layout.uses_clock or self.clock == clock

    def has(self, leaf_id: int) -> bool:
        return leaf_id < len(self.scalar_base) and self.scalar_base[leaf_id] >= 0

    def part(self, leaf_id: int) -> Triple:
        base = self.scalar_base[leaf_id]
        size = self.layout.sizes[leaf_id]
        return each(lambda v: v[base: base + size], self._values)
