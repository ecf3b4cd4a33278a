"""From ClassAd AST to IR: resolution against the ads' shapes, and partial evaluation.

Resolution follows classad2's matchmaking scopes, checked by the differential tests: an
expression is evaluated in the ad it belongs to; ``MY.x`` and a bare ``x`` read that ad, ``TARGET.x``
reads the other one, and a name the ad lacks is UNDEFINED (classad2 does not fall back to the
other ad). An attribute holding an expression is inlined in its own ad's scope, so a slot's
``TARGET.RequestMemory`` whose job value is ``ifthenelse(MemoryUsage isnt undefined, ...)``
reads the job's ``MemoryUsage``.

A :class:`Builder` resolves for a *group* of slots at once. When the slots of the group disagree
on the shape of an attribute the expression reads (one has a literal, another an expression, a
third lacks it), it raises :class:`Split` and the caller rebuilds each sub-group; the result is a
handful of *leaves* per expression for a whole pool. Literal values are never folded into the IR
(they are data in columns), so one leaf serves every slot of its shape.

Short-circuit operators fold when their deciding operand is constant (``ifThenElse(true, x, y)``
never looks at ``y``), so a branch the slot's shape rules out costs nothing and cannot force a
fallback. Constructs the fast path does not evaluate (nested ads, ``eval``-style functions that
need a scope, circular references, lists that reach a kernel operation, sub-expressions nested
more than :data:`MAX_DEPTH` deep) raise :class:`Unsupported`: that expression falls back to
classad2 for the slots of that group only. A chain of binary operators (``a && b && ...``, as long
as the ads reader lets it be) is built in a loop, so its length is no depth.
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass, field
from collections.abc import Callable, Iterator

import numpy as np

from negotiatord.classad.parser import SCOPES, Node
from negotiatord.classad.values import BOOL, ERROR, INT, REAL, UNDEF, NotScalar, Value
from negotiatord.fastpath.compiler.cells import (
    ABSENT, ASSET, CYCLE_CLOCK, EXPR, LITERAL, CellTable, JobCells, SlotColumns,
)
from negotiatord.fastpath.compiler.folding import evaluate, hole
from negotiatord.fastpath.compiler.ir import SCALAR, IRGraph
from negotiatord.fastpath.instructions import (
    OP_ADD, OP_AND, OP_CEILING, OP_COND, OP_DIV, OP_ELVIS, OP_EQ, OP_FLOOR, OP_GE, OP_GT, OP_INT, OP_IS, OP_ISNT,
    OP_IS_BOOL, OP_IS_ERROR, OP_IS_INT, OP_IS_REAL, OP_IS_STRING, OP_IS_UNDEF, OP_LE, OP_LT, OP_MOD, OP_MUL, OP_NE,
    OP_NEG, OP_NOT, OP_OR, OP_PLUS, OP_REAL, OP_ROUND, OP_SUB,
)

SLOT, JOB = "slot", "job"
# What a builder asks of the ads, in the order it asks: (SLOT, attribute) of the group's slots,
# (JOB, attribute, probe mode) and (GUARD, node) of the job.
Question = tuple

NATIVE_BINARY = {
    "+": OP_ADD, "-": OP_SUB, "*": OP_MUL, "/": OP_DIV, "%": OP_MOD, "<": OP_LT, "<=": OP_LE,
    ">": OP_GT, ">=": OP_GE, "==": OP_EQ, "!=": OP_NE, "=?=": OP_IS, "=!=": OP_ISNT,
}
NATIVE_UNARY = {"-": OP_NEG, "+": OP_PLUS, "!": OP_NOT}
NATIVE_FUNCTIONS = {
    "isundefined": OP_IS_UNDEF, "iserror": OP_IS_ERROR, "isstring": OP_IS_STRING,
    "isinteger": OP_IS_INT, "isreal": OP_IS_REAL, "isboolean": OP_IS_BOOL, "floor": OP_FLOOR,
    "ceiling": OP_CEILING, "round": OP_ROUND, "int": OP_INT, "real": OP_REAL,
}
# functions whose value depends on the scope they are evaluated in, or on nothing reproducible
CONTEXT_FUNCTIONS = {"eval", "evalineachcontext", "unparse", "random", "debug"}
_TRUE, _FALSE = (BOOL, True), (BOOL, False)
# Sub-expressions (operands of a non-chain operator, branches, arguments, inlined attributes)
# resolved one inside another; each level costs a few Python frames. Real expressions resolve
# fewer than 20 deep.
MAX_DEPTH = 64
# Operations on one path of a resolved expression (chains and inlined attributes included).
# classad2 refuses to evaluate a tree much deeper than ~400 levels ("failed to evaluate
# expression", which HTCondor's negotiator takes as ERROR); a tree past this height is left to
# classad2, so the fast path never answers where classad2 would refuse. Real expressions stay
# under 100 (the OSPool's START has 96 operators in all).
MAX_HEIGHT = 256


class Unsupported(Exception):
    """The expression (for this group of slots) is evaluated by classad2 instead."""


class Split(Exception):
    """The group's slots differ in the shape of attribute ``name``: build each shape apart."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.name = name


