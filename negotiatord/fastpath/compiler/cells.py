"""Columnar slot attributes: every attribute a compiled expression reads, as a column of cell ids.

A *cell* is what one ad holds for one attribute: nothing (ABSENT), a scalar literal, an asset of
the slot (its value changes during the cycle, so it is never folded), an expression (by its text),
or something the kernels cannot carry (a list, a nested ad, a time value: OTHER). Cells are
interned, so a column is an int32 array and a pool of thousands of slots built from a handful of
images holds a handful of distinct cells per attribute. The cell's *shape* (ABSENT, LITERAL,
ASSET c, EXPR e, OTHER) is what the compiler specialises on; literal values stay data.

Columns are filled lazily, per attribute and per row, with one ``ClassAd.get`` per cell (the
cheapest classad2 read: literals come back as Python values, expressions as ExprTree). What an
ad holds is described once per ad record, in an :class:`~.descriptions.AdDescriptions` the caller
may keep across cycles: a daemon's snapshot keeps the Slot of an unchanged ad, so the next cycle's
evaluator interns those descriptions without reading the ad again.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

import classad2
import numpy as np

from negotiatord.classad.cycle_time import mentions_current_time, references_current_time
from negotiatord.classad.parser import Node, ParseError, parse
from negotiatord.classad.values import BOOL, INT, REAL, STR, NotScalar, Value, from_python
from negotiatord.fastpath.compiler.descriptions import AdDescriptions, Description
from negotiatord.fastpath.strings import StringTable

ABSENT, LITERAL, ASSET, EXPR, OTHER = "absent", "literal", "asset", "expr", "other"
CONSUMPTION_PREFIX = "__consumption_"   # pseudo-attributes: a slot's expressions kept beside its ad
SLOT_WEIGHT = "__slotweight"
# The cycle's clock, which ``time()`` reads (the reference freezes it for the cycle:
# classad/cycle_time.py), as a column every slot holds alike. Its value is data the kernels read,
# so what is compiled does not depend on it and is kept from one cycle to the next. No expression
# can name it: it is no attribute name.
CYCLE_CLOCK = "time()"
# The columns whose cells follow the cycle's clock: ``time()``, and ``CurrentTime`` where the
# reference freezes it (current_time_description).
CLOCK_COLUMNS = frozenset({CYCLE_CLOCK, "currenttime"})
_MISSING = object()


@dataclass(frozen=True)
class Cell:
    kind: str
    value: Value | None = None       # LITERAL
    column: int = -1                 # ASSET: column in the slot table
    text: str = ""                   # EXPR: canonical text
    ast: Node | None = None          # EXPR: parsed text (None: the parser refused it)


class CellTable:
    """Interned cells and their shapes; literal values also as kernel triples (tag, ival, fval)."""

    def __init__(self, strings: StringTable) -> None:
        self.strings = strings
        self.cells: list[Cell] = []
        self._ids: dict[tuple, int] = {}
        self._shape_ids: dict[tuple, int] = {}
        self.shape_keys: list[tuple] = []
        self._shape: list[int] = []
        self._t: list[int] = []
        self._i: list[int] = []
        self._f: list[float] = []
        self._arrays: tuple[np.ndarray, ...] | None = None
        self.memo: dict[Description, int] = {}      # see intern
        self.absent = self._intern(("absent",), Cell(ABSENT))

    def literal(self, value: Value) -> int:
        tag, payload = value
        key = ("lit", tag, repr(payload) if tag == REAL else payload)
        return self._intern(key, Cell(LITERAL, value=value))

    def asset(self, column: int) -> int:
        found = self._ids.get(("asset", column))
        return found if found is not None else self._intern(("asset", column), Cell(ASSET, column=column))

    def expression(self, text: str) -> int:
        key = ("expr", text)
        found = self._ids.get(key)
        if found is not None:
            return found
        try:
            ast = parse(text)
        except ParseError:
            ast = None
        return self._intern(key, Cell(EXPR, text=text, ast=ast))

    def other(self, description: str) -> int:
        return self._intern(("other", description), Cell(OTHER, text=description))

    def intern(self, description: Description) -> int:
        """The cell of what :func:`describe` found; a pool's slots repeat a handful of descriptions
        per attribute, so each is resolved once. Real literals are left out of that memo: 0.0 and
        -0.0 are equal keys but distinct cells (and NaN is no key at all)."""
        found = self.memo.get(description)
        if found is None:
            found = self._resolve(description)
            if not (description[0] == LITERAL and description[1][0] == REAL):
                self.memo[description] = found
        return found

    def _resolve(self, description: Description) -> int:
        kind, detail = description
        if kind == ABSENT:
            return self.absent
        if kind == EXPR:
            return self.expression(detail)
        if kind == OTHER:
            return self.other(detail)
        return self.literal(detail)

    def shape(self, cell: int) -> int:
        return self._shape[cell]

    def shape_array(self) -> np.ndarray:
        return self.arrays()[3]

    def arrays(self) -> tuple[np.ndarray, ...]:
        """(tag, ival, fval, shape) per cell id, for vectorised column fills."""
        if self._arrays is None or len(self._arrays[0]) != len(self.cells):
            self._arrays = (np.array(self._t, dtype=np.int8), np.array(self._i, dtype=np.int64),
                            np.array(self._f, dtype=np.float64), np.array(self._shape, dtype=np.int64))
        return self._arrays

    def _intern(self, key: tuple, cell: Cell) -> int:
        found = self._ids.get(key)
        if found is not None:
            return found
        new = len(self.cells)
        self._ids[key] = new
        self.cells.append(cell)
        shape_key = {ABSENT: ("absent",), LITERAL: ("literal",), ASSET: ("asset", cell.column),
                     EXPR: ("expr", new), OTHER: ("other",)}[cell.kind]
        self._shape.append(self._shape_ids.setdefault(shape_key, len(self._shape_ids)))
        if len(self.shape_keys) < len(self._shape_ids):
            self.shape_keys.append(shape_key)
        tag, ival, fval = 0, 0, 0.0
        if cell.kind == LITERAL:
            assert cell.value is not None       # literal cells are made with their value
            tag, payload = cell.value
            if tag in (BOOL, INT):
                ival = int(payload)
            elif tag == REAL:
                fval = payload
            elif tag == STR:
                ival = self.strings.intern(payload)
        self._t.append(tag)
        self._i.append(ival)
        self._f.append(fval)
        return new


_PLAIN_TAGS = {bool: BOOL, int: INT, str: STR}    # exact types: classad2.Value is an int subclass


def describe(ad: classad2.ClassAd, name: str, value: object) -> Description:
    """What ``ad`` holds for ``name``, given ``value = ad.get(name)``, apart from any cell table
    (so a slot can keep it across cycles). The ad's ExprTree is looked up when a float needs
    checking: classad2 returns relative times as floats too."""
    tag = _PLAIN_TAGS.get(type(value))
    if tag is not None:               # most reads: a bool, integer or string literal
        return (LITERAL, (tag, value))
    if value is _MISSING:
        return (ABSENT, None)
    if isinstance(value, classad2.ExprTree):
        return (EXPR, str(value))
    if isinstance(value, float):
        text = str(ad.lookup(name))
        if text.lstrip("-")[:1].isalpha() and not text.startswith("real("):
            return (OTHER, text)
    if isinstance(value, (list, classad2.ClassAd, datetime.datetime)):
        return (OTHER, type(value).__name__)
    try:
        return (LITERAL, from_python(value))
    except NotScalar as error:
        return (OTHER, str(error))


_FROZEN_CLOCK: Description = ("clock", None)   # CurrentTime is the cycle's clock


def current_time_description(ad: classad2.ClassAd, described: Mapping[str, Description] | None = None) -> Description:
    """What ``ad`` holds for ``CurrentTime``: its own attribute; else the cycle's clock where the
    reference freezes it (an ad that reads ``CurrentTime`` without defining it is given
    ``CurrentTime = now``: classad/cycle_time.py, frozen_ad); else nothing. It depends on the ad
    alone, so it is kept with the ad's other descriptions: finding it prints the whole ad, unless
    an expression of the ad already ``described`` names it (a slot's START that reads the clock
    is described before the clock is asked for)."""
    value = ad.get("currenttime", _MISSING)
    if value is not _MISSING:
        return describe(ad, "currenttime", value)
    if described is not None and any(
            description[0] == EXPR and not (name.startswith(CONSUMPTION_PREFIX) or name == SLOT_WEIGHT)
            and references_current_time(description[1]) for name, description in described.items()):
        return _FROZEN_CLOCK
    return _FROZEN_CLOCK if mentions_current_time(ad.printOld()) else (ABSENT, None)


def current_time_cell(description: Description, cells: CellTable, now: int) -> int:
    """The cell of a :func:`current_time_description` at the cycle's clock ``now``."""
    return cells.literal((INT, now)) if description == _FROZEN_CLOCK else cells.intern(description)


