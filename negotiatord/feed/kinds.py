"""The three kinds of ad the feed keeps, and the key an update replaces.

Keys follow HTCondor's collector hash keys where the ads allow: a slot is its ``Name``, a job its
``GlobalJobId`` (else ``ClusterId.ProcId``, as the cycle names jobs), and a submitter its ``Name``
plus ``ScheddName`` (collector ``makeScheddAdHashKey``: the same user submits from many schedds).
"""

from __future__ import annotations

from enum import Enum

import classad2

from negotiatord.classad.conversion import evaluate_string
from negotiatord.pool.jobs import job_id


class AdKind(str, Enum):
    """What an endpoint or a file holds; the value is the URL segment (``/v1/ads/<value>``)."""

    SLOT = "slots"
    JOB = "jobs"
    SUBMITTER = "submitters"

    @property
    def my_type(self) -> str:
        """The ``MyType`` HTCondor gives this kind of ad."""
        return {AdKind.SLOT: "Machine", AdKind.JOB: "Job", AdKind.SUBMITTER: "Submitter"}[self]

    @property
    def key_attributes(self) -> str:
        return {AdKind.SLOT: "Name", AdKind.JOB: "GlobalJobId (or ClusterId and ProcId)",
                AdKind.SUBMITTER: "Name"}[self]


class UnkeyedAd(ValueError):
    """An ad that cannot be filed: the message says what is missing or wrong."""


def ad_key(kind: AdKind, ad: classad2.ClassAd) -> str:
    """The key an update of ``ad`` replaces; raises :class:`UnkeyedAd` naming the problem."""
    my_type = ad.get("MyType")
    if isinstance(my_type, str) and my_type.lower() != kind.my_type.lower():
        raise UnkeyedAd(f"MyType is {my_type!r}; {kind.value} are {kind.my_type} ads")
    if kind is AdKind.JOB:
        key = job_id(ad)
    else:
        key = evaluate_string(ad, "Name")
        schedd = evaluate_string(ad, "ScheddName") if kind is AdKind.SUBMITTER else None
        if key and schedd:
            key = f"{key} {schedd}"  # a space: neither part may contain one (HTCondor drops such names)
    if not key:
        raise UnkeyedAd(f"no {kind.key_attributes}: a {kind.my_type} ad is filed under it")
    return key


_KIND_OF = {kind.my_type.lower(): kind for kind in AdKind}


def kind_of(ad: classad2.ClassAd) -> AdKind | None:
    """The kind ``ad``'s ``MyType`` says it is, if one of the three."""
    return _KIND_OF.get(str(ad.get("MyType", "")).lower())
