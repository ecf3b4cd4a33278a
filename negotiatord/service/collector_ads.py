"""The ads negotiatord advertises to the pool's collector, as HTCondor's negotiator makes them.

* **The Negotiator ad** (``Matchmaker::init_public_ad``, ``updateCollector``): ``MyType``
  ``Negotiator``, ``Name`` (``NEGOTIATOR_NAME``), the attributes DaemonCore publishes of any daemon
  (``Machine``, ``DaemonStartTime``, ``MyCurrentTime``, ``RealUid``, ``UpdateSequenceNumber``,
  ``CondorVersion`` and ``CondorPlatform``, without which ``Daemon::locate`` finds no daemon),
  and the cycle figures ``LastNegotiationCycle*<n>`` (:mod:`~negotiatord.service.stats`), which
  ``condor_status -negotiator`` shows, and the command port (``MyAddress``, ``NegotiatorIpAddr``),
  where ``condor_userprio``, ``condor_reschedule`` and a schedd's ``RESCHEDULE`` find it; also its
  HTTP API (``NegotiatordURL``).
* **An Accounting ad per customer** (``forwardAccountingData``, ``forwardGroupAccounting``), keyed
  at the collector by ``Name`` and ``NegotiatorName`` (``makeAccountingAdHashKey``), so several
  negotiators' ads live side by side. Its figures are ``/v1/accountant``'s
  (:func:`~negotiatord.service.accounting.accountant_document`) under HTCondor's names:
  ``Priority`` (the effective priority), ``PriorityFactor``, a submitter's ``Ceiling`` and
  ``Floor``, ``ResourcesUsed`` (slots),
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
from negotiatord.cedar.policy import REMOTE_VERSION
from negotiatord.service.accounting_ads import customer_attributes, groups_by_name
from negotiatord.service.command_port import PLATFORM
from negotiatord.settings import ROOT_GROUP
from negotiatord.settings.groups import GroupTree

NEGOTIATOR = "Negotiator"
ACCOUNTING = "Accounting"


@dataclass(frozen=True)
class DaemonIdentity:
    """Who the Negotiator ad says negotiatord is."""

    name: str             # NEGOTIATOR_NAME
    machine: str
    url: str              # the HTTP API
    address: str          # the command port's sinful string; empty when it has none
    version: str
    started: float        # epoch seconds


def negotiator_ad(identity: DaemonIdentity, cycles: Mapping[str, Any], now: float, sequence: int) -> dict[str, Any]:
    """The Negotiator ad, with ``cycles`` (:meth:`CycleHistory.cycle_attributes
    <negotiatord.service.stats.CycleHistory.cycle_attributes>`)."""
    return {"MyType": NEGOTIATOR, "Name": identity.name, "Machine": identity.machine,
            "NegotiatordURL": identity.url, "NegotiatordVersion": identity.version,
            "DaemonStartTime": int(identity.started), "MyCurrentTime": int(now), "RealUid": os.getuid(),
            "UpdateSequenceNumber": sequence, "CondorVersion": REMOTE_VERSION, "CondorPlatform": PLATFORM, **cycles,
            **({"MyAddress": identity.address, "NegotiatorIpAddr": identity.address} if identity.address else {})}


def accounting_ads(document: Mapping[str, Any], negotiator_name: str, tree: GroupTree) -> list[dict[str, Any]]:
    """One Accounting ad per customer of the accountant ``document``: the attributes a query of the
    negotiator gets (:func:`~.accounting_ads.customer_attributes`), with what the collector's copy
    adds or says otherwise (``forwardAccountingData``, ``forwardGroupAccounting``)."""
    groups = groups_by_name(document)
    last_update = int(document["last_update"] or 0)
    ads = []
    for customer in document["customers"]:
        name = customer["name"]
        ad: dict[str, Any] = {"MyType": ACCOUNTING, **customer_attributes(customer, groups),
                              "NegotiatorName": negotiator_name, "ResourcesUsed": int(customer["slots_in_use"]),
                              "BeginUsageTime": int(customer["begin_usage_time"] or 0),
                              "LastUsageTime": int(customer["last_usage_time"] or 0), "LastUpdate": last_update}
        if customer["is_group"]:
            # a group's ad names its parent, <none>'s itself, and carries no ceiling or floor
            ad["AccountingGroup"] = ROOT_GROUP if name == ROOT_GROUP else tree.parent(name)
            del ad["Ceiling"], ad["Floor"]
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
