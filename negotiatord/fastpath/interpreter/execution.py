"""Running plans: kernel segments in numba, classad2 steps in between, results through sinks.

A :class:`Frame` holds the arrays one evaluation reads and writes (scalars, the static store,
dynamic inputs, registers, outputs). Native plans of many leaves run as a single kernel call
(:func:`run_batch`); plans with classad2 steps run segment by segment (:func:`run_plan`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from negotiatord.classad.values import BOOL, INT, REAL, STR, Value
from negotiatord.fastpath.compiler.folding import evaluate
from negotiatord.fastpath.compiler.lowering import Operand, Plan, PyStep
from negotiatord.fastpath.instructions import (
    SINK_NONE, SOURCE_ASSET, SOURCE_NONE, SOURCE_REGISTER, SOURCE_SCALAR, SOURCE_STATIC,
)
from negotiatord.fastpath.interpreter import kernels
from negotiatord.fastpath.strings import StringTable


class NeedsFallback(Exception):
    """A classad2 step produced a value the kernels cannot carry: use the reference evaluator."""


Triple = tuple[np.ndarray, np.ndarray, np.ndarray]


def triple(shape: tuple[int, ...] | int) -> Triple:
    return np.zeros(shape, dtype=np.int8), np.zeros(shape, dtype=np.int64), np.zeros(shape, dtype=np.float64)


def each(fn: Callable[[np.ndarray], np.ndarray], arrays: Triple) -> Triple:
    """``fn`` applied to the tag, int and float arrays alike."""
    t, i, f = arrays
    return fn(t), fn(i), fn(f)


def encode(values: list[Value], strings: StringTable) -> Triple:
    t, i, f = triple(len(values))
    for k, (tag, payload) in enumerate(values):
        t[k] = tag
        if tag == STR:
            i[k] = strings.intern(payload)
        elif tag in (BOOL, INT):
            i[k] = int(payload)
        elif tag == REAL:
            f[k] = payload
    return t, i, f


def decode(tag: int, ival: int, fval: float, strings: StringTable) -> Value:
    if tag == STR:
        return (STR, strings.strings[ival])
    if tag == BOOL:
        return (BOOL, bool(ival))
    if tag == INT:
        return (INT, int(ival))
    if tag == REAL:
        return (REAL, float(fval))
    return (int(tag), None)


def _empty2() -> Triple:
    return triple((1, 1))


@dataclass
class Frame:
    """The arrays of one evaluation over ``n`` positions.

    Arrays not given are fresh per frame: the kernels write registers (and outputs) in place, so
    one shared default would carry an earlier evaluation's values into the next frame's reads
    (and alias a frame's registers with its dynamic inputs)."""

    n: int
    universe_rows: np.ndarray                 # universe row of each position (static store columns)
    scalars: Triple                        # scalar values
    static: Triple = field(default_factory=_empty2)          # static store [node slot, universe row]
    dynamic: Triple = field(default_factory=_empty2)          # dynamic inputs [row, position]
    registers: Triple = field(default_factory=_empty2)
    out: Triple = field(default_factory=_empty2)

    def ensure_registers(self, count: int) -> None:
        if self.registers[0].shape[0] < count or self.registers[0].shape[1] < self.n:
            self.registers = triple((count, max(self.n, 1)))


def run_batch(code: np.ndarray, blocks: np.ndarray, perm: np.ndarray, frame: Frame, strings: StringTable,
              converts: bool) -> None:
    conversions = strings.conversions() if converts else _NO_CONVERSIONS
    scalars = each(lambda a: a.reshape(-1, 1), frame.scalars)
    kernels.run_blocks(code, blocks, perm, frame.universe_rows, *scalars, *frame.static, *frame.dynamic,
                       *frame.registers, *frame.out, strings.lower(), strings.ranks(), *conversions)


_NO_CONVERSIONS = triple((5, 1))


def run_plan(plan: Plan, perm: np.ndarray, frame: Frame, strings: StringTable, sinks: list[tuple[int, int]],
             scalar_base: int = 0, asset_base: int = 0) -> None:
    """Run ``plan`` over positions ``perm``; result j goes to output row ``sinks[j][1]`` through
    sink ``sinks[j][0]``. The sinks run in the same kernel call as the last segment when that one
    is native (each call costs more to dispatch than a scalar plan's segment costs to run)."""
    frame.ensure_registers(plan.registers)
    count = len(perm)
    results = [[0, 0, 0, count, kind, idx, sink, row, scalar_base, asset_base, 0]
               for (kind, idx), (sink, row) in zip(plan.results, sinks)]
    code = np.zeros((0, 8), dtype=np.int64)
    for position, segment in enumerate(plan.segments):
        if isinstance(segment, PyStep):
            _python_step(segment, perm, frame, strings, scalar_base, asset_base)
            continue
        if not len(segment):
            continue
        block = [[0, len(segment), 0, count, SOURCE_NONE, 0, SINK_NONE, 0, scalar_base, asset_base, 0]]
        if position == len(plan.segments) - 1:
            code, results = segment, block + results
        else:
            run_batch(segment, np.array(block, dtype=np.int64), perm, frame, strings, plan.converts)
    run_batch(code, np.array(results, dtype=np.int64), perm, frame, strings, plan.converts and len(code) > 0)


def gather(operand: Operand, perm: np.ndarray, frame: Frame, scalar_base: int, asset_base: int) -> Triple:
    kind, idx = operand
    if kind == SOURCE_REGISTER:
        return each(lambda a: a[idx, perm], frame.registers)
    if kind == SOURCE_SCALAR:
        if len(perm) == 1:             # a job's scalar plan: the value itself, not a copy per position
            return each(lambda a: a[scalar_base + idx: scalar_base + idx + 1], frame.scalars)
        return each(lambda a: np.repeat(a[scalar_base + idx: scalar_base + idx + 1], len(perm)), frame.scalars)
    if kind == SOURCE_STATIC:
        columns = frame.universe_rows[perm]
        return each(lambda a: a[idx, columns], frame.static)
    row = asset_base + idx if kind == SOURCE_ASSET else idx
    return each(lambda a: a[row, perm], frame.dynamic)


def _python_step(step: PyStep, perm: np.ndarray, frame: Frame, strings: StringTable, scalar_base: int,
                 asset_base: int) -> None:
    t, i, f = python_values(step, perm, frame, strings, scalar_base, asset_base)
    frame.registers[0][step.dst, perm] = t
    frame.registers[1][step.dst, perm] = i
    frame.registers[2][step.dst, perm] = f


def python_values(step: PyStep, perm: np.ndarray, frame: Frame, strings: StringTable, scalar_base: int,
                  asset_base: int) -> Triple:
    """The step's template evaluated by classad2 once per distinct combination of hole values."""
    holes = [gather(op, perm, frame, scalar_base, asset_base) for op in step.operands]
    if len(perm) == 1 or not holes:
        inverse, first = np.zeros(len(perm), dtype=np.int64), np.zeros(min(len(perm), 1), dtype=np.int64)
    else:
        keys = np.stack([column.astype(np.int64) if column.dtype != np.float64 else column.view(np.int64)
                         for h in holes for column in h], axis=1)
        unique, inverse = np.unique(keys, axis=0, return_inverse=True)
        first = np.zeros(len(unique), dtype=np.int64)
        first[inverse.ravel()[::-1]] = np.arange(len(perm))[::-1]
    results: list[Value] = []
    for position in first:
        values = [decode(h[0][position], h[1][position], h[2][position], strings) for h in holes]
        try:
            results.append(evaluate(step.template, values))
        except ValueError as error:        # NotScalar and unparsable renderings alike
            raise NeedsFallback(str(error)) from error
    t, i, f = encode(results, strings)
    where = inverse.ravel()
    return t[where], i[where], f[where]
