"""What an administrator changes in the accountant (``condor_userprio``'s writes), and how those
changes survive a cycle that was already running.

Each write follows the ``Accountant`` method ``matchmaker.cpp``'s handler calls
(``src/condor_negotiator.V6/Accountant.cpp``): ``SetPriorityFactor``, ``SetPriority``,
``SetAccumUsage``, ``SetBeginTime``, ``SetLastTime``, ``SetCeiling``, ``SetFloor``,
``ResetAccumulatedUsage``, ``ResetAllUsage``, ``DeleteRecord``. As HTCondor's ``SetAttribute``
makes the customer's ad, a write to a customer never seen makes its record (at the best priority).

A cycle loads the accountant, negotiates, then commits what it computed. HTCondor's negotiator
serves no command meanwhile; negotiatord does, so every write is also logged in ``admin_edits``
with a sequence number. A cycle notes the sequence when it loads (:meth:`edit_mark`) and its commit
keeps what was written after that: a priority or last usage time set meanwhile stays, and a
customer deleted meanwhile stays deleted (its next cycle makes it afresh if it still has work, as
HTCondor's next update does). The factor, the ceiling and the floor are the administrator's alone
(a cycle never writes them); accumulated usage and the begin time are kept as the store's upsert
keeps them.
"""

from __future__ import annotations

import json
import math
import sqlite3
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager

from negotiatord.accountant.records import MIN_PRIORITY, check_factor, check_finite, check_non_negative

# A customer an administrator names before any cycle saw it gets a fresh record (as HTCondor's
# SetAttribute creates the ad), at the best priority.
INSERT_FRESH = """
INSERT INTO customers (name, real_priority, weighted_usage, accumulated_usage)
VALUES (?, ?, 0.0, 0.0) ON CONFLICT (name) DO NOTHING
"""
DELETED = "deleted"


class UnknownCustomer(KeyError):
    """A customer the accountant has no record of."""

    def __str__(self) -> str:
        return str(self.args[0])


class AdministratorEdits:
    """The writes of :class:`~negotiatord.accountant.store.AccountantStore` that an administrator
    makes; the store gives the database and its transactions."""

    _db: sqlite3.Connection
    _transaction: Callable[[str], AbstractContextManager[None]]
    _reading: Callable[[str], AbstractContextManager[None]]

    def edit_mark(self) -> int:
        """The sequence of the last edit: a cycle loading now keeps later edits at its commit."""
        with self._reading("reading the administrator's last edit"):
            row = self._db.execute("SELECT seq FROM sqlite_sequence WHERE name = 'admin_edits'").fetchone()
        return int(row[0]) if row else 0

    def _log(self, name: str, field: str, value: object, now: float | None = None) -> None:
        self._db.execute("INSERT INTO admin_edits (customer, field, value, time) VALUES (?, ?, ?, ?)",
                         (name, field, json.dumps(value), time.time() if now is None else now))

    def _set(self, name: str, field: str, value: float | None) -> None:
        """Set one column of ``name``'s record, making the record if need be."""
        with self._transaction(f"setting the {field.replace('_', ' ')} of {name!r}"):
            self._db.execute(INSERT_FRESH, (name, MIN_PRIORITY))
            self._db.execute(f"UPDATE customers SET {field} = ? WHERE name = ?", (value, name))
            self._log(name, field, value)

    def set_factor(self, name: str, factor: object) -> None:
        """``-setfactor``: ``name``'s explicit priority factor (>= 1; anything else, a request's
        value as it came included, is refused with a ValueError)."""
        self._set(name, "prio_factor", check_factor(name, factor))

    def set_priority(self, name: str, priority: object) -> None:
        """``-setprio``: the real priority. One below the minimum is read as the minimum, as
        ``Accountant::GetPriority`` reads it."""
        value = check_non_negative(f"priority of {name!r}", _number(priority))
        self._set(name, "real_priority", max(MIN_PRIORITY, value))

    def set_accumulated_usage(self, name: str, usage: object) -> None:
        """``-setaccum``: accumulated usage, in weighted seconds (>= 0, as condor_userprio requires)."""
        self._set(name, "accumulated_usage", check_non_negative(f"accumulated usage of {name!r}", _number(usage)))

    def set_begin_time(self, name: str, when: object) -> None:
        """``-setbegin``: when usage began to be recorded (epoch seconds >= 0)."""
        self._set(name, "begin_usage_time", check_non_negative(f"begin usage time of {name!r}", _number(when)))

    def set_last_time(self, name: str, when: object) -> None:
        """``-setlast``: when the customer last had resources (epoch seconds >= 0)."""
        self._set(name, "last_usage_time", check_non_negative(f"last usage time of {name!r}", _number(when)))

    def set_ceiling(self, name: str, ceiling: object) -> None:
        """``-setceiling``: the most weighted resources the submitter may hold; below 0 none
        (``Accountant::GetCeiling`` reads any negative value as -1, unlimited)."""
        value = _number(ceiling)
        self._set(name, "ceiling", None if value < 0 else value)

    def set_floor(self, name: str, floor: object) -> None:
        """``-setfloor``: the weighted resources the submitter is first brought up to; 0 or below
        none (``Accountant::GetFloor``)."""
        value = _number(floor)
        self._set(name, "floor", None if value <= 0 else value)

    def reset_usage(self, name: str, now: float | None = None) -> None:
        """``-resetusage``: zero ``name``'s accumulated usage, from ``now`` on.

        As Accountant::ResetAccumulatedUsage, the real priority is left alone. A name the
        accountant has no record of is an :class:`UnknownCustomer`, and no record is made for it
        (a mistyped name would otherwise become a customer of its own).
        """
        when = check_finite(f"usage reset time of {name!r}", time.time() if now is None else now)
        with self._transaction(f"resetting the usage of {name!r}"):
            updated = self._db.execute(
                "UPDATE customers SET accumulated_usage = 0.0, begin_usage_time = ? WHERE name = ?",
                (when, name)).rowcount
            if updated:
                self._log(name, "accumulated_usage", 0.0, when)
        if not updated:
            raise UnknownCustomer(f"the accountant has no customer {name!r}")

    def reset_all_usage(self, now: float | None = None) -> list[str]:
        """``-resetall`` (``Accountant::ResetAllUsage``): every customer's; their names."""
        when = check_finite("usage reset time", time.time() if now is None else now)
        with self._transaction("resetting every customer's usage"):
            names = [row[0] for row in self._db.execute("SELECT name FROM customers ORDER BY name")]
            self._db.execute("UPDATE customers SET accumulated_usage = 0.0, begin_usage_time = ?", (when,))
            for name in names:
                self._log(name, "accumulated_usage", 0.0, when)
        return names

    def delete_customer(self, name: str) -> None:
        """``-delete`` (``Accountant::DeleteRecord``): forget ``name``'s record. A name the
        accountant has no record of is an :class:`UnknownCustomer`."""
        with self._transaction(f"deleting the record of {name!r}"):
            deleted = self._db.execute("DELETE FROM customers WHERE name = ?", (name,)).rowcount
            if deleted:
                self._log(name, DELETED, None)
        if not deleted:
            raise UnknownCustomer(f"the accountant has no customer {name!r}")

    def _edited_since(self, mark: int) -> Iterator[tuple[str, str]]:
        """(customer, field) edited after ``mark``."""
        yield from self._db.execute("SELECT DISTINCT customer, field FROM admin_edits WHERE seq > ?", (mark,))


def _number(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ValueError(f"not a finite number: {value!r}")
    return float(value)
