"""The order groups negotiate in: ascending GROUP_SORT_EXPR, ties in HTCondor's tree order.

The expression is evaluated in an ad carrying the group's AccountingGroup, GroupQuota,
GroupResourcesInUse and GroupResourcesAllocated (the attributes HTCondor's default
GROUP_SORT_EXPR reads). A value that is not a number sorts last.

Ties keep the order of :attr:`GroupTree.breadth_first <negotiatord.settings.groups.GroupTree.breadth_first>`:
``<none>``, then level by level, siblings in case-insensitive order of their names, whatever the
order of ``GROUP_NAMES``. That is HTCondor's ``hgq_groups`` list, which
``GroupEntry::hgq_construct_tree`` builds breadth-first after sorting the group names with
``ci_less``; ``GroupEntry::hgq_negotiate_with_all_groups`` then sorts a copy of it by sort key
(the ``group_order`` comparator). That sort is ``std::sort``, which promises no order among ties,
but libstdc++ sorts up to 16 elements by insertion, which keeps it; a stable sort keeps it for
trees of any size.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import classad2

from negotiatord.classad.conversion import as_number
from negotiatord.settings import GroupTree


def group_order(
    tree: GroupTree,
    sort_expr: str,
    quota: Mapping[str, float],
    in_use: Mapping[str, float],
    allocated: Mapping[str, float],
) -> list[str]:
    """Every group of ``tree`` (``<none>`` included) in negotiation order. ``quota`` and
    ``allocated`` have every group; ``in_use`` may leave out groups nobody uses. A tree of
    ``<none>`` alone has one order, whatever the expression says (a replay asks every cycle)."""
    if len(tree.breadth_first) < 2:
        return list(tree.breadth_first)
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

    return sorted(tree.breadth_first, key=key)   # stable: ties stay in tree order
