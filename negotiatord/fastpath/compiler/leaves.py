"""Leaves: one root expression resolved for one group of slots, lowered to kernel plans.

A Requirements-like leaf (MATCH sink) matches exactly when each of its conjuncts does (ClassAd
``&&`` is true only when both sides are), so its conjuncts are sorted by what they depend on:

* constant ones are decided at compile time (``never``);
* job-only ones once per autocluster (``scalar_conjuncts``);
* slot-only ones once per slot for the cycle (``static_conjuncts``, the space's ``static_ok``);
* job-and-slot ones without the slot's changing assets once per slot and *distinct job values*
  (``job_static``: a pool's autoclusters share a handful of ``JobDurationCategory`` /
  ``SingularityImage`` / site-list values, so most scans find these cached);
* the rest, which read assets, run in the kernel as a *chain*, cheapest first, each conjunct on
  the rows the previous ones left.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from negotiatord.classad.values import BOOL, INT, REAL
from negotiatord.fastpath.compiler.ir import CONST, ROW, SCALAR, STATIC, IRGraph, collect
from negotiatord.fastpath.compiler.lowering import Operand, Plan, PyStep, level_operand, lower
from negotiatord.fastpath.instructions import OP_AND, SINK_MATCH, SOURCE_SCALAR, SOURCE_STATIC


class InputRows(Protocol):
    """Where leaves find their inputs (the interpreter's compilations, which number them alike for
    every space of every cycle): a row of the static store per slot-only node, a dynamic input
    row per classad2 step computed before the kernel. Every leaf asking for a node gets the same
    row."""

    def static_row(self, node: int) -> int: ...

    def python_row(self, node: int) -> int: ...


@dataclass
class Operands:
    """The inputs one or more plans read: scalar operand indices, static store rows, and the
    classad2 steps computed before the kernel (into dynamic input rows)."""

    graph: IRGraph
    assets: int                  # asset columns of the slot table
    rows: InputRows
    scalars: dict[int, int] = field(default_factory=dict)
    statics: list[int] = field(default_factory=list)
    python: list[PyStep] = field(default_factory=list)

    def operand(self, node: int) -> Operand | None:
        return level_operand(self.graph, node, self.scalar, self.static, self.python_row, self.assets)

    def scalar(self, node: int) -> int:
        return self.scalars.setdefault(node, len(self.scalars))

    def static(self, node: int) -> int:
        if node not in self.statics:
            self.statics.append(node)
        return self.rows.static_row(node)

    def python_row(self, node: int) -> int:
        graph = self.graph
        row = self.rows.python_row(node)
        if all(step.dst != row for step in self.python):
            operands = tuple((SOURCE_STATIC, self.static(c)) if graph[c].level == STATIC
                             else (SOURCE_SCALAR, self.scalar(c)) for c in graph[node].children)
            self.python.append(PyStep(graph[node].template, operands, row))
        return row

    @property
    def scalar_nodes(self) -> list[int]:
        return sorted(self.scalars, key=self.scalars.__getitem__)


@dataclass
class Leaf:
    id: int
    node: int | None
    reason: str                           # why classad2 evaluates it ("" for compiled leaves)
    plan: Plan | None = None              # the whole expression
    chain: Plan | None = None             # Requirements-like: the conjuncts that read assets
    never: bool = False
    scalar_conjuncts: list[int] = field(default_factory=list)
    static_conjuncts: list[int] = field(default_factory=list)
    job_static: Plan | None = None        # Requirements-like: the conjuncts of job and slot values only
    job_static_inputs: Operands | None = None
    scalar_nodes: list[int] = field(default_factory=list)     # scalar operand i of plan and chain
    static_nodes: list[int] = field(default_factory=list)     # static store rows any plan reads
    python_inputs: list[PyStep] = field(default_factory=list)  # classad2 steps the kernel's plan reads
    uses_clock: bool = False                                   # a scalar input reads the wall clock

    @property
    def job_static_nodes(self) -> list[int]:
        """Scalar operand i of the ``job_static`` plan (none without one)."""
        return self.job_static_inputs.scalar_nodes if self.job_static_inputs is not None else []


def compile_leaf(graph: IRGraph, assets: int, rows: InputRows, leaf_id: int, node: int | None, sink: int,
                 reason: str) -> Leaf:
    """Leaf ``leaf_id`` for IR root ``node`` (None: classad2 evaluates it, for ``reason``), its
    plans reading their inputs where ``rows`` keeps them."""
    leaf = Leaf(leaf_id, node, reason)
    if node is None:
        return leaf
    main = Operands(graph, assets, rows)
    leaf.plan = lower(graph, [node], main.operand)
    leaf.python_inputs = main.python
    statics = main.statics
    if sink == SINK_MATCH and leaf.plan.native:
        chain = Operands(graph, assets, rows, scalars=main.scalars, statics=statics)
        dynamic, job_static = _split(graph, leaf, node, chain)
        leaf.chain = lower(graph, dynamic, chain.operand)
        leaf.python_inputs = chain.python
        if job_static:
            inputs = Operands(graph, assets, rows, statics=statics)
            leaf.job_static = lower(graph, job_static, inputs.operand)
            leaf.job_static_inputs = inputs
    leaf.scalar_nodes = main.scalar_nodes
    leaf.static_nodes = statics
    leaf.uses_clock = any(graph[n].uses_clock
                          for n in (*leaf.scalar_nodes, *leaf.scalar_conjuncts, *leaf.job_static_nodes))
    return leaf


def _split(graph: IRGraph, leaf: Leaf, node: int, chain: Operands) -> tuple[list[int], list[int]]:
    """Sort the conjuncts of the leaf's root ``node``; returns the row conjuncts that read assets
    and those that do not."""
    dynamic: list[int] = []
    job_static: list[int] = []
    for conjunct in conjuncts(graph, node):
        level = graph[conjunct].level
        if level == CONST:
            leaf.never |= not matches(*graph[conjunct].payload)
        elif level == SCALAR:
            leaf.scalar_conjuncts.append(conjunct)
        elif level == STATIC:
            leaf.static_conjuncts.append(conjunct)
            chain.static(conjunct)
        elif graph[conjunct].reads_assets:
            dynamic.append(conjunct)
        else:
            job_static.append(conjunct)
    dynamic.sort(key=lambda n: _row_cost(graph, n))
    return dynamic, job_static


def conjuncts(graph: IRGraph, node: int) -> list[int]:
    """The operands of the ``&&`` chain at ``node``, left to right (walked with a stack: a chain
    is as deep as it is long)."""
    found: list[int] = []
    stack = [node]
    while stack:
        current = stack.pop()
        ir = graph[current]
        if ir.kind == "op" and ir.payload == OP_AND:
            stack.extend(reversed(ir.children))
        else:
            found.append(current)
    return found


def _row_cost(graph: IRGraph, node: int) -> int:
    """Instructions a conjunct needs per row (its row-level nodes)."""
    found: set[int] = set()
    collect(graph, node, lambda n: graph[n].level == ROW, found)
    return len(found)



def matches(tag: int, payload: object) -> bool:
    """ClassAd.matches on one value: true, or a non-zero number."""
    return tag in (BOOL, INT, REAL) and payload != 0
