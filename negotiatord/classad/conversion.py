"""Turning classad2 results into Python numbers and strings, ClassAd-correctly.

classad2 returns ``Value.Undefined``/``Value.Error`` (an IntEnum, so they would pass for ints) and
Python bools (also ints); every numeric use in negotiatord goes through here.
"""

from __future__ import annotations

import math

import classad2


def as_number(value: object) -> float | None:
    """A ClassAd integer or real as float; None for booleans, strings, UNDEFINED, ERROR, lists."""
    if isinstance(value, (classad2.Value, bool)):
        return None
    if isinstance(value, (int, float)):
        number = float(value)
        return number if not math.isnan(number) else None
    return None


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

