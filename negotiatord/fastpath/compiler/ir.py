"""The compiler's intermediate form: a hash-consed DAG of resolved expression nodes.

After resolution no node refers to ``MY``/``TARGET`` any more: a reference is to the *job's*
literal attribute (``job``), the *slot's* literal attribute (``slot``), the slot's current asset
amount (``asset``) or the consumption that overrides a job's Request<asset> (``ovr``). Every node
knows which of those it depends on, which decides where it is evaluated:

    CONST   folded at compile time (through classad2, so folding is exact by construction)
    SCALAR  depends on the job (or the wall clock) only: once per autocluster
    STATIC  depends on slot literals only: once per slot, cached for the cycle
    ROW     everything else: per (autocluster, slot) in the kernels

Native operations carry a kernel opcode; the rest (string functions, lists, bit operations, ...)
are *py* nodes: a small AST template whose holes are the children's values, evaluated by classad2
once per distinct combination of hole values.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from collections.abc import Callable

CONST, SCALAR, STATIC, ROW = 0, 1, 2, 3
_JOB, _SLOT, _DYN, _CLOCK = 1, 2, 4, 8


@dataclass(frozen=True)
class IRNode:
    id: int
    kind: str                 # const | job | slot | asset | ovr | op | py
    payload: Any              # const: value; job/slot: attribute name; asset/ovr: column; op: opcode
    template: Any             # op/py: AST with ("hole", i) leaves
    children: tuple[int, ...]
    deps: int                 # bit set of _JOB, _SLOT, _DYN, _CLOCK
    height: int = 0           # operations on the longest path down to a leaf

    @property
    def level(self) -> int:
        if self.deps == 0:
            return CONST
        if self.deps & _DYN or (self.deps & _SLOT and self.deps != _SLOT):
            return ROW
        return STATIC if self.deps == _SLOT else SCALAR

    @property
    def uses_clock(self) -> bool:
        return bool(self.deps & _CLOCK)

    @property
    def reads_assets(self) -> bool:
        """Reads a slot's assets (or the consumption overriding a request): changes as slots fill."""
        return bool(self.deps & _DYN)


class IRGraph:
    """All nodes of one evaluator; equal nodes are one node, so equal sub-expressions of
    different slots' expressions are evaluated once."""

    def __init__(self) -> None:
        self.nodes: list[IRNode] = []
        self._ids: dict[tuple, int] = {}

    def __getitem__(self, node: int) -> IRNode:
        return self.nodes[node]

    def const(self, value: tuple[int, Any]) -> int:
        tag, payload = value
        return self._intern("const", (tag, payload), None, (), 0, key_payload=(tag, repr(payload)))

    def job(self, name: str) -> int:
        return self._intern("job", name, None, (), _JOB)

    def slot(self, name: str) -> int:
        return self._intern("slot", name, None, (), _SLOT)

    def asset(self, column: int) -> int:
        return self._intern("asset", column, None, (), _DYN)

    def override(self, column: int) -> int:
        return self._intern("ovr", column, None, (), _DYN)

    def clock(self) -> int:
        return self._intern("clock", None, None, (), _CLOCK)

    def operation(self, kind: str, opcode: int | None, template: Any, children: tuple[int, ...]) -> int:
        deps = height = 0
        for child in children:
            deps |= self.nodes[child].deps
            height = max(height, self.nodes[child].height)
        return self._intern(kind, opcode, template, children, deps, height=height + 1)

    def is_const(self, node: int) -> bool:
        return self.nodes[node].kind == "const"

    def _intern(self, kind: str, payload: Any, template: Any, children: tuple[int, ...], deps: int,
                key_payload: Any = None, height: int = 0) -> int:
        key = (kind, payload if key_payload is None else key_payload, template, children)
        found = self._ids.get(key)
        if found is not None:
            return found
        node = len(self.nodes)
        self._ids[key] = node
        self.nodes.append(IRNode(node, kind, payload, template, children, deps, height))
        return node


def collect(graph: IRGraph, node: int, wanted: Callable[[int], bool], found: set[int]) -> None:
    """Add to ``found`` the nodes under ``node`` (itself included) that are ``wanted``."""
    stack = [node]
    seen: set[int] = set()
    while stack:
        current = stack.pop()
        if current in seen:
            continue
        seen.add(current)
        if wanted(current):
            found.add(current)
        stack.extend(graph[current].children)