@dataclass(frozen=True)
class Mode:
    """How job attributes resolve for one kind of root expression.

    no_target: SlotWeight is evaluated on the slot alone (TARGET.x is UNDEFINED).
    override:  on consumption-policy slots Request<asset> is the consumption (cp_override_requested).
    consume:   the asset whose Consumption<asset> this is; a missing Request<asset> reads as 0.
    """

    no_target: bool = False
    override: bool = False
    consume: str | None = None


def truth(value: Value) -> int:
    """The kernels' _truth: 0 false-ish, 1 true-ish, 2 undefined, 3 error, 4 not a boolean."""
    tag, payload = value
    if tag in (BOOL, INT):
        return 1 if payload else 0
    if tag == REAL:
        return 0 if payload == 0.0 else 1
    return {UNDEF: 2, ERROR: 3}.get(tag, 4)


@dataclass
class Builder:
    graph: IRGraph
    cells: CellTable
    columns: SlotColumns
    job: JobCells | None
    rows: np.ndarray                 # the group's rows of the slot columns
    mode: Mode
    old_semantics: bool
    scalar_value: Callable[[int], Value] | None = None   # a job-only node's value for this job
    probes: dict[tuple[str, str], object] = field(default_factory=dict)  # (attribute, mode) -> what was seen
    asked: list[tuple[Question, object]] = field(default_factory=list)  # every question, in order, and its answer
    _memo: dict[tuple[str, str, bool], int | None] = field(default_factory=dict)
    _active: set[tuple[str, str]] = field(default_factory=set)
    _depth: int = 0

    # -- attributes --------------------------------------------------------------------------------

    def reference(self, side: str, name: str, bare: bool) -> int:
        """``name`` looked up in the ad of ``side`` (ClassAd::LookupInScope as classad2 does it).

        In old ClassAd semantics (see :mod:`negotiatord.classad.semantics`) a name the ad lacks is
        first the special ``CurrentTime`` (the wall clock), then, for an unscoped name, the other
        ad's attribute; in new semantics it is UNDEFINED.
        """
        lower = name.lower()
        presence = self.old_semantics and (bare or lower == "currenttime")
        found = self.attribute(side, lower, presence)
        if found is not None:
            return found
        if self.old_semantics:
            if lower == "currenttime":
                return self.graph.clock()
            other = JOB if side == SLOT else SLOT
            if bare and self._has_target():
                found = self.attribute(other, lower, lower == "currenttime")
                if found is not None:
                    return found
        return self.graph.const((UNDEF, None))

    def _has_target(self) -> bool:
        return self.job is not None and not self.mode.no_target

    def attribute(self, side: str, lower: str, presence: bool = False) -> int | None:
        """The node of attribute ``lower`` of the ``side`` ad, or None when that ad lacks it.

        A job attribute read only for its value (``presence`` False) is a job input even when
        the job lacks it (its value is then UNDEFINED), so one compilation serves jobs that
        differ only in which attributes they set; ``presence`` asks whether the job has it.
        """
        key = (side, lower, presence)
        if key in self._memo:
            return self._memo[key]
        if (side, lower) in self._active:
            raise Unsupported(f"circular reference to {lower}")
        self._active.add((side, lower))
        try:
            node = self._slot_attribute(lower) if side == SLOT else self._job_attribute(lower, presence)
        finally:
            self._active.discard((side, lower))
        self._memo[key] = node
        return node

    def _slot_shape(self, lower: str) -> int:
        """The shape every slot of the group has for ``lower``; Split when they differ."""
        shapes = self.columns.shapes(lower, self.rows)
        if not (shapes == shapes[0]).all():
            raise Split(lower)
        shape = int(shapes[0])
        self.asked.append(((SLOT, lower), shape))
        return shape

    def answer(self, question: Question) -> object:
        """The answer this builder's job gives to a question about it, noted as a probe as when
        resolution asks it: a job attribute's probe class, a GUARD condition's value. Slot
        questions are the caller's (their answer is per slot)."""
        if question[0] == JOB:
            assert self.job is not None          # job questions are asked only with a job
            lower, mode = question[1], question[2]
            probe = self.probes[lower, mode] = probe_class(self.cells, self.job.cell(lower), mode)
            return probe
        assert question[0] == GUARD and self.scalar_value is not None   # asked only with job values
        guard = self.probes[str(question[1]), GUARD] = guard_key(self.scalar_value(question[1]))
        return guard

    def _slot_attribute(self, lower: str) -> int | None:
        self._slot_shape(lower)
        cell = self.cells.cells[int(self.columns.column(lower, self.rows[:1])[0])]
        if cell.kind == ABSENT:
            return None
        if cell.kind == LITERAL:
            return self.graph.slot(lower)
        if cell.kind == ASSET:
            return self.graph.asset(cell.column)
        if cell.kind == EXPR and cell.ast is not None:
            return self.build(cell.ast, SLOT)
        raise Unsupported(f"slot attribute {lower}: {cell.text or cell.kind}")

    def _job_attribute(self, lower: str, presence: bool) -> int | None:
        job = self.job
        if job is None or self.mode.no_target:
            return None
        requested = lower.startswith("request") and (self.mode.override or self.mode.consume is not None)
        mode = PRESENCE if presence or requested else VALUE
        cell_id = job.cell(lower)
        probe = self.probes[lower, mode] = probe_class(self.cells, cell_id, mode)
        self.asked.append(((JOB, lower, mode), probe))
        cell = self.cells.cells[cell_id]
        if requested:
            asset = lower[len("request"):]
            if self.mode.consume == asset and cell.kind == ABSENT:
                return self.graph.const((INT, 0))      # cp_compute_consumption inserts it as 0
            if self.mode.override and cell.kind != ABSENT:
                self._slot_shape(asset)
                slot_cell = self.cells.cells[int(self.columns.column(asset, self.rows[:1])[0])]
                if slot_cell.kind == ASSET:
                    return self.graph.override(slot_cell.column)
        if cell.kind == ABSENT and mode == PRESENCE:
            return None
        if cell.kind in (ABSENT, LITERAL):
            return self.graph.job(lower)
        if cell.kind == EXPR and cell.ast is not None:
            return self.build(cell.ast, JOB)
        raise Unsupported(f"job attribute {lower}: {cell.text or cell.kind}")

    # -- expressions -------------------------------------------------------------------------------

    @contextmanager
    def _nested(self) -> Iterator[None]:
        """One more level of sub-expression; beyond :data:`MAX_DEPTH` the expression is refused
        (it falls back to classad2) rather than recursing on."""
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                raise Unsupported(f"sub-expressions nested more than {MAX_DEPTH} deep")
            yield
        finally:
            self._depth -= 1

    def build(self, ast: Node, side: str) -> int:
        with self._nested():
            return self._build(ast, side)

    def _build(self, ast: Node, side: str) -> int:
        kind = ast[0]
        if kind == "lit":
            return self.graph.const(ast[1])
        if kind == "paren":
            return self.build(ast[1], side)
        if kind == "inexact":
            raise Unsupported(f"real literal {ast[1]} may be rounded in classad2's text")
        if kind == "attr":
            scope, name = ast[1], ast[2]
            if scope is None and name.lower() in SCOPES:
                raise Unsupported(f"{name} used as a value")
            if scope is not None and scope.lower() == "target":
                if not self._has_target():
                    return self.graph.const((UNDEF, None))
                side = JOB if side == SLOT else SLOT
            return self.reference(side, name, bare=scope is None)
        if kind == "un" and ast[1] in NATIVE_UNARY:
            return self.operation(NATIVE_UNARY[ast[1]], ("un", ast[1], hole(0)), (self.build(ast[2], side),))
        if kind == "bin" and _chained(ast):
            return self._chain(ast, side)
        if kind == "cond":
            return self._choice(ast[1], ast[2], ast[3], side, ("cond", hole(0), hole(1), hole(2)))
        if kind == "elvis":
            first = self.build(ast[1], side)
            if self.graph.is_const(first):
                return first if self.graph[first].payload[0] != UNDEF else self.build(ast[2], side)
            try:
                second = self.build(ast[2], side)
            except Unsupported:
                first = self._speculate(first)
                if self.graph[first].payload[0] == UNDEF:
                    raise
                return first
            return self.operation(OP_ELVIS, ("elvis", hole(0), hole(1)), (first, second))
        if kind == "call":
            return self._call(ast, side)
        return self._python(ast, side)

    def _chain(self, ast: Node, side: str) -> int:
        """A binary operator whose left operand may be one too, as deep as the chain is long:
        the leftmost operand is built first, then each operator over it in a loop."""
        spine = []
        while ast[0] == "bin" and _chained(ast):
            spine.append(ast)
            ast = ast[2]
        node = self.build(ast, side)
        for parent in reversed(spine):
            if parent[1] in ("&&", "||"):
                node = self._logic(parent, node, side)
            else:
                template = ("bin", parent[1], hole(0), hole(1))
                node = self.operation(NATIVE_BINARY[parent[1]], template, (node, self.build(parent[3], side)))
        return node

    def _logic(self, ast: Node, first: int, side: str) -> int:
        """``ast`` (``&&`` or ``||``) over its left operand, already built as ``first``."""
        is_and = ast[1] == "&&"
        for attempt in range(2):
            if self.graph.is_const(first):
                decided = truth(self.graph[first].payload)
                if decided >= 3:
                    return self.graph.const((ERROR, None))
                if decided == (0 if is_and else 1):
                    return self.graph.const(_FALSE if is_and else _TRUE)
            try:
                second = self.build(ast[3], side)
            except Unsupported:
                if attempt or self.graph.is_const(first):
                    raise
                first = self._speculate(first)
                continue
            opcode = OP_AND if is_and else OP_OR
            return self.operation(opcode, ("bin", ast[1], hole(0), hole(1)), (first, second))
        raise AssertionError("unreachable")

    def _choice(self, cond: Node, then: Node, other: Node, side: str, template: Node) -> int:
        test = self.build(cond, side)
        if not self.graph.is_const(test):
            try:
                return self.operation(OP_COND, template, (test, self.build(then, side), self.build(other, side)))
            except Unsupported:
                test = self._speculate(test)
        decided = truth(self.graph[test].payload)
        if decided >= 3:
            return self.graph.const((ERROR, None))
        if decided == 2:
            return self.graph.const((UNDEF, None))
        return self.build(then if decided == 1 else other, side)

    def _speculate(self, node: int) -> int:
        """A branch the fast path cannot evaluate sits behind a job-only condition: fold in the
        condition's value for this job, so a job that never takes the branch never needs it.
        The compilation then serves only jobs giving the same value (a GUARD probe)."""
        if self.scalar_value is None or self.graph[node].level != SCALAR:
            raise Unsupported("an unsupported branch behind a condition that depends on the slot")
        value = self.scalar_value(node)
        probe = self.probes[str(node), GUARD] = guard_key(value)
        self.asked.append(((GUARD, node), probe))
        return self.graph.const(value)

    def _call(self, ast: Node, side: str) -> int:
        name, args = ast[1], ast[2]
        lower = name.lower()
        if lower in CONTEXT_FUNCTIONS:
            raise Unsupported(f"{name}() depends on the evaluation scope")
        if lower == "time" and not args:
            # the cycle's clock, read from a column (cells.py, CYCLE_CLOCK): a value kept out of
            # the compiled expression, which then serves every cycle
            self._slot_shape(CYCLE_CLOCK)
            return self.graph.slot(CYCLE_CLOCK)
        if lower == "ifthenelse" and len(args) == 3:
            return self._choice(args[0], args[1], args[2], side, ("call", name, (hole(0), hole(1), hole(2))))
        if lower in NATIVE_FUNCTIONS and len(args) == 1:
            return self.operation(NATIVE_FUNCTIONS[lower], ("call", name, (hole(0),)), (self.build(args[0], side),))
        return self._python(ast, side)

    def _python(self, ast: Node, side: str) -> int:
        """A region of non-native constructs, evaluated by classad2 with its scalar inputs filled in."""
        children: list[int] = []
        template = self._template(ast, side, children)
        return self.operation(None, template, tuple(children))

    def _template(self, ast: Node, side: str, children: list[int]) -> Node:
        with self._nested():
            return self._template_of(ast, side, children)

    def _template_of(self, ast: Node, side: str, children: list[int]) -> Node:
        kind = ast[0]
        if _handled(ast):
            children.append(self.build(ast, side))
            return hole(len(children) - 1)
        if kind == "sel" and ast[1][0] == "attr":
            raise Unsupported("attribute of a nested ad")
        if kind == "list":
            return ("list", tuple(self._template(a, side, children) for a in ast[1]))
        if kind == "rec":
            return ("rec", tuple((n, self._template(e, side, children)) for n, e in ast[1]))
        if kind == "call":
            return ("call", ast[1], tuple(self._template(a, side, children) for a in ast[2]))
        if kind == "sel":
            return ("sel", self._template(ast[1], side, children), ast[2])
        if kind == "un":
            return ("un", ast[1], self._template(ast[2], side, children))
        if kind == "paren":
            return ("paren", self._template(ast[1], side, children))
        if kind == "sub":
            return ("sub", self._template(ast[1], side, children), self._template(ast[2], side, children))
        return ("bin", ast[1], self._template(ast[2], side, children), self._template(ast[3], side, children))

    def operation(self, opcode: int | None, template: Node, children: tuple[int, ...]) -> int:
        """An op node, folded through classad2 when all its inputs are constants."""
        if all(self.graph.is_const(c) for c in children):
            try:
                return self.graph.const(evaluate(template, [self.graph[c].payload for c in children]))
            except NotScalar as error:
                raise Unsupported(f"constant that is not a scalar: {error}") from error
        node = self.graph.operation("op" if opcode is not None else "py", opcode, template, children)
        if self.graph[node].height > MAX_HEIGHT:
            raise Unsupported(f"more than {MAX_HEIGHT} operations deep, which classad2 alone evaluates")
        return node


