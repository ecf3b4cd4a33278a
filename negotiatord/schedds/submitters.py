"""Submitters as the negotiator reaches them: from their collector ads to their schedds."""

from __future__ import annotations

from dataclasses import dataclass

import classad2

from negotiatord.classad.conversion import evaluate_string
from negotiatord.classad.user_maps import map_user

# schedds built since 8.3.0 send resource request lists (protocol 1, matchmaker.cpp
# startNegotiateProtocol); anything older is asked one job at a time
REQUEST_LISTS_SINCE = (8, 3, 0)


class NotNegotiable(ValueError):
    """A submitter ad that names no schedd to negotiate with; the message says what it lacks."""


@dataclass(frozen=True)
class Submitter:
    """One submitter ad: who, and at which schedd."""

    name: str               # the accounting name (``Name``): what the cycle charges
    schedd_name: str
    schedd_address: str     # ``ScheddIpAddr``
    tag: str                # ``SubmitterTag``: "" for the schedd's own pool
    owner: str              # what the schedd is asked about (``OriginalName``, else ``Name``)
    request_lists: bool     # whether its schedd sends resource request lists

    @property
    def key(self) -> str:
        """As the feed keys submitter ads: ``Name`` and ``ScheddName``."""
        return f"{self.name} {self.schedd_name}"


def submitter_from_ad(ad: classad2.ClassAd) -> Submitter:
    """The submitter ``ad`` describes; raises :class:`NotNegotiable` naming what it lacks."""
    name = evaluate_string(ad, "Name")
    address = evaluate_string(ad, "ScheddIpAddr")
    tag = evaluate_string(ad, "SubmitterTag")
    if not name:
        raise NotNegotiable("a submitter ad without Name")
    if not address:
        raise NotNegotiable(f"submitter {name}: no ScheddIpAddr, so no schedd to negotiate with")
    if tag is None:
        # matchmaker.cpp refuses such an ad too: the schedd needs the tag to accept the session
        raise NotNegotiable(f"submitter {name}: no SubmitterTag")
    return Submitter(name=name, schedd_name=evaluate_string(ad, "ScheddName") or address,
                     schedd_address=address, tag=tag, owner=evaluate_string(ad, "OriginalName") or name,
                     request_lists=_version(evaluate_string(ad, "CondorVersion")) >= REQUEST_LISTS_SINCE)


def with_group_prefix(ad: classad2.ClassAd) -> classad2.ClassAd:
    """The submitter ``ad`` renamed by the ``GROUP_PREFIX`` user map, as
    ``Matchmaker::TransformSubmitterAd`` renames it: the map takes the accounting domain (what
    follows the last ``@`` of ``Name``), and a prefix P makes the submitter ``P.<Name>``, charged in
    group P, while its schedd is still asked about ``OriginalName``. An ad the map leaves alone
    comes back as it is; a renamed one is a copy, the feed's ad untouched."""
    name = evaluate_string(ad, "Name")
    if not name or "@" not in name:
        return ad
    prefix = map_user("GROUP_PREFIX", name.rpartition("@")[2])
    if prefix is None:
        return ad
    renamed = classad2.ClassAd({attribute: ad.lookup(attribute) for attribute in ad.keys()})
    renamed["OriginalName"] = name
    renamed["Name"] = f"{prefix}.{name}"
    return renamed


def _version(text: str | None) -> tuple[int, ...]:
    """``$CondorVersion: 25.14.0 2026-11-29 ... $`` -> (25, 14, 0); () if it says none."""
    for word in (text or "").split():
        parts = word.split(".")
        if len(parts) == 3 and all(part.isdigit() for part in parts):
            return tuple(int(part) for part in parts)
    return ()
