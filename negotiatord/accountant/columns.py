"""Every customer's record as columns of plain figures, decayed together after a cycle.

A replay advances the accountant after every cycle, and a long trace gathers hundreds of
customers, most of them idle for months. Advancing them one record object at a time (a frozen
dataclass each, made and filed by name) took a quarter of a whole KTH-SP2 replay, and the
arithmetic a small part of that. Here each figure of the records is a list in customer-name
order, advanced in one loop, and a :class:`~negotiatord.accountant.records.CustomerRecord` is
made only for a customer someone asks about: the cycle for its submitters, the store for all.
The figures are Python floats throughout, so they are the very floats a record-by-record
update gives (numpy columns would cost more than the loop for the few customers of most pools).
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping

from negotiatord.accountant.records import MIN_PRIORITY, CustomerRecord

_FIGURES = ("real_priority", "weighted_usage", "accumulated_usage", "begin_usage_time", "last_usage_time",
            "last_update_time")
Administered = tuple[float | None, float | None, float | None]     # factor, ceiling, floor


def _at_rest(priority: float, held: float, accumulated: float, began: float | None) -> bool:
    """Whether an update leaves a customer's figures as they are (but for the clock): no usage
    held, the priority at MIN_PRIORITY (it decays to no lower) and nothing to set. Most of a long
    trace's customers are idle and at rest most of the time. Accumulated usage of -0.0 is not at
    rest: adding the 0.0 charged makes it 0.0."""
    return (held == 0 and priority == MIN_PRIORITY and (began is not None or not accumulated > 0)
            and math.copysign(1.0, accumulated) > 0)


class CustomerColumns(Mapping[str, CustomerRecord]):
    """Customer records by name, held as columns; read-only, as the states holding it are."""

    __slots__ = ("_names", "_index", "_real", "_usage", "_accumulated", "_begins", "_last_usage", "_last_update",
                 "_administered", "_made", "_moving")

    def __init__(self, names: list[str], columns: tuple[list, ...], administered: dict[str, Administered],
                 index: dict[str, int] | None = None, moving: list[int] | None = None) -> None:
        """``names`` sorted; ``columns`` real priority, weighted usage, accumulated usage, and the
        begin-usage, last-usage and last-update times (None: unset), in ``names``' order;
        ``administered`` the factor, ceiling and floor of the customers an administrator set any
        of; ``index`` each name's row, if known (the columns advanced from these share it);
        ``moving`` the rows not at rest (:func:`_at_rest`), ascending, if known."""
        self._names = names
        self._index = {name: row for row, name in enumerate(names)} if index is None else index
        (self._real, self._usage, self._accumulated, self._begins, self._last_usage,
         self._last_update) = columns
        self._administered = administered
        self._made: dict[str, CustomerRecord] = {}
        self._moving = moving

    @classmethod
    def of(cls, records: Mapping[str, CustomerRecord]) -> CustomerColumns:
        """``records`` (by name) as columns."""
        if isinstance(records, CustomerColumns):
            return records
        names = sorted(records)
        ordered = [records[name] for name in names]
        columns = tuple([getattr(record, figure) for record in ordered] for figure in _FIGURES)
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

    def advanced(self, now: float, usage: Mapping[str, float] | None,
                 halflife: float) -> tuple[CustomerColumns, dict[str, float]]:
        """Every record decayed to ``now`` with ``usage`` in force from then (a customer not in
        it uses nothing; None: the usage in force stays), and the weighted seconds charged to
        each customer charged any.

        Accountant::UpdatePriorities runs UpdateOnePriority over every customer, and so does this
        loop, row after row, but for the rows at rest (:func:`_at_rest`), which it would leave as
        they are:
        - no time passed since a record's last update (or the clock went backwards): nothing is
          decayed or charged, only the clock and the usage in force are set;
        - else the priority decays by ``0.5 ** (elapsed / halflife)`` towards the usage held over
          the interval, never below MIN_PRIORITY, and that usage times the interval is charged;
        - BeginUsageTime is set once usage has accumulated, LastUsageTime when usage was held.

        A figure that overflows is reported by the record constructor's checks, naming the
        customer, as :class:`CustomerRecord` reports any other bad figure."""
        columns = self if usage is None else self._with_customers(usage)
        names = columns._names
        real, accumulated, begins, last_usage = (list(columns._real), list(columns._accumulated),
                                                 list(columns._begins), list(columns._last_usage))
        held_now, updated_at = columns._usage, columns._last_update
        charged: dict[str, float] = {}
        agings: dict[float, float] = {}        # by elapsed time: the customers updated together share it
        for row in columns._moving_rows():     # a row at rest comes out as it went in
            updated = updated_at[row]
            elapsed = 0.0 if updated is None else now - updated
            if elapsed > 0:
                aging = agings.get(elapsed)
                if aging is None:
                    aging = agings[elapsed] = 0.5 ** (elapsed / halflife)
                held = held_now[row]
                real[row] = max(MIN_PRIORITY, real[row] * aging + held * (1.0 - aging))
                charge = held * elapsed
                used = accumulated[row] = accumulated[row] + charge
                if charge:
                    charged[names[row]] = charge
                if begins[row] is None and used > 0:
                    begins[row] = now
                if held > 0:
                    last_usage[row] = now
        given: set[int] = set()                # rows given usage: they move at the next update
        if usage is None:
            in_force = held_now                  # the lists are never changed in place: shared
        else:
            in_force = [0.0] * len(names)
            for name, amount in usage.items():
                row = columns._index[name]
                in_force[row] = amount
                if amount != 0:
                    given.add(row)
        moving = sorted({row for row in columns._moving_rows()
                         if not _at_rest(real[row], in_force[row], accumulated[row], begins[row])} | given)
        advanced = CustomerColumns(names, (real, in_force, accumulated, begins, last_usage, [now] * len(names)),
                                   columns._administered, columns._index, moving)
        if not math.isfinite(sum(real) + sum(accumulated)):      # a figure overflowed, or only their sum
            advanced._check_figures()
        return advanced, charged

    def _moving_rows(self) -> list[int]:
        """The rows not at rest, found by a look at every row the first time they are asked."""
        if self._moving is None:
            self._moving = [row for row, figures in enumerate(zip(self._real, self._usage, self._accumulated,
                                                                  self._begins)) if not _at_rest(*figures)]
        return self._moving

    def _with_customers(self, usage: Mapping[str, float]) -> CustomerColumns:
        """These columns with a fresh record (MIN_PRIORITY, no usage) for each customer of
        ``usage`` not among them."""
        new = [name for name in usage if name not in self._index]
        if not new:
            return self
        names = sorted(self._names + new)
        rows = [self._index.get(name) for name in names]
        fresh = CustomerRecord.fresh(new[0])
        columns = tuple([default if row is None else column[row] for row in rows] for column, default in zip(
            (self._real, self._usage, self._accumulated, self._begins, self._last_usage, self._last_update),
            (getattr(fresh, figure) for figure in _FIGURES)))
        return CustomerColumns(names, columns, self._administered)

    def _figures(self, row: int) -> tuple:
        factor, ceiling, floor = self._administered.get(self._names[row], (None, None, None))
        return (self._names[row], self._real[row], factor, self._usage[row], self._accumulated[row],
                self._begins[row], self._last_usage[row], self._last_update[row], ceiling, floor)

    def _record(self, row: int) -> CustomerRecord:
        """The record of ``row``, made without the constructor's checks, which the figures passed
        (the constructor sets each field through ``object.__setattr__``, then checks: ten times the
        cost of the record's arithmetic)."""
        record = object.__new__(CustomerRecord)
        object.__setattr__(record, "__dict__", dict(zip(CustomerRecord.__dataclass_fields__, self._figures(row))))
        return record

    def _check_figures(self) -> None:
        """Raise the constructor's error for the first record (by name) whose priority or
        accumulated usage is not finite, if any is not."""
        for row, (priority, used) in enumerate(zip(self._real, self._accumulated)):
            if not (math.isfinite(priority) and math.isfinite(used)):
                CustomerRecord(*self._figures(row))
