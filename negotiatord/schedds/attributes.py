"""The job attributes a negotiator reads, sent to each schedd as ``AutoClusterAttrs``.

A schedd groups its idle jobs into autoclusters by these attributes and sends one request per
autocluster with only them (plus its identity and the job's own ``Requirements`` and ``Rank``
references), so every attribute the cycle evaluates must be named. As HTCondor's
``compute_significant_attrs`` (``matchmaker.cpp``): every external reference of every slot ad's
attributes (list values aside), of the negotiator's policy expressions, of
``NEGOTIATOR_JOB_CONSTRAINT``, and of negotiatord's own reads of a job; then
``TrimReferenceNames``, and the attributes HTCondor always drops (the clock, the submitter's
priority, which the negotiator inserts itself, and slot attributes some slots lack), and any name
matching ``^Slot[0-9]*_`` (``REMOVE_SIGNIFICANT_ATTRIBUTES_REGEX``'s default).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

import classad2

from negotiatord.settings import Settings

# what negotiatord reads of a job besides expressions: its order, concurrency limits and owner
OWN_READS = ("JobPrio", "ConcurrencyLimits", "AccountingGroup", "NiceUser", "User", "Owner")
ALWAYS_DROPPED = frozenset(name.lower() for name in (
    "CurrentTime", "LastHeardFrom", "RemoteUser", "RemoteOwner", "RemoteUserFloor", "RemoteUserPrio",
    "RemoteUserResourcesInUse", "RemoteGroupResourcesInUse", "SubmittorPrio", "SubmitterUserPrio",
    "SubmitterUserResourcesInUse", "SubmitterGroupResourcesInUse", "TotalJobRunTime", "MachineLastMatchTime",
    "JobCurrentStartDate", "JobState", "Mips", "KFlops", "SlotID", "DSlotId", "PartitionableSlot",
    "DynamicSlot", "Offline", "PelicanPluginVersion"))
DROPPED_PATTERN = re.compile(r"^Slot[0-9]*_", re.IGNORECASE)
_PREFIXES = ("target.", "other.", ".left.", ".right.", ".")


def trimmed(reference: str) -> str:
    """``TrimReferenceNames`` for an external reference: no scope prefix, the first name only."""
    lowered = reference.lower()
    for prefix in _PREFIXES:
        if lowered.startswith(prefix):
            reference = reference[len(prefix):]
            break
    return re.split(r"[.\[]", reference, maxsplit=1)[0]


def significant_attributes(slot_ads: Iterable[classad2.ClassAd], settings: Settings) -> str:
    """The ``AutoClusterAttrs`` text for a pool of ``slot_ads`` under ``settings``."""
    found: dict[str, str] = {}

    def add(names: Iterable[str]) -> None:
        for name in map(trimmed, names):
            if name and name.lower() not in ALWAYS_DROPPED and not DROPPED_PATTERN.match(name):
                found.setdefault(name.lower(), name)

    sample = None
    for ad in slot_ads:
        sample = sample or ad
        for name in ad.keys():
            expr = ad.lookup(name)
            if not str(expr).lstrip().startswith("{"):      # list values are left out
                add(ad.externalRefs(expr))
    policies = [settings.slot_weight, *settings.consumption.values(), settings.pre_job_rank,
                settings.post_job_rank]
    if settings.consider_preemption:
        policies += [settings.preemption_requirements, settings.preemption_rank]
    probe = classad2.ClassAd({name: sample.lookup(name) for name in sample.keys()}) if sample else classad2.ClassAd()
    for text in filter(None, policies):
        probe["negotiatord_policy__"] = classad2.ExprTree(text)
        add(probe.externalRefs(probe.lookup("negotiatord_policy__")))
    if settings.job_constraint:
        # every name the constraint reads, in an ad of its own (the schedd applies it to its jobs,
        # and the cycle again to the requests)
        alone = classad2.ClassAd({"negotiatord_constraint__": classad2.ExprTree(settings.job_constraint)})
        add(alone.externalRefs(alone.lookup("negotiatord_constraint__")))
    add(OWN_READS)
    return ",".join(sorted(found.values(), key=str.lower))
