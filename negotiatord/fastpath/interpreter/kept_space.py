""":class:`KeptMatchSpace`: the match space of one scoping mode's compilations, kept from one
cycle to the next by a caller that keeps its compilations (the daemon, a trace replay).

Its columns are over slot records, not over a table's rows: a daemon's snapshot keeps the record
of an unchanged slot ad, and a replay the record of a node nothing started on or left. So a cycle
finds an unchanged slot's cells, static values, slot-only conjuncts and leaves where the last one
left them, and works out only what its new records bring (space.py: a new record takes the
universe row of a slot gone of its class, or joins and each compilation takes it in when next
asked for) and what reads the cycle's clock.

Records of slots gone keep their rows until they outnumber the table's, when the space starts
over: a pool that changes every slot keeps at most twice its table. Their records are let go a
cycle after they left the tables, unless something else holds them then (an ad is most of a
record's memory: 23 KiB for an OSPool slot's): only what was read of them stays, for the universe
rows they stand at until a new record of their class takes each.
"""

from __future__ import annotations

import weakref

import numpy as np

from negotiatord.fastpath.compiler.cells import SlotColumns
from negotiatord.fastpath.compiler.descriptions import AdDescriptions
from negotiatord.fastpath.interpreter.compilations import Compiled
from negotiatord.fastpath.interpreter.space import Context, SlotRows, Space
from negotiatord.pool.snapshot import SlotTable

_SLACK = 64       # records of slots gone kept beyond the table's before the space starts over
_HELD, _LET_GO, _HELD_ELSEWHERE = -1, -2, -3      # a row's record, besides gone since a cycle


class KeptMatchSpace:
    """The match space over the slot records of the cycles of one :class:`Compiled` (it holds
    none: the space's context does, and a Compiled holding the space would make a reference cycle)."""

    def __init__(self, assets: int) -> None:
        self._assets = assets
        self._start()

    def _start(self) -> None:
        self._column_of_record: dict[int, int] = {}       # id() of a record the columns hold -> its row
        self._record_ids: list[int] = []                  # row -> id() of its record
        # row -> the cycle its record left the tables (_HELD while a table holds it, _LET_GO once let
        # go, _HELD_ELSEWHERE once found held by more than the columns)
        self._gone_since = np.zeros(0, dtype=np.int64)
        self._cycle = 0
        self._columns: SlotColumns | None = None
        self._consumption_policy = np.zeros(0, dtype=bool)
        self._has_amount = np.zeros((0, self._assets), dtype=bool)
        self._space: Space | None = None

    @property
    def space(self) -> Space | None:
        """The match space (None before the first cycle)."""
        return self._space

    def __len__(self) -> int:
        """The slot records held."""
        return 0 if self._columns is None else len(self._columns)

    def enter(self, compiled: Compiled, table: SlotTable, now: int,
              descriptions: AdDescriptions) -> tuple[Context, Space]:
        """The context and the match space of a cycle over ``table`` at ``now``, whose slots not
        read before are described in ``descriptions``."""
        column_of = self._column_rows(table)
        new = np.flatnonzero(column_of < 0)
        if len(self) + len(new) > 2 * len(table) + _SLACK:
            self._start()
            column_of, new = np.full(len(table), -1, dtype=np.int64), np.arange(len(table))
        if self._columns is None:
            assets = {asset.lower(): column for column, asset in enumerate(compiled.assets)}
            self._columns = SlotColumns((), assets, compiled.cells, now, descriptions)
        columns = self._columns
        columns.move_to(now, descriptions)
        self._release_gone(columns, column_of)
        slot_rows = self._slot_rows(table, columns, column_of, new)
        context = Context(compiled, columns, now)
        if self._space is None:
            self._space = Space(context, slot_rows.column_of[np.flatnonzero(table.candidate)], slot_rows)
        else:
            self._space.enter(context, slot_rows)
        return context, self._space

    def _column_rows(self, table: SlotTable) -> np.ndarray:
        """Each table row's record among the columns' rows (-1: not held)."""
        known = self._column_of_record
        return np.fromiter((known.get(id(slot), -1) for slot in table.slots), np.int64, len(table))

    def _release_gone(self, columns: SlotColumns, column_of: np.ndarray) -> None:
        """Let go of the records no table has held for a cycle, unless something else holds them.

        The last cycle's table, still held while this one begins (its snapshot, the kept slot
        weights' last question), holds the records that just left; a cycle later, the record of a
        replaced ad is held by the columns alone. Its id leaves the index with it, so a later
        record that reuses the id is a new record. A record still held elsewhere then (a replay's
        node left out of a table may come back, the very record) keeps its row, and is not asked
        about again while it stays out."""
        self._cycle += 1
        held = np.zeros(len(columns), dtype=bool)
        held[column_of[column_of >= 0]] = True
        since = self._gone_since
        since[held] = _HELD
        since[~held & (since == _HELD)] = self._cycle
        due = np.flatnonzero((since >= 0) & (since < self._cycle)).tolist()
        if not due:
            return
        released, references = columns.release(due), []
        while released:     # one at a time: freeing ads lets the daemon's other threads in between
            references.append(weakref.ref(released.pop()))     # the last strong reference goes here
        for row, reference in zip(due, reversed(references)):
            slot = reference()
            if slot is None:
                del self._column_of_record[self._record_ids[row]]
                since[row] = _LET_GO
            else:
                columns.restore(row, slot)
                since[row] = _HELD_ELSEWHERE

    def _slot_rows(self, table: SlotTable, columns: SlotColumns, column_of: np.ndarray, new: np.ndarray) -> SlotRows:
        """The table's rows among the columns', the records of rows ``new`` added."""
        if len(new):
            first = len(columns)
            columns.extend([table.slots[row] for row in new.tolist()])
            column_of[new] = np.arange(first, first + len(new))
            ids = [id(table.slots[row]) for row in new.tolist()]
            self._column_of_record.update(zip(ids, column_of[new].tolist()))
            self._record_ids.extend(ids)
            self._gone_since = np.concatenate([self._gone_since, np.full(len(new), _HELD, dtype=np.int64)])
            self._consumption_policy = np.concatenate([self._consumption_policy, table.consumption_policy[new]])
            self._has_amount = np.concatenate([self._has_amount, ~np.isnan(table.amounts[new])])
        return SlotRows(column_of, self._consumption_policy, self._has_amount)