class SlotAd(Protocol):
    """What the columns read of a slot (a :class:`~negotiatord.pool.slots.Slot`): its ad, and the
    assets and expressions kept beside it."""

    @property
    def ad(self) -> classad2.ClassAd: ...

    @property
    def assets(self) -> tuple[str, ...]: ...

    @property
    def integer_amounts(self) -> tuple[bool, ...]: ...

    @property
    def consumption(self) -> Mapping[str, classad2.ExprTree] | None: ...

    @property
    def slot_weight(self) -> classad2.ExprTree | None: ...


@dataclass(frozen=True)
class _ReleasedSlot:
    """What a released row reads from: an ad that defines nothing, and nothing kept beside it."""

    ad: classad2.ClassAd = field(default_factory=classad2.ClassAd)
    assets: tuple[str, ...] = ()
    integer_amounts: tuple[bool, ...] = ()
    consumption: Mapping[str, classad2.ExprTree] | None = None
    slot_weight: classad2.ExprTree = field(default_factory=lambda: classad2.ExprTree("undefined"))


_RELEASED = _ReleasedSlot()


class SlotColumns:
    """Cell-id columns over slots (a table's, or records a caller keeps across cycles: see
    :meth:`extend` and :meth:`move_to`), filled on demand."""

    def __init__(self, slots: Sequence[SlotAd], asset_columns: dict[str, int], cells: CellTable, now: int,
                 descriptions: AdDescriptions) -> None:
        self._slots = list(slots)
        self._asset_columns = asset_columns          # lower-cased asset name -> table column
        self._cells = cells
        self._now = now
        self._descriptions = descriptions
        self._described: list[dict[str, Description] | None] = [None] * len(slots)   # by row, as first asked
        self._columns: dict[str, np.ndarray] = {}
        # a slot's assets -> each one's lower-cased name -> its position among them
        self._listed: dict[tuple[str, ...], dict[str, int]] = {}

    def __len__(self) -> int:
        return len(self._slots)

    def extend(self, slots: Sequence[SlotAd]) -> None:
        """``slots`` join as the last rows."""
        self._slots.extend(slots)
        self._described.extend([None] * len(slots))

    def release(self, rows: list[int]) -> list[SlotAd]:
        """Let go of the slots of ``rows``, which no table holds any more (a kept space's records
        of slots gone: their ads are most of their memory); returns them. What was read of them
        stands; an attribute not read before reads as absent, as of a slot whose ad defines
        nothing, until :meth:`restore` puts a slot back."""
        released = [self._slots[row] for row in rows]
        for row in rows:
            self._slots[row] = _RELEASED
        return released

    def restore(self, row: int, slot: SlotAd) -> None:
        """Put back the slot :meth:`release` let go at ``row``, before anything was read there."""
        self._slots[row] = slot

    def move_to(self, now: int, descriptions: AdDescriptions) -> None:
        """Read at a later cycle's clock ``now``, describing slots not yet read in
        ``descriptions`` (that cycle's)."""
        self._descriptions = descriptions
        if now != self._now:
            self._now = now
            for name in CLOCK_COLUMNS:
                self._columns.pop(name, None)

    def column(self, name: str, rows: np.ndarray) -> np.ndarray:
        """Cell ids of attribute ``name`` (lower case) for rows ``rows``."""
        column = self._columns.get(name)
        if column is None or len(column) < len(self._slots):      # room for more: kept columns grow each cycle
            size = len(self._slots) if column is None else len(self._slots) + len(self._slots) // 8 + 64
            column = self._columns[name] = grown(column, size, -1)
        values = column[rows]
        missing = rows[values < 0]
        if len(missing):
            missing = distinct_rows(missing, len(self._slots))
            column[missing] = self._read_rows(name, missing)
            values = column[rows]
        return values

    def shapes(self, name: str, rows: np.ndarray) -> np.ndarray:
        """The shapes of attribute ``name`` (lower case) for rows ``rows``; the column is
        read first, since reading it interns new cells (and so new shapes)."""
        column = self.column(name, rows)
        return self._cells.shape_array()[column]

    def _read_rows(self, name: str, rows: np.ndarray) -> list[int]:
        if name in self._asset_columns:
            return self._read_asset(name, rows)
        if name == "currenttime":
            return [self._current_time(row) for row in rows.tolist()]
        if name == CYCLE_CLOCK:
            return [self._cells.literal((INT, self._now))] * len(rows)
        if name.startswith(CONSUMPTION_PREFIX) or name == SLOT_WEIGHT:
            intern, description = self._cells.intern, self._description
            return [intern(description(row, name)) for row in rows.tolist()]
        return self._read_ad_rows(name, rows)

    def _read_ad_rows(self, name: str, rows: np.ndarray) -> list[int]:
        """An attribute of the slots' ads: :meth:`_description`'s work for each row, in one
        loop: a pool-wide column is read once a cycle for each attribute a root reaches, and on
        a pool of new slots that reading is a third of the cycle. So :func:`describe`'s common
        case (a bool, integer or string literal) and the memo of :meth:`CellTable.intern` are
        spelled out here, a function call each fewer for every slot and attribute."""
        slots, intern, described_rows = self._slots, self._cells.intern, self._described
        descriptions, memo, plain_tags = self._descriptions, self._cells.memo, _PLAIN_TAGS
        found: list[int] = []
        for row in rows.tolist():
            described = described_rows[row]
            if described is None:
                described = described_rows[row] = descriptions.of(slots[row])
            description = described.get(name)
            if description is None:
                ad = slots[row].ad
                try:
                    value = ad[name]
                except KeyError:
                    value = _MISSING
                tag = plain_tags.get(type(value))
                description = described[name] = (
                    (LITERAL, (tag, value)) if tag is not None else describe(ad, name, value))
            cell = memo.get(description)
            found.append(intern(description) if cell is None else cell)
        return found

    def _read(self, row: int, name: str) -> int:
        """An attribute of the slot's ad or a pseudo-attribute kept beside it (Consumption<asset>,
        SlotWeight)."""
        return self._cells.intern(self._description(row, name))

    def _description(self, row: int, name: str) -> Description:
        """What the slot of ``row`` holds for ``name``, described once per ad: a daemon's
        unchanged slots outlive cycles, and their descriptions with them."""
        described = self._described[row]
        if described is None:
            described = self._described[row] = self._descriptions.of(self._slots[row])
        description = described.get(name)
        if description is None:
            slot = self._slots[row]
            description = described[name] = (current_time_description(slot.ad, described) if name == "currenttime"
                                              else self._describe(slot, name))
        return description

    def _current_time(self, row: int) -> int:
        """CurrentTime: the slot ad's own, or the cycle's clock where the reference freezes it."""
        return current_time_cell(self._description(row, "currenttime"), self._cells, self._now)

    @staticmethod
    def _describe(slot: SlotAd, name: str) -> Description:
        if name.startswith(CONSUMPTION_PREFIX):
            asset = name[len(CONSUMPTION_PREFIX):]
            expr = next((e for a, e in (slot.consumption or {}).items() if a.lower() == asset), None)
            return (ABSENT, None) if expr is None else (EXPR, str(expr))
        if name == SLOT_WEIGHT:
            return (EXPR, str(slot.slot_weight))
        return describe(slot.ad, name, slot.ad.get(name, _MISSING))

    def _read_asset(self, name: str, rows: np.ndarray) -> list[int]:
        """An asset column (SlotWeight reads one over the whole pool): the ASSET cell where the
        slot lists the asset and holds a number literal, an ordinary cell where it does not list it.
        A listed asset the snapshot found to be an integer literal (``Slot.integer_amounts``; a
        slot whose listed asset is not a number is left out of the table) is not read again."""
        cells, slots, listed = self._cells, self._slots, self._listed
        asset = cells.asset(self._asset_columns[name])
        found: list[int] = []
        for row in rows.tolist():
            slot = slots[row]
            index = listed.get(slot.assets)
            if index is None:
                index = listed[slot.assets] = {a.lower(): i for i, a in enumerate(slot.assets)}
            position = index.get(name)
            if position is None:
                found.append(self._current_time(row) if name == "currenttime" else self._read(row, name))
            elif slot.integer_amounts[position] or _is_number(self._description(row, name)):
                found.append(asset)
            else:
                found.append(cells.other(f"asset {name} is not a numeric literal"))
        return found


