"""The order groups negotiate in: ascending GROUP_SORT_EXPR, as HTCondor does.

The expression is evaluated in an ad carrying the group's AccountingGroup, GroupQuota,
GroupResourcesInUse and GroupResourcesAllocated (the attributes HTCondor's default
GROUP_SORT_EXPR reads). A value that is not a number sorts last; ties keep ``<none>`` first, then
GROUP_NAMES order.
"""

from __future__ import annotations

import math
from typing import Mapping

import classad2

from negotiatord.ads.values import as_number
from negotiatord.settings import GroupTree


def group_order(
    tree: GroupTree,
    sort_expr: str,
    quota: Mapping[str, float],
    in_use: Mapping[str, float],
    allocated: Mapping[str, float],
) -> list[str]:
    """Every group of ``tree`` (``<none>`` included) in negotiation order. ``quota`` and
    ``allocated`` have every group; ``in_use`` may leave out groups nobody uses."""
    expr = classad2.ExprTree(sort_expr)

    def key(name: str) -> float:
        ad = classad2.ClassAd({
            "AccountingGroup": name,
            "GroupQuota": quota[name],
            "GroupResourcesInUse": in_use.get(name, 0.0),
            "GroupResourcesAllocated": allocated[name],
        })
        value = as_number(expr.eval(ad))
        return math.inf if value is None else value

    return sorted(tree.names, key=key)   # stable: ties stay in GROUP_NAMES order
