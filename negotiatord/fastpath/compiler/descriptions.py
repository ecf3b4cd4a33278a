"""What the fast path read of each ad, kept for as long as the pool keeps the ad's record.

A classad2 read costs a call into the library, and a cycle reads a pool attribute by attribute.
A daemon's snapshot builder keeps the :class:`~negotiatord.pool.slots.Slot` and the
:class:`~negotiatord.pool.job_ads.MatchmakingAd` of an unchanged ad from one cycle to the next, so
what was read of an ad is filed under the identity of its record: the next cycle's evaluator
interns those descriptions without asking the ad again. Entries are held weakly, so a record the
pool lets go takes its descriptions with it, and one cache may serve every cycle of a daemon.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any, Generic, TypeVar

Description = tuple[str, Any]     # (ABSENT, None), (EXPR, text), (OTHER, why) or (LITERAL, Value)

Kept = TypeVar("Kept")


class RecordMemo(Generic[Kept]):
    """Something worked out of each record (a Slot, a MatchmakingAd: anything that can be
    referenced weakly and stands for one unchanging ad), kept for as long as the record lives.
    Records are told apart by identity: a record is no key (its dataclass compares by value)."""

    def __init__(self, make: Callable[[], Kept]) -> None:
        self._make = make
        self._by_record: dict[int, tuple[weakref.ref, Kept]] = {}

    def of(self, record: object) -> Kept:
        """What is kept for ``record``, made empty the first time it is asked for."""
        key = id(record)
        found = self._by_record.get(key)
        if found is not None and found[0]() is record:
            return found[1]
        kept = self._make()
        # The callback reaches this cache weakly: a strong reference would close a loop (cache,
        # entry, weak reference, callback, cache), and a cache let go while its records live on
        # (an evaluator's own, over a builder's records) would wait for the cyclic collector.
        owner = weakref.ref(self)

        def forget(reference: weakref.ref) -> None:
            cache = owner()
            if cache is not None and cache._by_record.get(key, (None,))[0] is reference:
                del cache._by_record[key]

        self._by_record[key] = (weakref.ref(record, forget), kept)
        return kept

    def __len__(self) -> int:
        """Records with something kept, and still alive."""
        return len(self._by_record)


class AdDescriptions(RecordMemo[dict[str, Description]]):
    """Descriptions by attribute name, per record; the caller adds what it reads."""

    def __init__(self) -> None:
        super().__init__(dict)
