"""A space's compiled leaves as the assessment kernel reads them: one code array, a leaf table,
a conjunct table and, per (leaf, universe row), whether the leaf's slot-only conjuncts match.

Everything here is shared by every job: per-job values (scalar inputs, job-only conjuncts) live in
:class:`JobTables`.
"""

from __future__ import annotations

import numpy as np

from negotiatord.fastpath import kernels as K
from negotiatord.fastpath.compiler import Plan


class LeafTables:
    def __init__(self, width: int) -> None:
        self.code = np.zeros((256, 8), dtype=np.int64)
        self.code_size = 0
        self.leaves = np.zeros((64, K.LEAF_WIDTH), dtype=np.int64)
        self.segments = np.zeros((64, 5), dtype=np.int64)    # code start, end, result kind, index, sink
        self.segment_size = 0
        self.static_ok = np.zeros((64, max(width, 1)), dtype=bool)
        self.registers = 1
        self.converts = False

    def add(self, leaf_id: int, plan: Plan | None, chain: Plan | None, never: bool) -> None:
        """Register leaf ``leaf_id``: a native plan (one segment, written through the root's own
        sink), a conjunct chain (a FILTER segment per conjunct), or one left to Python (None)."""
        if leaf_id >= len(self.leaves):
            self.leaves = _grown(self.leaves, 2 * len(self.leaves))
            self.static_ok = _grown(self.static_ok, 2 * len(self.static_ok))
        row = self.leaves[leaf_id]
        if plan is None or not plan.native:
            row[K.L_KIND] = K.LEAF_PYTHON
            return
        used = chain if chain is not None else plan
        start = self._append_code(used.code)
        self.registers = max(self.registers, plan.registers, used.registers)
        self.converts |= plan.converts or used.converts
        row[K.L_SEG0] = self.segment_size
        if chain is None:
            row[K.L_KIND] = K.LEAF_PLAIN
            self._append_segment(start, start + len(plan.code), *plan.results[0], K.SINK_OWN)
        else:
            row[K.L_KIND] = K.LEAF_CHAIN
            row[K.L_NEVER] = never
            previous = 0
            for j, ((kind, idx), end) in enumerate(zip(chain.results, chain.ends)):
                sink = K.SINK_FILTER_LAST if j == len(chain.results) - 1 else K.SINK_FILTER
                self._append_segment(start + previous, start + end, kind, idx, sink)
                previous = end
        row[K.L_SEG1] = self.segment_size

    def _append_segment(self, start: int, end: int, kind: int, idx: int, sink: int) -> None:
        if self.segment_size == len(self.segments):
            self.segments = _grown(self.segments, 2 * len(self.segments))
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
            self.code = _grown(self.code, 2 * len(self.code))
        self.code[start: start + len(code)] = code
        self.code_size += len(code)
        return start


class JobTables:
    """One job's side of the leaf tables: where each leaf's scalar inputs start in ``scalars``
    (-1: not computed yet) and whether its job-only conjuncts match."""

    def __init__(self) -> None:
        self.sc_base = np.full(64, -1, dtype=np.int64)
        self.scalar_ok = np.zeros(64, dtype=bool)
        self.parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        self._part_of: dict[int, int] = {}
        self.size = 0
        self.clock = 0                 # the wall-clock second the values hold for
        self.uses_clock = False        # some value reads the wall clock (old-semantics CurrentTime)
        self._joined: tuple[np.ndarray, ...] | None = None

    def has(self, leaf_id: int) -> bool:
        return leaf_id in self._part_of

    def part(self, leaf_id: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return self.parts[self._part_of[leaf_id]]

    def add(self, leaf_id: int, values: tuple[np.ndarray, np.ndarray, np.ndarray], ok: bool,
            uses_clock: bool) -> None:
        if leaf_id >= len(self.sc_base):
            self.sc_base = np.concatenate([self.sc_base, np.full(len(self.sc_base), -1, dtype=np.int64)])
            self.scalar_ok = np.concatenate([self.scalar_ok, np.zeros(len(self.scalar_ok), dtype=bool)])
        self.sc_base[leaf_id] = self.size
        self.scalar_ok[leaf_id] = ok
        self.uses_clock |= uses_clock
        self._part_of[leaf_id] = len(self.parts)
        self.parts.append(values)
        self.size += len(values[0])
        self._joined = None

    def scalars(self) -> tuple[np.ndarray, ...]:
        """The scalar values of every added leaf, as [count, 1] kernel columns."""
        if self._joined is None:
            if self.parts:
                self._joined = tuple(np.concatenate(p).reshape(-1, 1) for p in zip(*self.parts))
            else:
                self._joined = (np.zeros((1, 1), np.int8), np.zeros((1, 1), np.int64), np.zeros((1, 1)))
        return self._joined


def _grown(array: np.ndarray, rows: int) -> np.ndarray:
    grown = np.zeros((rows, *array.shape[1:]), dtype=array.dtype)
    grown[: len(array)] = array
    return grown