VALUE, PRESENCE, GUARD = "value", "presence", "guard"
ANY_VALUE = -1


def probe_class(cells: CellTable, cell_id: int, mode: str) -> int:
    """What a compilation depends on in a job's attribute, by how it read it.

    VALUE: only the value, so a missing and a literal attribute are alike (ANY_VALUE);
    PRESENCE: whether the job has it (bare-name fallback, Request<asset> overrides), exactly.
    An expression is always its own class: its text was compiled in.
    """
    if mode == VALUE and cells.cells[cell_id].kind in (ABSENT, LITERAL):
        return ANY_VALUE
    return cells.shape(cell_id)


def guard_key(value: Value) -> tuple[int, str]:
    return (value[0], repr(value[1]))


def _chained(ast: Node) -> bool:
    """Whether the binary operator ``ast`` is one :meth:`Builder.build` resolves natively."""
    return ast[1] in NATIVE_BINARY or ast[1] in ("&&", "||")


def _handled(ast: Node) -> bool:
    """Whether :meth:`Builder.build` resolves ``ast`` itself (rather than as a classad2 region)."""
    kind = ast[0]
    if kind in ("lit", "attr", "cond", "elvis", "inexact"):
        return True
    if kind == "paren":
        return _handled(ast[1])
    if kind == "un":
        return ast[1] in NATIVE_UNARY
    if kind == "bin":
        return ast[1] in NATIVE_BINARY or ast[1] in ("&&", "||")
    if kind == "call":
        lower, count = ast[1].lower(), len(ast[2])
        return ((lower == "time" and count == 0) or (lower == "ifthenelse" and count == 3)
                or (lower in NATIVE_FUNCTIONS and count == 1) or lower in CONTEXT_FUNCTIONS)
    return False
