"""Evaluating non-native pieces with classad2 itself: a template AST plus literal hole values.

Everything the kernels do not implement (string functions, lists, bit operations, quantize, ...)
and all compile-time constant folding goes through here, so those values are classad2's by
construction. Holes are already-evaluated scalar values written back as literals; the template
never contains an attribute reference, so evaluation needs no ad. Results are memoised by text:
a pool asks the same ``stringListMember("CHTC", "a,b,CHTC", ",")`` over and over.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any
from collections.abc import Sequence

import classad2

from negotiatord.classad.parser import Node, unparse
from negotiatord.classad.values import REAL, Value, from_python, literal_text


class _Hole:
    """Marks a hole in a template: ``(HOLE, i)`` stands for the i-th child's value."""

    def __repr__(self) -> str:
        return "HOLE"


HOLE = _Hole()


def hole(index: int) -> Node:
    return (HOLE, index)


def render(template: Node, holes: Sequence[Value]) -> str:
    """Template text with each hole replaced by the literal of its value."""
    return unparse(_fill(template, holes))


def _fill(node: Any, holes: Sequence[Value]) -> Any:
    if not isinstance(node, tuple):
        return node
    if node and node[0] is HOLE:
        return ("text", literal_text(holes[node[1]]))
    return tuple(_fill(part, holes) if isinstance(part, tuple) else part for part in node)


def evaluate(template: Node, holes: Sequence[Value]) -> Value:
    """classad2's value of the filled template; raises NotScalar for lists, ads and times."""
    try:
        return _evaluate_values(template, tuple(holes), _exact(holes))
    except TypeError:                      # an unhashable payload: skip the memo
        return _evaluate_text(render(template, holes))


def _exact(holes: Sequence[Value]) -> tuple:
    """The memo key of ``holes``: reals by their text, as 0.0 == -0.0 would share one entry
    (``-x`` of either would then answer for both)."""
    return tuple((tag, repr(payload)) if tag == REAL else (tag, payload) for tag, payload in holes)


@lru_cache(maxsize=200_000)
def _evaluate_values(template: Node, holes: tuple[Value, ...], key: tuple) -> Value:
    return _evaluate_text(render(template, holes))


@lru_cache(maxsize=200_000)
def _evaluate_text(text: str) -> Value:
    return from_python(classad2.ExprTree(text).eval())
