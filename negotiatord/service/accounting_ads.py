"""The accountant as HTCondor's tools read it: ClassAds built from the accountant document
(:mod:`~negotiatord.service.accounting`).

* :func:`accounting_ads`, one ad per customer, as ``Accountant::ReportState(queryAd, ads)``
  (``src/condor_negotiator.V6/Accountant.cpp``) answers ``QUERY_ACCOUNTING_ADS`` (``condor_userprio``
  asking the negotiator directly: ``-negotiator``, ``-allusers``, a named user): ``Name``,
  ``Priority`` (effective), ``PriorityFactor``, ``Ceiling`` (-1: none), ``Floor`` (0: none),
  ``IsAccountingGroup``, ``AccountingGroup``, ``WeightedResourcesUsed``, ``WeightedAccumulatedUsage``,
  ``BeginUsageTime``, ``LastUsageTime``, ``LastUpdate``; a group's also ``EffectiveQuota``,
  ``ConfigQuota`` and ``SurplusPolicy``.
* :func:`priority_report`, the one ad of ``Accountant::ReportState(rollup)`` for ``GET_PRIORITY``
  and ``GET_PRIORITY_ROLLUP``: the same figures with the entry's number appended to each name
  (``Name1``, ``Priority1``...), the groups first, numbered breadth-first from ``<none>``, then
  the submitters, and ``NumSubmittors``, the number of entries. With rollup a group's priority is 0.
* :func:`resource_list` for ``GET_RESLIST``: the slots a submitter holds, ``Name<n>`` and
  ``StartTime<n>`` (``Accountant::ReportState(CustomerName)``).

negotiatord keeps usage weighted only: the unweighted ``ResourcesUsed`` and ``AccumulatedUsage``
are not reported (``condor_userprio`` shows the weighted figures).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

import classad2

from negotiatord.accountant import MIN_PRIORITY, MIN_PRIORITY_FACTOR
from negotiatord.pool.slots import claim_of
from negotiatord.settings import GroupTree

# condor_userprio's surplus policy names (user_prio.cpp reads "regroup", "byquota", "no"); the root
# group always takes surplus
_SURPLUS = {"no": "no", "ByQuota": "byquota", "Regroup": "regroup", "yes": "byquota"}


def customer_attributes(customer: dict[str, Any], groups: Mapping[str, dict[str, Any]]) -> dict[str, Any]:
    """A customer's attributes; a usage time never recorded is left out, as HTCondor's record
    lacks it until it is set."""
    attributes: dict[str, Any] = {
        "Name": customer["name"],
        "Priority": float(customer["effective_priority"]),
        "PriorityFactor": float(customer["factor"]),
        "Ceiling": -1 if customer["ceiling"] is None else int(customer["ceiling"]),
        "Floor": 0 if customer["floor"] is None else int(customer["floor"]),
        "IsAccountingGroup": bool(customer["is_group"]),
        "AccountingGroup": customer["name"] if customer["is_group"] else customer["group"],
        "WeightedResourcesUsed": float(customer["weighted_in_use"]),
        "WeightedAccumulatedUsage": float(customer["accumulated_usage_s"]),
    }
    for attribute, key in (("BeginUsageTime", "begin_usage_time"), ("LastUsageTime", "last_usage_time")):
        if customer[key] is not None:
            attributes[attribute] = int(customer[key])
    group = groups.get(customer["name"]) if customer["is_group"] else None
    if group is not None:
        if group["effective_quota"] is not None:
            attributes["EffectiveQuota"] = float(group["effective_quota"])
        if group["config_quota"] is not None:
            attributes["ConfigQuota"] = float(group["config_quota"])
        attributes["SurplusPolicy"] = _SURPLUS[group["surplus"]]
    return attributes


def groups_by_name(document: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    return {group["name"]: group for group in document["groups"]}


def accounting_ads(document: dict[str, Any]) -> list[classad2.ClassAd]:
    """One ad per customer, as the negotiator answers QUERY_ACCOUNTING_ADS."""
    groups = groups_by_name(document)
    last_update = int(document["last_update"] or 0)
    ads = []
    for customer in document["customers"]:
        ad = classad2.ClassAd(customer_attributes(customer, groups))
        ad["LastUpdate"] = last_update
        ads.append(ad)
    return ads


def answer_query(ads: Iterable[classad2.ClassAd], query: classad2.ClassAd) -> list[classad2.ClassAd]:
    """The ads a query ad asks for: those its ``Requirements`` holds for (all when it is missing or
    true), at most ``LimitResults`` of them, each cut to its ``Projection`` when it names
    attributes (``QUERY_ADS_commandHandler``)."""
    requirements = query.lookup("Requirements") if "Requirements" in query else None
    limit = query.get("LimitResults")
    projection = [name for name in re.split(r"[\s,]+", str(query.get("Projection", "") or "")) if name]
    chosen: list[classad2.ClassAd] = []
    for ad in ads:
        if isinstance(limit, int) and not isinstance(limit, bool) and len(chosen) >= limit:
            break
        if requirements is not None and requirements.eval(ad) is not True:
            continue
        if projection:
            ad = classad2.ClassAd({name: ad.lookup(name) for name in projection if name in ad})
        chosen.append(ad)
    return chosen


def priority_report(document: dict[str, Any], tree: GroupTree, rollup: bool) -> classad2.ClassAd:
    """The one ad of GET_PRIORITY (or, with ``rollup``, GET_PRIORITY_ROLLUP)."""
    groups = groups_by_name(document)
    records = {customer["name"]: customer for customer in document["customers"]}
    report = classad2.ClassAd()
    report["LastUpdate"] = int(document["last_update"] or 0)
    order = tree.breadth_first
    for number, name in enumerate(order, start=1):
        # HTCondor's accountant makes every group's record at start; here a cycle makes it
        record = records.get(name) or _fresh_group(name)
        attributes = customer_attributes(record, groups)
        parent = tree.parent(name)
        attributes["AccountingGroup"] = parent if parent is not None else name
        if rollup:
            attributes["Priority"] = 0.0
        for attribute, value in attributes.items():
            report[f"{attribute}{number}"] = value
    number = len(order)
    for customer in document["customers"]:
        if customer["is_group"]:
            continue
        number += 1
        for attribute, value in customer_attributes(customer, groups).items():
            report[f"{attribute}{number}"] = value
    report["NumSubmittors"] = number
    return report


def _fresh_group(name: str) -> dict[str, Any]:
    return {"name": name, "is_group": True, "group": name, "effective_priority": MIN_PRIORITY,
            "factor": MIN_PRIORITY_FACTOR, "weighted_in_use": 0.0, "accumulated_usage_s": 0.0, "begin_usage_time": None,
            "last_usage_time": None, "ceiling": None, "floor": None}


def resource_list(slot_ads: Iterable[classad2.ClassAd], submitter: str, tree: GroupTree) -> classad2.ClassAd:
    """The slots ``submitter`` holds (a group: every slot its members hold), by name and start time."""
    report = classad2.ClassAd()
    is_group = tree.declared(submitter) is not None
    number = 0
    for ad in slot_ads:
        claim = claim_of(ad)
        if claim is None:
            continue
        if (tree.assigned_group(claim.customer) != submitter) if is_group else (claim.customer != submitter):
            continue
        number += 1
        if not is_group:
            report[f"Name{number}"] = str(ad.get("Name", ""))
            started = claim.job_start if claim.job_start is not None else ad.get("EnteredCurrentState", 0)
            report[f"StartTime{number}"] = int(started) if isinstance(started, (int, float)) else 0
    return report
