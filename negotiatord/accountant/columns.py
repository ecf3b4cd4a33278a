"""Every customer's record as columns, so that decaying them all after a cycle is a few numpy
operations.

A replay advances the accountant after every cycle, and a long trace gathers hundreds of
customers, most of them idle for months: advancing them one record object at a time took a
quarter of a whole KTH-SP2 replay. Here each figure of the records is a float64 column in
customer-name order, an unset time being NaN (no record holds a NaN: its checks refuse one). A
:class:`~negotiatord.accountant.records.CustomerRecord` is made only for a customer someone asks
about, the cycle for its submitters or the store for all of them.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

import numpy as np

from negotiatord.accountant.records import MIN_PRIORITY, CustomerRecord

_UNSET = np.nan


class CustomerColumns(Mapping[str, CustomerRecord]):
    """Customer records by name, held as columns; read-only, as the states holding it are."""

    __slots__ = ("_names", "_index", "_real", "_usage", "_accumulated", "_begins", "_last_usage", "_last_update",
                 "_administered", "_made")

    def __init__(self, names: list[str], columns: tuple[np.ndarray, ...],
                 administered: dict[str, tuple[float | None, float | None, float | None]],
                 index: dict[str, int] | None = None) -> None:
        """``names`` sorted; ``columns`` real priority, weighted usage, accumulated usage, and the
        begin-usage, last-usage and last-update times, in ``names``' order; ``administered`` the
        factor, ceiling and floor of the customers an administrator set any of; ``index`` each
        name's row, if known (the columns advanced from these share it)."""
        self._names = names
        self._index = {name: row for row, name in enumerate(names)} if index is None else index
        (self._real, self._usage, self._accumulated, self._begins, self._last_usage,
         self._last_update) = columns
        self._administered = administered
        self._made: dict[str, CustomerRecord] = {}

    @classmethod
    def of(cls, records: Mapping[str, CustomerRecord]) -> CustomerColumns:
        """``records`` (by name) as columns."""
        if isinstance(records, CustomerColumns):
            return records
        names = sorted(records)
        ordered = [records[name] for name in names]
        columns = tuple(np.array([_figure(getattr(record, field)) for record in ordered], dtype=np.float64)
                        for field in ("real_priority", "weighted_usage", "accumulated_usage", "begin_usage_time",
                                      "last_usage_time", "last_update_time"))
        administered = {record.name: (record.prio_factor, record.ceiling, record.floor) for record in ordered
                        if (record.prio_factor, record.ceiling, record.floor) != (None, None, None)}
        made = cls(names, columns, administered)
        made._made.update(zip(names, ordered))
        return made

    def __getitem__(self, name: str) -> CustomerRecord:
        made = self._made.get(name)
        if made is None:
            made = self._made[name] = self._record(self._index[name])
        return made

    def __contains__(self, name: object) -> bool:
        return name in self._index

    def __iter__(self) -> Iterator[str]:
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)

    def weighted_usages(self) -> dict[str, float]:
        """Each customer's weighted usage in force, by name, without making its record."""
        return dict(zip(self._names, self._usage.tolist()))

    def advanced(self, now: float, usage: Mapping[str, float],
                 halflife: float) -> tuple[CustomerColumns, dict[str, float]]:
        """Every record decayed to ``now`` with ``usage`` in force from then (a customer not in
        it uses nothing), and the weighted seconds charged to each customer charged any.

        Accountant::UpdatePriorities runs UpdateOnePriority over every customer; here it runs over
        the columns, operation for operation as one record's arithmetic would, so the figures are
        the very floats a record-by-record loop gives:
        - no time passed since a record's last update (or the clock went backwards): nothing is
          decayed or charged, only the clock and the usage in force are set;
        - else the priority decays by ``0.5 ** (elapsed / halflife)`` towards the usage held over
          the interval, never below MIN_PRIORITY, and that usage times the interval is charged;
        - BeginUsageTime is set once usage has accumulated, LastUsageTime when usage was held.

        A figure that overflows is reported by the record constructor's checks, naming the
        customer, as :class:`CustomerRecord` reports any other bad figure."""
        columns = self._with_customers(usage)
        names, held = columns._names, columns._usage
        with np.errstate(over="ignore", invalid="ignore"):     # an overflow is reported below
            elapsed = now - columns._last_update     # NaN for a record never updated: never > 0
            moving = elapsed > 0
            everyone = bool(moving.all())             # as after every cycle but the first

            def moved(new: np.ndarray | float, old: np.ndarray | float) -> np.ndarray:
                return np.asarray(new) if everyone else np.where(moving, new, old)

            aging = moved(_agings(elapsed, moving, halflife), 1.0)
            decayed = columns._real * aging + held * (1.0 - aging)
            real = moved(np.where(decayed > MIN_PRIORITY, decayed, MIN_PRIORITY), columns._real)    # max()
            charged = moved(held * elapsed, 0.0)
            accumulated = moved(columns._accumulated + charged, columns._accumulated)
            overflowed = not np.isfinite(real.sum() + accumulated.sum())
        begins = np.where(moving & np.isnan(columns._begins) & (accumulated > 0), now, columns._begins)
        last_usage = np.where(moving & (held > 0), now, columns._last_usage)
        in_force = np.zeros(len(names))
        in_force[[columns._index[name] for name in usage]] = list(usage.values())
        advanced = CustomerColumns(names, (real, in_force, accumulated, begins, last_usage, np.full(len(names), now)),
                                   columns._administered, columns._index)
        if overflowed:
            advanced._check_figures()
        rows = np.flatnonzero(charged)
        return advanced, dict(zip([names[row] for row in rows.tolist()], charged[rows].tolist()))

    def _with_customers(self, usage: Mapping[str, float]) -> CustomerColumns:
        """These columns with a fresh record (MIN_PRIORITY, no usage) for each customer of
        ``usage`` not among them."""
        new = [name for name in usage if name not in self._index]
        if not new:
            return self
        names = sorted(self._names + new)
        old = np.array([self._index.get(name, -1) for name in names])
        kept = np.flatnonzero(old >= 0)
        fresh = CustomerRecord.fresh(new[0])
        defaults = (fresh.real_priority, fresh.weighted_usage, fresh.accumulated_usage, _UNSET, _UNSET, _UNSET)
        columns = []
        for column, default in zip((self._real, self._usage, self._accumulated, self._begins, self._last_usage,
                                    self._last_update), defaults):
            merged = np.full(len(names), default)
            merged[kept] = column[old[kept]]
            columns.append(merged)
        return CustomerColumns(names, tuple(columns), self._administered)

    def _figures(self, row: int) -> tuple:
        factor, ceiling, floor = self._administered.get(self._names[row], (None, None, None))
        return (self._names[row], self._real[row].item(), factor, self._usage[row].item(),
                self._accumulated[row].item(), _time(self._begins[row]), _time(self._last_usage[row]),
                _time(self._last_update[row]), ceiling, floor)

    def _record(self, row: int) -> CustomerRecord:
        """The record of ``row``, made without the constructor's checks, which the figures passed
        (the constructor sets each field through ``object.__setattr__``, then checks: ten times the
        cost of the record's arithmetic)."""
        record = object.__new__(CustomerRecord)
        fields = CustomerRecord.__dataclass_fields__
        object.__setattr__(record, "__dict__", dict(zip(fields, self._figures(row))))
        return record

    def _check_figures(self) -> None:
        """Raise the constructor's error for the first record (by name) whose priority or
        accumulated usage is not finite, if any is not: a sum of finite ones may overflow."""
        bad = np.flatnonzero(~(np.isfinite(self._real) & np.isfinite(self._accumulated)))
        if len(bad):
            CustomerRecord(*self._figures(int(bad[0])))


def _agings(elapsed: np.ndarray, moving: np.ndarray, halflife: float) -> np.ndarray | float:
    """The aging factor ``0.5 ** (elapsed / halflife)`` of the rows ``moving``, worked out in
    Python's arithmetic once per distinct interval (customers updated together share theirs)."""
    intervals = elapsed[moving]
    if not len(intervals):
        return 1.0
    first = intervals[0].item()
    if (intervals == first).all():
        return 0.5 ** (first / halflife)
    aging = np.ones(len(elapsed))
    for interval in np.unique(intervals).tolist():
        aging[moving & (elapsed == interval)] = 0.5 ** (interval / halflife)
    return aging


def _figure(value: float | None) -> float:
    return _UNSET if value is None else value


def _time(value: np.floating) -> float | None:
    return None if np.isnan(value) else value.item()
