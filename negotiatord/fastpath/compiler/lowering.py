"""From IR to kernel plans: the instructions computing some nodes, with their inputs as operands.

A plan's nodes are ordered so each child comes before its parent; registers are reused once a
value's last reader has run. A *py* node (a classad2 region) ends the kernel segment before it: a
plan is kernel code segments with classad2 steps in between, and a *native* plan is one segment,
which can run in a batch with other leaves' plans.
"""

from __future__ import annotations

from dataclasses import dataclass
from collections.abc import Callable

import numpy as np

from negotiatord.classad.parser import Node
from negotiatord.fastpath.compiler.ir import CONST, SCALAR, STATIC, IRGraph
from negotiatord.fastpath.instructions import (
    CONVERSIONS, SOURCE_ASSET, SOURCE_DYNAMIC, SOURCE_NONE, SOURCE_REGISTER, SOURCE_SCALAR, SOURCE_STATIC,
)

Operand = tuple[int, int]


@dataclass(frozen=True)
class PyStep:
    """A py node evaluated by classad2 over the distinct hole values of the current positions."""

    template: Node
    operands: tuple[Operand, ...]
    dst: int


@dataclass(frozen=True)
class Plan:
    segments: tuple[np.ndarray | PyStep, ...]   # kernel code [m, 8] or a classad2 step, in order
    results: tuple[Operand, ...]                # where each target's value is
    registers: int
    converts: bool                               # uses floor/ceiling/round/int/real (string tables)
    ends: tuple[int, ...]                       # native plans: code length once target i is computed

    @property
    def native(self) -> bool:
        """True when the whole plan is one kernel code segment (it can run in a batch)."""
        return not any(isinstance(s, PyStep) for s in self.segments)

    @property
    def code(self) -> np.ndarray:
        codes = [s for s in self.segments if not isinstance(s, PyStep)]
        return codes[0] if codes else np.zeros((0, 8), dtype=np.int64)


def lower(graph: IRGraph, targets: list[int], operand_of: Callable[[int], Operand | None]) -> Plan:
    """Instructions computing ``targets``; ``operand_of`` says which nodes are inputs, and where."""
    order: list[int] = []
    inputs: dict[int, Operand] = {}
    seen: set[int] = set()

    def visit(node: int) -> None:
        stack = [(node, False)]
        while stack:
            current, expanded = stack.pop()
            if current in seen and not expanded:
                continue
            if expanded:
                order.append(current)
                continue
            seen.add(current)
            given = operand_of(current)
            if given is not None:
                inputs[current] = given
                continue
            stack.append((current, True))
            for child in reversed(graph[current].children):
                if child not in seen:
                    stack.append((child, False))

    for target in targets:
        visit(target)
    last_use: dict[int, int] = {}
    for position, node in enumerate(order):
        for child in graph[node].children:
            last_use[child] = position
    for target in targets:
        last_use[target] = len(order)

    free: list[int] = []
    registers = 0
    where: dict[int, Operand] = dict(inputs)
    segments: list[np.ndarray | PyStep] = []
    code: list[list[int]] = []
    converts = False
    computed_at: dict[int, int] = {}
    for position, node in enumerate(order):
        ir = graph[node]
        operands = [where[c] for c in ir.children]
        for child in set(ir.children):
            if child not in inputs and last_use.get(child) == position and where[child][0] == SOURCE_REGISTER:
                free.append(where[child][1])
        if free:
            dst = free.pop()
        else:
            dst = registers
            registers += 1
        where[node] = (SOURCE_REGISTER, dst)
        if ir.kind == "op":
            converts |= ir.payload in CONVERSIONS
            padded = operands + [(SOURCE_NONE, 0)] * (3 - len(operands))
            code.append([ir.payload, dst, *padded[0], *padded[1], *padded[2]])
            computed_at[node] = len(code)
        else:
            if code:
                segments.append(np.array(code, dtype=np.int64))
                code = []
            segments.append(PyStep(ir.template, tuple(operands), dst))
    if code or not segments:
        segments.append(np.array(code, dtype=np.int64).reshape(-1, 8))
    ends: list[int] = []
    for target in targets:
        ends.append(max(computed_at.get(target, 0), ends[-1] if ends else 0))
    return Plan(tuple(segments), tuple(where[t] for t in targets), max(registers, 1), converts, tuple(ends))


def level_operand(graph: IRGraph, node: int, scalar_index: Callable[[int], int],
                  static_index: Callable[[int], int], python_index: Callable[[int], int],
                  assets: int) -> Operand | None:
    """Inputs of a row plan: constants and job-only nodes are scalars, slot-only nodes come from
    the static store, assets and overrides from the dynamic inputs; a classad2 step over job and
    slot values only is computed before the kernel runs, per distinct slot value, into a dynamic
    input row too. Everything else is computed by the plan."""
    ir = graph[node]
    if ir.level == CONST or ir.level == SCALAR:
        return (SOURCE_SCALAR, scalar_index(node))
    if ir.level == STATIC:
        return (SOURCE_STATIC, static_index(node))
    if ir.kind == "asset":
        return (SOURCE_ASSET, ir.payload)
    if ir.kind == "ovr":
        return (SOURCE_DYNAMIC, assets + ir.payload)
    if ir.kind == "py" and all(graph[c].level in (CONST, SCALAR, STATIC) for c in ir.children):
        return (SOURCE_DYNAMIC, 3 * assets + python_index(node))
    return None
