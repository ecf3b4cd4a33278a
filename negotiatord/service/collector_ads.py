"""The ads negotiatord advertises to the pool's collector, as HTCondor's negotiator makes them.

* **The Negotiator ad** (``Matchmaker::init_public_ad``, ``updateCollector``): ``MyType``
  ``Negotiator``, ``Name`` (``NEGOTIATOR_NAME``), the attributes DaemonCore publishes of any daemon
  (``Machine``, ``DaemonStartTime``, ``MyCurrentTime``, ``RealUid``, ``UpdateSequenceNumber``),
  and the cycle figures ``LastNegotiationCycle*<n>`` (:mod:`~negotiatord.service.stats`), which
  ``condor_status -negotiator`` shows. HTCondor's also names the negotiator's command port
  (``MyAddress``, ``NegotiatorIpAddr``); negotiatord takes no HTCondor command, so its ad names its
  HTTP API instead (``NegotiatordURL``), and ``condor_userprio`` says it cannot locate the
  negotiator before it reads the Accounting ads.
* **An Accounting ad per customer** (``forwardAccountingData``, ``forwardGroupAccounting``), keyed
  at the collector by ``Name`` and ``NegotiatorName`` (``makeAccountingAdHashKey``), so several
  negotiators' ads live side by side. Its figures are ``/v1/accountant``'s
  (:func:`~negotiatord.service.accounting.accountant_document`) under HTCondor's names:
  ``Priority`` (the effective priority), ``PriorityFactor``, ``ResourcesUsed`` (slots),
  ``WeightedResourcesUsed``, ``WeightedAccumulatedUsage``, ``BeginUsageTime``, ``LastUsageTime``
  (0 for never, as HTCondor's unset), ``IsAccountingGroup``, ``AccountingGroup`` (a submitter's
  group; a group's parent, ``<none>``'s itself) and ``LastUpdate``; a group's also its quotas and
  surplus policy (``EffectiveQuota``, ``ConfigQuota``, ``SurplusPolicy``). ``condor_userprio``
  reads them from the collector by default, ``condor_status -subsystem accounting`` shows them.
  HTCondor sends the submitters active in the cycle; negotiatord sends every customer
  ``/v1/accountant`` lists, so both show the same customers. Not sent: ``AccumulatedUsage``
  (unweighted: negotiatord accounts weighted usage only), ``Requested``, ``GroupSortKey``.
* **The invalidations** sent when negotiatord stops: its Negotiator ad by ``Name``
  (``Matchmaker::invalidateNegotiatorAd``) and its Accounting ads by ``NegotiatorName``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import classad2

from negotiatord.classad.values import quote_string
from negotiatord.settings import ROOT_GROUP
from negotiatord.settings.groups import GroupTree

NEGOTIATOR = "Negotiator"
ACCOUNTING = "Accounting"
# condor_userprio's surplus policy names (user_prio.cpp reads "regroup", "byquota", "no")
_SURPLUS = {"Regroup": "regroup", "ByQuota": "byquota", "no": "no"}


@dataclass(frozen=True)
class DaemonIdentity:
    """Who the Negotiator ad says negotiatord is."""

    name: str             # NEGOTIATOR_NAME
    machine: str
    url: str              # the HTTP API
    version: str
    started: float        # epoch seconds


def negotiator_ad(identity: DaemonIdentity, cycles: Mapping[str, Any], now: float, sequence: int) -> dict[str, Any]:
    """The Negotiator ad, with ``cycles`` (:meth:`CycleHistory.cycle_attributes
    <negotiatord.service.stats.CycleHistory.cycle_attributes>`)."""
    return {"MyType": NEGOTIATOR, "Name": identity.name, "Machine": identity.machine,
            "NegotiatordURL": identity.url, "NegotiatordVersion": identity.version,
            "DaemonStartTime": int(identity.started), "MyCurrentTime": int(now), "RealUid": os.getuid(),
            "UpdateSequenceNumber": sequence, **cycles}


def accounting_ads(document: Mapping[str, Any], negotiator_name: str, tree: GroupTree) -> list[dict[str, Any]]:
    """One Accounting ad per customer of the accountant ``document``, with its group's quotas for
    a group."""
    groups = {row["name"]: row for row in document["groups"]}
    last_update = int(document["last_update"] or 0)
    ads = []
    for customer in document["customers"]:
        name = customer["name"]
        ad: dict[str, Any] = {
            "MyType": ACCOUNTING, "Name": name, "NegotiatorName": negotiator_name,
            "Priority": float(customer["effective_priority"]), "PriorityFactor": float(customer["factor"]),
            "ResourcesUsed": int(customer["slots_in_use"]), "WeightedResourcesUsed": float(customer["weighted_in_use"]),
            "WeightedAccumulatedUsage": float(customer["accumulated_usage_s"]),
            "BeginUsageTime": int(customer["begin_usage_time"] or 0),
            "LastUsageTime": int(customer["last_usage_time"] or 0),
            "IsAccountingGroup": bool(customer["is_group"]), "LastUpdate": last_update,
        }
        group = groups.get(name) if customer["is_group"] else None
        if group is not None:
            ad["AccountingGroup"] = ROOT_GROUP if name == ROOT_GROUP else tree.parent(name)
            if group["effective_quota"] is not None:
                ad["EffectiveQuota"] = float(group["effective_quota"])
            if group["config_quota"] is not None:
                ad["ConfigQuota"] = float(group["config_quota"])
            ad["SurplusPolicy"] = _SURPLUS[group["surplus"]] if name != ROOT_GROUP else "byquota"
        else:
            ad["AccountingGroup"] = customer["group"]
        ads.append(ad)
    return ads


def invalidate_negotiator(name: str) -> classad2.ClassAd:
    """The query ad that removes the Negotiator ad ``name`` (keyed by its ``Name``)."""
    return _query(NEGOTIATOR, f"TARGET.Name == {quote_string(name)}", name)


def invalidate_accounting(negotiator_name: str) -> classad2.ClassAd:
    """The query ad that removes every Accounting ad of the negotiator ``negotiator_name``: no
    ``Name``, so the collector walks its table, evaluating the ``Requirements`` in each ad alone
    (``setAttrLastHeardFrom``: no TARGET there)."""
    return _query(ACCOUNTING, f"NegotiatorName == {quote_string(negotiator_name)}", None)


def _query(target: str, requirements: str, name: str | None) -> classad2.ClassAd:
    ad = classad2.ClassAd({"MyType": "Query", "TargetType": target})
    ad["Requirements"] = classad2.ExprTree(requirements)
    if name is not None:
        ad["Name"] = name
    return ad
