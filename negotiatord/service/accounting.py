"""What ``condor_userprio`` shows, as a document the daemon serves and ``negotiatord userprio`` prints.

Per customer (HTCondor's accountant ``Customer`` records, ``Accountant::ReportState``): effective
priority (real priority × factor), real priority, factor, weighted resources in use, the slots in
use as of the last cycle, accumulated usage, the usage times, and the ceiling and floor an
administrator set (None: none); a group's own record carries its whole subtree's usage,
``<none>``'s the pool's: :meth:`GroupTree.roll_up <negotiatord.settings.groups.GroupTree.roll_up>`;
per group: the configured quota (a static quota, or the dynamic fraction of the parent's), the
quota the last cycle computed from it, and the surplus policy; the running quota preemption timers.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from negotiatord.accountant import AccountantState
from negotiatord.accountant.quota_timers import timer_document
from negotiatord.cycle.result import GroupReport
from negotiatord.settings import ROOT_GROUP, Settings


def accountant_document(state: AccountantState, settings: Settings, last_groups: tuple[GroupReport, ...],
                        now: float, slots_in_use: Mapping[str, int] | None = None) -> dict[str, Any]:
    """The document; ``last_groups`` and ``slots_in_use`` are the last cycle's (its group
    reports, and :meth:`CycleResult.slots_in_use <negotiatord.cycle.result.CycleResult.slots_in_use>`)."""
    tree = settings.group_tree
    customers: list[dict[str, Any]] = []
    for record in state.customers():
        group = tree.assigned_group(record.name)
        factor = state.priority_factor(record.name, group, settings)
        customers.append({
            "name": record.name,
            "is_group": tree.declared(record.name) is not None,
            "group": group,
            "effective_priority": record.real_priority * factor,
            "real_priority": record.real_priority,
            "factor": factor,
            "factor_is_explicit": record.prio_factor is not None,
            "weighted_in_use": record.weighted_usage,
            "slots_in_use": (slots_in_use or {}).get(record.name, 0),
            "accumulated_usage_s": record.accumulated_usage,
            "begin_usage_time": record.begin_usage_time,
            "last_usage_time": record.last_usage_time,
            "last_update_time": record.last_update_time,
            "ceiling": record.ceiling,
            "floor": record.floor,
        })
    computed = {report.name: report for report in last_groups}
    group_rows: list[dict[str, Any]] = []
    for configured in settings.groups:
        report = computed.get(configured.name)
        group_rows.append({
            "name": configured.name,
            "config_quota": configured.static_quota if configured.static_quota is not None
            else configured.dynamic_quota,
            "quota_is_dynamic": configured.static_quota is None,
            "effective_quota": report.quota if report else None,
            "surplus": _surplus(configured.accept_surplus, configured.autoregroup),
        })
    root = computed.get(ROOT_GROUP)
    group_rows.append({"name": ROOT_GROUP, "config_quota": None, "quota_is_dynamic": False,
                       "effective_quota": root.quota if root else None, "surplus": "yes"})
    updates = [c["last_update_time"] for c in customers if c["last_update_time"] is not None]
    return {"now": now, "last_update": max(updates) if updates else None,
            "customers": customers, "groups": group_rows,
            "quota_timers": [timer_document(timer, now) for timer in state.quota_timers.values()]}


def _surplus(accept_surplus: bool, autoregroup: bool) -> str:
    """condor_userprio's "Use Surplus" column (user_prio.cpp ``SurplusName``)."""
    if autoregroup:
        return "Regroup"
    return "ByQuota" if accept_surplus else "no"
