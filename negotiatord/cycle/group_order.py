"""The order groups negotiate in: ascending GROUP_SORT_EXPR, as HTCondor does.

The expression is evaluated in an ad carrying the group's AccountingGroup, GroupQuota,
GroupResourcesInUse and GroupResourcesAllocated (the attributes HTCondor's default
GROUP_SORT_EXPR reads). A value that is not a number sorts last; ties keep GROUP_NAMES order.
"""

from __future__ import annotations

import math
from typing import Mapping, Sequence

import classad2

from negotiatord.classad.conversion import as_number


def group_order(
    names: Sequence[str],
    sort_expr: str,
    quota: Mapping[str, float],
    in_use: Mapping[str, float],
    allocated: Mapping[str, float],
) -> list[str]:
    expr = classad2.ExprTree(sort_expr)

    def key(item: tuple[int, str]) -> tuple[float, int]:
        position, name = item
        ad = classad2.ClassAd({
            "AccountingGroup": name,
            "GroupQuota": quota[name],
            "GroupResourcesInUse": in_use[name],
            "GroupResourcesAllocated": allocated[name],
        })
        value = as_number(expr.eval(ad))
        return (math.inf if value is None else value, position)

    return [name for _, name in sorted(enumerate(names), key=key)]
