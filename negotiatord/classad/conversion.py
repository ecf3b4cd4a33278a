"""Turning classad2 results into Python numbers and strings, ClassAd-correctly.

classad2 returns ``Value.Undefined``/``Value.Error`` (an IntEnum, so they would pass for ints) and
Python bools (also ints); every numeric use in negotiatord goes through here.
"""

from __future__ import annotations

import math
from functools import lru_cache

import classad2


def as_number(value: object) -> float | None:
    """A ClassAd integer or real as float; None for booleans, strings, UNDEFINED, ERROR, lists."""
    if isinstance(value, (classad2.Value, bool)):
        return None
    if isinstance(value, (int, float)):
        number = float(value)
        return number if not math.isnan(number) else None
    return None


def evaluated(expr: classad2.ExprTree, my: classad2.ClassAd, target: classad2.ClassAd | None = None) -> object:
    """``expr`` with ``my`` as MY (and ``target`` as TARGET); ERROR where classad2 refuses to
    evaluate it at all (a tree deeper than it walks, ~400 levels, which a chain of attributes can
    build from expressions that are each small). HTCondor's negotiator takes a failed evaluation as
    ERROR too: no match, no number."""
    try:
        return expr.eval(my) if target is None else expr.eval(my, target)
    except classad2.ClassAdException:
        return classad2.Value.Error


def requirements_hold(my: classad2.ClassAd, target: classad2.ClassAd) -> bool:
    """``target``'s Requirements with ``target`` as MY, by classad2's ``my.matches(target)``;
    False where classad2 refuses to evaluate them (as :func:`evaluated` says)."""
    try:
        return bool(my.matches(target))
    except classad2.ClassAdException:
        return False


def evaluate(ad: classad2.ClassAd, attr: str) -> object:
    """``attr`` of ``ad`` evaluated in the ad's own scope (None when the ad lacks it).

    A literal comes straight from ``get`` (one call into classad2); only an expression is
    evaluated, which is what makes reading a few attributes of 255k job ads affordable.
    """
    value = ad.get(attr)
    return ad.eval(attr) if isinstance(value, classad2.ExprTree) else value


def evaluate_number(ad: classad2.ClassAd, attr: str) -> float | None:
    """``attr`` of ``ad`` evaluated in the ad's own scope, as a number (None when it is not one)."""
    return as_number(evaluate(ad, attr))


def evaluate_string(ad: classad2.ClassAd, attr: str) -> str | None:
    """``attr`` of ``ad`` evaluated in the ad's own scope, when it is a string."""
    value = evaluate(ad, attr)
    return value if isinstance(value, str) else None



def satisfies(ad: classad2.ClassAd, constraint: str) -> bool:
    """Whether ``ad`` meets ``constraint``, evaluated in the ad alone, as HTCondor's collector and
    schedd select ads for a query (``EvalExprToBool``, then ``IsBooleanValueEquiv``): true, or a
    non-zero number; UNDEFINED, ERROR and anything else leave the ad out."""
    value = evaluated(_expression(constraint), ad)
    if isinstance(value, classad2.Value):
        return False
    if isinstance(value, bool):
        return value
    number = as_number(value)
    return number is not None and number != 0


@lru_cache(maxsize=64)
def _expression(text: str) -> classad2.ExprTree:
    """The parsed ``text``; the config's constraints are asked of every ad, parsed once."""
    return classad2.ExprTree(text)
