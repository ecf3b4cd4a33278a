"""The pool snapshot a cycle negotiates over: a slot table, idle jobs in autoclusters, problems.

A snapshot is immutable (:mod:`negotiatord.pool.builder` makes them). The cycle copies the few
columns it changes (asset amounts of partitionable slots, availability) into its own working state.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from itertools import chain
from types import MappingProxyType
from operator import attrgetter
from collections.abc import Iterable, Mapping, Sequence

import numpy as np

from negotiatord.pool.autoclusters import Autocluster
from negotiatord.pool.jobs import Job
from negotiatord.pool.problems import LeftOut
from negotiatord.pool.slots import Slot, SlotKind, child_names


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
        """The table of ``slots``. A cycle makes one of 45k slots: each slot is read once (going
        through 45k objects is most of the cost) and each distinct asset list is placed once."""
        assets, amounts, integers, candidate, policy = zip(*map(_TABLE_FIELDS, slots)) if slots else [()] * 5
        layouts = _AssetLayouts(assets)
        placements = list(map(layouts.placement, assets))
        rows = np.repeat(np.arange(len(slots)), [len(p.columns) for p in placements])
        cells = len(rows)                       # one per asset of each slot
        columns = np.fromiter(chain.from_iterable(p.columns for p in placements), np.intp, cells)
        kept = np.fromiter(chain.from_iterable(p.kept for p in placements), bool, cells)
        rows, columns = rows[kept], columns[kept]
        table_amounts = np.full((len(slots), len(layouts.assets)), np.nan)
        integer_amounts = np.zeros((len(slots), len(layouts.assets)), dtype=bool)
        table_amounts[rows, columns] = _per_asset(amounts, float, cells)[kept]
        integer_amounts[rows, columns] = _per_asset(integers, bool, cells)[kept]
        table_amounts.setflags(write=False)
        integer_amounts.setflags(write=False)
        return cls(
            slots=tuple(slots),
            assets=layouts.assets,
            amounts=table_amounts,
            integer_amounts=integer_amounts,
            candidate=np.array(candidate, dtype=bool),
            consumption_policy=np.array(policy, dtype=bool),
        )

    @cached_property
    def partitionable_parents(self) -> Mapping[int, int]:
        """Each claimed dynamic slot's row -> the row of the partitionable slot it was carved from
        (``ChildName``, as HTCondor's ``pslotMultiMatch`` looks a p-slot's dynamic slots up);
        dynamic slots no p-slot of the table names are left out. Worked out once per table."""
        rows = {slot.name: row for row, slot in enumerate(self.slots)}
        parents: dict[int, int] = {}
        for row, slot in enumerate(self.slots):
            if slot.kind is not SlotKind.PARTITIONABLE:
                continue
            for name in child_names(slot.ad):
                child = rows.get(name)
                if child is not None and self.slots[child].kind is SlotKind.DYNAMIC and self.slots[child].claim:
                    parents[child] = row
        return MappingProxyType(parents)

    def asset_column(self, asset: str) -> int:
        return self._column_of[asset.lower()]

    def asset_columns(self, assets: tuple[str, ...]) -> tuple[int, ...]:
        """The columns of a slot's ``assets``, worked out once per list of assets (a pool's slots
        share a handful of them)."""
        columns = self._columns_of_assets.get(assets)
        if columns is None:
            columns = self._columns_of_assets[assets] = tuple(self._column_of[a.lower()] for a in assets)
        return columns

    @cached_property
    def _column_of(self) -> dict[str, int]:
        """Each asset's column, by lower-cased name (ClassAd attribute names are case-insensitive)."""
        return {asset.lower(): column for column, asset in enumerate(self.assets)}

    @cached_property
    def _columns_of_assets(self) -> dict[tuple[str, ...], tuple[int, ...]]:
        return {}

    def __len__(self) -> int:
        return len(self.slots)


@dataclass(frozen=True)
class _Placement:
    columns: tuple[int, ...]    # each asset's column
    kept: tuple[bool, ...]      # False for an asset a later one of the same name overrides


class _AssetLayouts:
    """The table's asset columns (the union of the slots' assets, case-insensitively, spelled and
    ordered as first seen) and where each distinct asset list of a slot goes in them."""

    def __init__(self, asset_lists: Iterable[tuple[str, ...]]) -> None:
        distinct = tuple(dict.fromkeys(asset_lists))
        columns: dict[str, str] = {}
        for assets in distinct:         # distinct lists in first-seen order: so are their assets
            for asset in assets:
                columns.setdefault(asset.lower(), asset)
        self.assets = tuple(columns.values())
        index = {lower: i for i, lower in enumerate(columns)}
        self._placements: dict[tuple[str, ...], _Placement] = {}
        for assets in distinct:
            placed = tuple(index[asset.lower()] for asset in assets)
            kept = tuple(column not in placed[i + 1:] for i, column in enumerate(placed))
            self._placements[assets] = _Placement(placed, kept)

    def placement(self, assets: tuple[str, ...]) -> _Placement:
        return self._placements[assets]


def _per_asset(values: Iterable[tuple], dtype: type, cells: int) -> np.ndarray:
    """Per-asset values of each slot (parallel to its assets), one slot after another."""
    flat: np.ndarray = np.fromiter(chain.from_iterable(values), dtype)
    if len(flat) != cells:
        raise ValueError("some slot's amounts are not parallel to its assets")
    return flat


_TABLE_FIELDS = attrgetter("assets", "amounts", "integer_amounts", "is_candidate", "has_consumption_policy")


@dataclass(frozen=True)
class Snapshot:
    table: SlotTable
    jobs: tuple[Job, ...]                       # idle jobs only
    autoclusters: tuple[Autocluster, ...]
    significant_attributes: tuple[str, ...]
    problems: tuple[LeftOut, ...]
    non_idle_jobs: int
    # whether an idle job could take each table row's slot from its claim (may_be_preempted), as
    # worked out once per slot ad under the settings object ``preemptable_under``
    preemptable: np.ndarray | None = None
    preemptable_under: object = None
