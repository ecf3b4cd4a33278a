"""classad2 steps over job values and slot literals, computed before the kernel runs.

``stringListMember(GLIDEIN_Site, DESIRED_Sites, ",")`` reads a slot literal and a job value: its
result depends on the pair, but a pool has a few hundred sites and the autoclusters a few distinct
site lists. Each step's slot-side holes are dictionary-encoded once per slot (``codes``); for one
combination of job-side values the step is evaluated once per distinct slot-side combination and
looked up for every row. Results feed the kernel as dynamic input rows.
"""

from __future__ import annotations

import numpy as np

from negotiatord.classad.values import NotScalar, Value
from negotiatord.fastpath.compiler.cells import grown
from negotiatord.fastpath.compiler.folding import evaluate
from negotiatord.fastpath.compiler.lowering import PyStep
from negotiatord.fastpath.instructions import SOURCE_SCALAR, SOURCE_STATIC
from negotiatord.fastpath.interpreter.execution import NeedsFallback, Triple, decode, encode
from negotiatord.fastpath.strings import StringTable


class _Step:
    def __init__(self, step: PyStep, width: int) -> None:
        self.step = step
        self.codes = np.full(width, -1, dtype=np.int64)       # universe row -> distinct slot-side values
        self.distinct: list[tuple[Value, ...]] = []
        self._index: dict[tuple, int] = {}
        self.results: dict[tuple[Value, ...], Triple] = {}     # job-side values -> result per code


class PythonInputs:
    """The classad2 steps of one space, by their dynamic input row."""

    def __init__(self, strings: StringTable) -> None:
        self._strings = strings
        self._steps: dict[int, _Step] = {}

    def forget_rows(self, universe_rows: np.ndarray, dynamic_rows: list[int] | None = None) -> None:
        """Forget the slot sides of ``universe_rows`` in the steps filling ``dynamic_rows`` (all:
        other slots now stand there; some: the clock moved under their slot values). A step
        most of whose distinct slot sides no row holds any more goes whole, so that a slot
        value following the clock does not pile up a distinct side a cycle."""
        for row in (list(self._steps) if dynamic_rows is None else dynamic_rows):
            state = self._steps.get(row)
            if state is None:
                continue
            state.codes[universe_rows[universe_rows < len(state.codes)]] = -1
            held = state.codes[state.codes >= 0]
            if 2 * np.count_nonzero(np.bincount(held, minlength=len(state.distinct))) < len(state.distinct):
                del self._steps[row]

    def fill(self, step: PyStep, positions: np.ndarray, universe_rows: np.ndarray, scalars: Triple, static: Triple,
             out: Triple, row: int) -> None:
        """Results of ``step`` for ``positions`` into ``out[row]``; ``scalars`` are the leaf's."""
        state = self._steps.get(step.dst)
        if state is None:
            state = self._steps[step.dst] = _Step(step, 0)
        columns = universe_rows[positions]
        if len(state.codes) <= columns.max(initial=0):
            state.codes = grown(state.codes, max(2 * len(state.codes), columns.max() + 1), -1)
        missing = columns[state.codes[columns] < 0]
        if len(missing):
            self._encode(state, np.unique(missing), static)
        job_side = tuple(decode(scalars[0][idx], scalars[1][idx], scalars[2][idx], self._strings)
                         for kind, idx in step.operands if kind == SOURCE_SCALAR)
        table = state.results.get(job_side)
        if table is None or len(table[0]) < len(state.distinct):
            table = state.results[job_side] = self._evaluate(state, job_side)
        codes = state.codes[columns]
        for array, values in zip(out, table):
            array[row, positions] = values[codes]

    def _encode(self, state: _Step, columns: np.ndarray, static: Triple) -> None:
        holes = [tuple(a[idx, columns] for a in static) for kind, idx in state.step.operands if kind == SOURCE_STATIC]
        for position, column in enumerate(columns):
            key = tuple((int(h[0][position]), int(h[1][position]), float(h[2][position])) for h in holes)
            code = state._index.get(key)
            if code is None:
                code = state._index[key] = len(state.distinct)
                state.distinct.append(tuple(decode(*part, self._strings) for part in key))
            state.codes[column] = code

    def _evaluate(self, state: _Step, job_side: tuple[Value, ...]) -> Triple:
        results: list[Value] = []
        for slot_side in state.distinct:
            scalar, static = iter(job_side), iter(slot_side)
            holes = [next(scalar) if kind == SOURCE_SCALAR else next(static) for kind, _ in state.step.operands]
            try:
                results.append(evaluate(state.step.template, holes))
            except (NotScalar, ValueError) as error:
                raise NeedsFallback(str(error)) from error
        return encode(results, self._strings)
