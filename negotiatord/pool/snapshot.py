"""The pool snapshot a cycle negotiates over: a slot table, idle jobs in autoclusters, problems.

A snapshot is immutable (:mod:`negotiatord.pool.builder` makes them). The cycle copies the few
columns it changes (asset amounts of partitionable slots, availability) into its own working state.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Sequence

import classad2
import numpy as np

from negotiatord.pool.autoclusters import Autocluster
from negotiatord.pool.jobs import Job
from negotiatord.pool.problems import LeftOut
from negotiatord.pool.slots import Slot
from negotiatord.settings import Settings


@dataclass(frozen=True)
class SlotTable:
    """Slots in columns: one row per slot, one asset column per resource any slot has."""

    slots: tuple[Slot, ...]
    assets: tuple[str, ...]          # union of slot assets, spelled as first seen
    amounts: np.ndarray              # float64[slots, assets]; NaN where a slot lacks the asset
    integer_amounts: np.ndarray      # bool[slots, assets]: the amount is an integer literal in the ad
    candidate: np.ndarray            # bool[slots]: unclaimed, offered to idle jobs
    consumption_policy: np.ndarray   # bool[slots]

    @classmethod
    def from_slots(cls, slots: Sequence[Slot]) -> SlotTable:
        assets: dict[str, str] = {}
        for slot in slots:
            for asset in slot.assets:
                assets.setdefault(asset.lower(), asset)
        column = {lower: i for i, lower in enumerate(assets)}
        amounts = np.full((len(slots), len(assets)), np.nan)
        integer_amounts = np.zeros((len(slots), len(assets)), dtype=bool)
        for row, slot in enumerate(slots):
            for asset, amount, integer in zip(slot.assets, slot.amounts, slot.integer_amounts):
                amounts[row, column[asset.lower()]] = amount
                integer_amounts[row, column[asset.lower()]] = integer
        amounts.setflags(write=False)
        integer_amounts.setflags(write=False)
        return cls(
            slots=tuple(slots),
            assets=tuple(assets.values()),
            amounts=amounts,
            integer_amounts=integer_amounts,
            candidate=np.array([s.is_candidate for s in slots], dtype=bool),
            consumption_policy=np.array([s.has_consumption_policy for s in slots], dtype=bool),
        )

    def asset_column(self, asset: str) -> int:
        return [a.lower() for a in self.assets].index(asset.lower())

    def __len__(self) -> int:
        return len(self.slots)


@dataclass(frozen=True)
class Snapshot:
    table: SlotTable
    jobs: tuple[Job, ...]                       # idle jobs only
    autoclusters: tuple[Autocluster, ...]
    significant_attributes: tuple[str, ...]
    problems: tuple[LeftOut, ...]
    non_idle_jobs: int

    @classmethod
    def build(cls, slot_ads: Iterable[classad2.ClassAd], job_ads: Iterable[classad2.ClassAd],
              settings: Settings) -> Snapshot:
        """A one-off snapshot (the dry run, tests, benchmarks); a daemon keeps a
        :class:`~negotiatord.pool.builder.SnapshotBuilder` to reuse per-ad work across cycles."""
        from negotiatord.pool.builder import SnapshotBuilder   # the builder makes Snapshots

        return SnapshotBuilder().build(slot_ads, job_ads, settings)