def distinct_rows(rows: np.ndarray, size: int) -> np.ndarray:
    """The distinct values of ``rows`` (row numbers below ``size``) in ascending order, as
    ``np.unique`` gives them, through a mask: several times faster than its hashing on the few
    thousand rows a cycle's calls pass."""
    mask = np.zeros(size, dtype=bool)
    mask[rows] = True
    return np.flatnonzero(mask)


def grown(array: np.ndarray | None, rows: int, fill: object = 0, dtype: type = np.int64) -> np.ndarray:
    """``array`` (None: an empty one of ``dtype``) with ``rows`` rows along its first axis, the
    new ones ``fill``."""
    if array is None:
        return np.full(rows, fill, dtype=dtype)
    bigger = np.full((rows, *array.shape[1:]), fill, dtype=array.dtype)
    bigger[: len(array)] = array
    return bigger


def _is_number(description: Description) -> bool:
    kind, value = description
    return kind == LITERAL and value[0] in (INT, REAL)


class JobCells:
    """The cells of one job ad (an autocluster's representative), read on demand; what the ad
    holds is described once per ad in ``described`` (AdDescriptions.of its MatchmakingAd, which
    a daemon keeps for an unchanged ad)."""

    def __init__(self, ad: classad2.ClassAd, cells: CellTable, now: int,
                 described: dict[str, Description] | None = None) -> None:
        self._ad = ad
        self._cells = cells
        self._now = now
        self._read: dict[str, int] = {}
        self._described = {} if described is None else described

    def cell(self, name: str) -> int:
        found = self._read.get(name)
        if found is None:
            found = self._read[name] = self._cell(name)
        return found

    def move_to(self, now: int) -> bool:
        """Read at the cycle's clock ``now`` from here on (a later cycle's); True when the cell
        of ``CurrentTime`` read before moved with it (the ad does not define it)."""
        if now == self._now:
            return False
        self._now = now
        before = self._read.get("currenttime")
        if before is None:
            return False
        after = self._read["currenttime"] = self._cell("currenttime")
        return after != before

    def _cell(self, name: str) -> int:
        description = self._described.get(name)
        if description is None:
            description = self._described[name] = (
                current_time_description(self._ad) if name == "currenttime"
                else describe(self._ad, name, self._ad.get(name, _MISSING)))
        if name == "currenttime":
            return current_time_cell(description, self._cells, self._now)
        return self._cells.intern(description)

    def shape(self, name: str) -> int:
        return self._cells.shape(self.cell(name))
