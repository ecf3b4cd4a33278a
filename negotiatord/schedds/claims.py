"""Claim ids: what a schedd needs to claim a matched slot, from the slots' private ads.

As ``Matchmaker::obtainAdsFromCollector`` gathers them: a private ad is keyed by the slot's
``Name`` and ``MyAddress``; a slot with a consumption policy lists several ids in ``ClaimIdList``
(one p-slot may take several matches in one cycle), any other has its one ``ClaimId`` (or the old
``Capability``). ``matchmakingProtocol`` hands out each id at most once per cycle.

An id stays spent across cycles too, until the startd's private ad no longer lists it: the startd
replaces a claimed id, but its new ad may reach the collector after the next cycle has begun, and a
schedd handed a spent id would only fail to claim. The id of a partitionable slot a schedd claimed
whole is that schedd's claim, listed for as long as it lasts: each cycle may hand it to the schedd
again (once per cycle), which carves another dynamic slot with it. Claim ids never leave this module but in the
``PERMISSION_AND_AD`` sent to the schedd: not in logs, not in published matches.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence


def slot_key(name: str, address: str) -> tuple[str, str]:
    return (name, address)


class ClaimIds:
    """The unspent claim ids of each slot, by (``Name``, ``MyAddress``)."""

    def __init__(self) -> None:
        self._ids: dict[tuple[str, str], list[str]] = {}
        self._spent: set[str] = set()

    def refresh(self, slots: Iterable[tuple[str, str, Sequence[str]]],
                again: Collection[tuple[str, str]] = ()) -> int:
        """Take the ids of a new pull's private ads, as (``Name``, ``MyAddress``, ids); the ids of
        the slots ``again`` names (by ``Name`` and ``MyAddress``) may be handed out again, though
        still listed. Returns how many slots have any."""
        ids = {slot_key(name, address): list(claims) for name, address, claims in slots if claims}
        listed_now = {claim for claims in ids.values() for claim in claims}
        self._spent &= listed_now
        self._spent -= {claim for key in again for claim in ids.get(key, ())}
        self._ids = ids
        return len(ids)

    def take(self, name: str, address: str) -> str | None:
        """An unspent id of the slot, now spent; None if it has none left."""
        for claim in self._ids.get(slot_key(name, address), ()):
            if claim not in self._spent:
                self._spent.add(claim)
                return claim
        return None

    def give_back(self, claim: str) -> None:
        """An id taken but never sent: it may be handed out again."""
        self._spent.discard(claim)

    def __len__(self) -> int:
        return len(self._ids)
