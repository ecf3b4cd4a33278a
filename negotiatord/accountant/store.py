"""The accountant's persistent state in SQLite: customer records and a per-cycle charge history.

HTCondor keeps the same information in ``$(SPOOL)/Accountantnew.log`` (a ClassAd transaction log);
here one SQLite transaction per negotiation cycle writes the new records and the cycle's charges
together, so a crash mid-commit leaves the previous cycle's state intact and never half a cycle.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from contextlib import AbstractContextManager
from dataclasses import asdict
from pathlib import Path
from collections.abc import Iterable, Mapping

from negotiatord.accountant.admission import AdmissionUsage
from negotiatord.accountant.edits import DELETED, AdministratorEdits
from negotiatord.accountant.records import CustomerRecord, check_finite, check_non_negative
from negotiatord.accountant.priorities import AccountantState
from negotiatord.accountant.quota_timers import QuotaTimer
from negotiatord.storage import quick_check, reading, transaction

SCHEMA_VERSION = 5

_SCHEMA = """
CREATE TABLE schema_version (version INTEGER NOT NULL);
CREATE TABLE customers (
    name              TEXT PRIMARY KEY,
    real_priority     REAL NOT NULL,
    prio_factor       REAL,
    weighted_usage    REAL NOT NULL,
    accumulated_usage REAL NOT NULL,
    begin_usage_time  REAL,
    last_usage_time   REAL,
    last_update_time  REAL
);
CREATE TABLE cycles (
    cycle_id INTEGER PRIMARY KEY,
    time     REAL NOT NULL
);
CREATE TABLE charges (
    cycle_id INTEGER NOT NULL REFERENCES cycles (cycle_id),
    customer TEXT NOT NULL,
    cost     REAL NOT NULL,
    PRIMARY KEY (cycle_id, customer)
);
"""

# Added in schema version 2: admission fair sharing usage and quota preemption timers.
_SCHEMA_2 = """
CREATE TABLE admission_usage (
    customer TEXT NOT NULL,
    resource TEXT NOT NULL,
    amount   REAL NOT NULL,
    PRIMARY KEY (customer, resource)
);
CREATE TABLE admission_clock (
    customer         TEXT PRIMARY KEY,
    last_update_time REAL
);
CREATE TABLE quota_timers (
    group_name TEXT PRIMARY KEY,
    maximum    TEXT NOT NULL,
    delay      REAL NOT NULL,
    started    REAL NOT NULL
);
"""

# Added in schema version 3: whether a due quota preemption timer was enforced (JSON of the usage it
# left, NULL if not yet), so that it is enforced once.
_SCHEMA_3 = "ALTER TABLE quota_timers ADD COLUMN enforced TEXT"

# Added in schema version 4: the match log's highest sequence number when each cycle was
# committed, so that a match log lost or rolled back is seen at start-up (NULL: not known).
_SCHEMA_4 = "ALTER TABLE cycles ADD COLUMN match_seq INTEGER"

# Added in schema version 5: submitter ceilings and floors (condor_userprio -setceiling, -setfloor),
# and the log of administrator edits (negotiatord.accountant.edits).
_SCHEMA_5 = """
ALTER TABLE customers ADD COLUMN ceiling REAL;
ALTER TABLE customers ADD COLUMN floor REAL;
CREATE TABLE admin_edits (
    seq      INTEGER PRIMARY KEY AUTOINCREMENT,
    customer TEXT NOT NULL,
    field    TEXT NOT NULL,
    value    TEXT,
    time     REAL NOT NULL
)
"""

# What turns a database of the version before each into that version; new tables start empty, a
# new column NULL (a timer stored before was not enforced, a cycle's match sequence not known, no
# customer had a ceiling or floor).
_UPGRADES = {2: _SCHEMA_2, 3: _SCHEMA_3, 4: _SCHEMA_4, 5: _SCHEMA_5}

_COLUMNS = (
    "name, real_priority, prio_factor, weighted_usage, accumulated_usage, "
    "begin_usage_time, last_usage_time, last_update_time, ceiling, floor"
)

# The cycle owns priorities, usage and times; the administrator owns the factor, the ceiling and
# the floor, and may set the others while a cycle runs (negotiatord.accountant.edits). So a cycle
# never writes the administrator's settings, adds what it accrued to the stored accumulated usage,
# keeps a begin time already stored, and keeps a priority or last usage time edited since it loaded
# (:edited_priority, :edited_last).
_UPSERT_CUSTOMER = f"""
INSERT INTO customers ({_COLUMNS})
VALUES (:name, :real_priority, :prio_factor, :weighted_usage, :accumulated_usage,
        :begin_usage_time, :last_usage_time, :last_update_time, :ceiling, :floor)
ON CONFLICT (name) DO UPDATE SET
    real_priority     = CASE WHEN :edited_priority THEN customers.real_priority ELSE excluded.real_priority END,
    weighted_usage    = excluded.weighted_usage,
    accumulated_usage = customers.accumulated_usage + :accrued,
    begin_usage_time  = COALESCE(customers.begin_usage_time, excluded.begin_usage_time),
    last_usage_time   = CASE WHEN :edited_last THEN customers.last_usage_time ELSE excluded.last_usage_time END,
    last_update_time  = excluded.last_update_time
"""


_SELECT_TIMERS = "SELECT group_name, maximum, delay, started, enforced FROM quota_timers ORDER BY group_name"


def _timers(rows: list[tuple[str, str, float, float, str | None]]) -> dict[str, QuotaTimer]:
    return {group: QuotaTimer(group, _maximum(group, maximum), delay, started,
                              None if enforced is None else _maximum(group, enforced))
            for group, maximum, delay, started, enforced in rows}


def _maximum(group: str, text: str) -> dict[str, float]:
    """A stored timer's maximum (JSON), or a ValueError naming the group."""
    try:
        maximum = json.loads(text)
    except ValueError:
        maximum = None
    if not isinstance(maximum, dict):
        raise ValueError(f"quota preemption timer of group {group!r} has an unreadable maximum {text!r}")
    return maximum


class AccountantStoreError(Exception):
    """The accountant database cannot be used; the message names the file."""


class AccountantStore(AdministratorEdits):
    """Customer records and charge history in one SQLite file (WAL mode).

    Cycle ids must increase: a commit whose id is not above the last committed one is refused, so
    a retried commit never charges twice and a stale cycle never overwrites a newer one. Load the
    state afresh for each cycle so administrator edits (:class:`AdministratorEdits`) reach it.
    """

    def __init__(self, path: Path | str) -> None:
        self.path = str(path)
        self._lock = threading.Lock()
        try:
            # isolation_level=None: we issue BEGIN/COMMIT ourselves, one transaction per cycle.
            self._db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        except sqlite3.Error as error:
            raise AccountantStoreError(
                f"{self.path}: cannot open accountant database: {error}"
            ) from error
        try:
            self._prepare_schema()
            self._db.execute("PRAGMA journal_mode = WAL")
            self._db.execute("PRAGMA synchronous = FULL")
            self._db.execute("PRAGMA foreign_keys = ON")
        except sqlite3.DatabaseError as error:
            self._db.close()
            raise AccountantStoreError(
                f"{self.path}: not a usable SQLite accountant database: {error}"
            ) from error
        except AccountantStoreError:
            self._db.close()
            raise

    def _prepare_schema(self) -> None:
        """Create the schema in an empty database; refuse foreign or newer ones."""
        with self._transaction("preparing the schema"):
            tables = {row[0] for row in self._db.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table'"
            )}
            if not tables:
                self._run_script(";".join((_SCHEMA, *_UPGRADES.values())))
                self._db.execute("INSERT INTO schema_version VALUES (?)", (SCHEMA_VERSION,))
                return
            if "schema_version" not in tables:
                raise AccountantStoreError(
                    f"{self.path}: an SQLite database, but not a negotiatord accountant database "
                    f"(tables: {', '.join(sorted(tables))})"
                )
            row = self._db.execute("SELECT MAX(version) FROM schema_version").fetchone()
            version = row[0] if row else None
            if isinstance(version, int) and 1 <= version < SCHEMA_VERSION:
                for step in range(version + 1, SCHEMA_VERSION + 1):
                    self._run_script(_UPGRADES[step])
                self._db.execute("UPDATE schema_version SET version = ?", (SCHEMA_VERSION,))
                version = SCHEMA_VERSION
            if version != SCHEMA_VERSION:
                newer = isinstance(version, int) and version > SCHEMA_VERSION
                raise AccountantStoreError(
                    f"{self.path}: accountant schema version {version!r} "
                    + ("is newer than" if newer else "is not")
                    + f" the version this negotiatord understands ({SCHEMA_VERSION})"
                )

    def _run_script(self, script: str) -> None:
        for statement in script.split(";"):
            if statement.strip():
                self._db.execute(statement)

    def _transaction(self, doing: str) -> AbstractContextManager[None]:
        return transaction(self._db, self._lock, AccountantStoreError, self.path, doing)

    def _reading(self, doing: str) -> AbstractContextManager[None]:
        return reading(self._lock, AccountantStoreError, self.path, doing)

    def load(self) -> AccountantState:
        """Every stored customer record, as a fresh state with nothing accrued."""
        with self._reading("reading the customer records"):
            rows = self._db.execute(f"SELECT {_COLUMNS} FROM customers ORDER BY name").fetchall()
            usage_rows = self._db.execute("SELECT customer, resource, amount FROM admission_usage").fetchall()
            clock_rows = self._db.execute("SELECT customer, last_update_time FROM admission_clock").fetchall()
            timer_rows = self._db.execute(_SELECT_TIMERS).fetchall()
        try:
            resources: dict[str, dict[str, float]] = {name: {} for name, _ in clock_rows}
            for name, resource, amount in usage_rows:
                resources.setdefault(name, {})[resource] = amount
            clock = dict(clock_rows)
            admission = {name: AdmissionUsage(amounts, clock.get(name)) for name, amounts in resources.items()}
            timers = _timers(timer_rows)
            return AccountantState((CustomerRecord(*row) for row in rows), None, admission, timers)
        except ValueError as error:
            raise AccountantStoreError(f"{self.path}: bad customer record: {error}") from error

    def quota_timers(self) -> dict[str, QuotaTimer]:
        """The running quota preemption timers alone, by group, as last committed."""
        with self._reading("reading the quota preemption timers"):
            rows = self._db.execute(_SELECT_TIMERS).fetchall()
        try:
            return _timers(rows)
        except ValueError as error:
            raise AccountantStoreError(f"{self.path}: bad quota preemption timer: {error}") from error

    def last_cycle_id(self) -> int:
        """The id of the last committed cycle; 0 before the first."""
        with self._reading("reading the last cycle id"):
            return self._last_cycle_id()

    def _last_cycle_id(self) -> int:
        return self._db.execute("SELECT COALESCE(MAX(cycle_id), 0) FROM cycles").fetchone()[0]

    def last_match_seq(self) -> int:
        """The match log's highest sequence number as the last cycle that recorded it was
        committed; 0 if none did."""
        with self._reading("reading the match log's sequence number"):
            return self._db.execute("SELECT COALESCE(MAX(match_seq), 0) FROM cycles").fetchone()[0]

    def last_cycle_time(self) -> float | None:
        """The time of the last committed cycle (by the daemon's clock); None before the first."""
        with self._reading("reading the last cycle's time"):
            row = self._db.execute("SELECT time FROM cycles ORDER BY cycle_id DESC LIMIT 1").fetchone()
        return None if row is None else row[0]

    def quick_check(self) -> list[str]:
        """What SQLite's ``PRAGMA quick_check`` finds wrong with the database file."""
        return quick_check(self._db, self._lock)

    def back_up_into(self, target: sqlite3.Connection) -> None:
        """Copy the whole database into ``target`` with SQLite's online backup: a consistent copy as
        of one moment, taken while edits go on (they wait for the copy, which reads a few pages)."""
        with self._reading("copying the accountant"):
            self._db.backup(target)

    def adopt(self, source: sqlite3.Connection, foreign_tables: Iterable[str] = ()) -> None:
        """Replace the whole database by ``source``'s (another daemon's copy, taken by
        :meth:`back_up_into`), dropping the ``foreign_tables`` the copy carried beside the
        accountant's; the schema is then checked (and upgraded) as at opening."""
        with self._reading("adopting another accountant's copy"):
            source.backup(self._db)
            self._db.execute("PRAGMA journal_mode = WAL")
            for table in foreign_tables:
                self._db.execute(f'DROP TABLE IF EXISTS "{table}"')
        self._prepare_schema()

    def continue_after(self, cycle_id: int, match_seq: int, now: float) -> None:
        """Take ``cycle_id`` as committed, with nothing charged, so that the next cycle has a
        higher id: the administrator starts over on purpose with an accountant behind the match
        log, which holds matches of cycles up to ``cycle_id`` and sequence numbers up to
        ``match_seq``."""
        with self._transaction(f"going on after cycle {cycle_id}"):
            if cycle_id > self._last_cycle_id():
                self._db.execute("INSERT INTO cycles (cycle_id, time, match_seq) VALUES (?, ?, ?)",
                                 (cycle_id, now, match_seq))

    def commit_cycle(
        self,
        cycle_id: int,
        now: float,
        new_state: AccountantState,
        charges: Mapping[str, float],
        match_seq: int | None = None,
        *,
        edit_mark: int | None = None,
    ) -> bool:
        """Write ``new_state`` and the cycle's per-customer charges atomically, with the match
        log's highest sequence number once the cycle's matches are staged (``match_seq``); with
        the :meth:`edit_mark` taken when the cycle loaded, keep the administrator's edits made since.

        Returns False, changing nothing, when ``cycle_id`` is not above the last committed id.
        """
        if isinstance(cycle_id, bool) or not isinstance(cycle_id, int) or cycle_id < 1:
            raise ValueError(f"cycle id must be a positive integer, got {cycle_id!r}")
        now = check_finite(f"time of cycle {cycle_id}", now)
        costs = {
            customer: check_non_negative(f"cycle {cycle_id} charge to {customer!r}", cost)
            for customer, cost in charges.items()
        }
        with self._transaction(f"committing cycle {cycle_id}"):
            if cycle_id <= self._last_cycle_id():
                return False
            self._write_cycle(cycle_id, now, match_seq)
            self._write_customers(new_state, edit_mark)
            self._write_charges(cycle_id, costs)
            self._write_admission_usage(new_state)
            self._write_quota_timers(new_state)
        return True

    def _write_cycle(self, cycle_id: int, now: float, match_seq: int | None) -> None:
        self._db.execute("INSERT INTO cycles (cycle_id, time, match_seq) VALUES (?, ?, ?)", (cycle_id, now, match_seq))

    def _write_customers(self, state: AccountantState, edit_mark: int | None) -> None:
        edited: dict[str, set[str]] = {}
        if edit_mark is not None:
            for name, field in self._edited_since(edit_mark):
                edited.setdefault(name, set()).add(field)
            self._db.execute("DELETE FROM admin_edits WHERE seq <= ?", (edit_mark,))
        self._db.executemany(
            _UPSERT_CUSTOMER,
            (
                {**asdict(record), "accrued": state.accrued_usage(record.name),
                 "edited_priority": "real_priority" in edited.get(record.name, ()),
                 "edited_last": "last_usage_time" in edited.get(record.name, ())}
                for record in state.customers()
                if DELETED not in edited.get(record.name, ())
            ),
        )

    def _write_admission_usage(self, state: AccountantState) -> None:
        """Admission usage belongs to the cycle alone: the stored one is replaced."""
        self._db.execute("DELETE FROM admission_usage")
        self._db.execute("DELETE FROM admission_clock")
        usages = sorted(state.admission_usages.items())
        self._db.executemany("INSERT INTO admission_clock VALUES (?, ?)",
                             ((name, usage.last_update_time) for name, usage in usages))
        self._db.executemany("INSERT INTO admission_usage VALUES (?, ?, ?)",
                             ((name, resource, amount) for name, usage in usages
                              for resource, amount in usage.resources.items()))

    def _write_quota_timers(self, state: AccountantState) -> None:
        self._db.execute("DELETE FROM quota_timers")
        self._db.executemany(
            "INSERT INTO quota_timers VALUES (?, ?, ?, ?, ?)",
            ((t.group, json.dumps(dict(t.maximum), sort_keys=True), t.delay, t.started,
              None if t.enforced is None else json.dumps(dict(t.enforced), sort_keys=True))
             for t in state.quota_timers.values()),
        )

    def _write_charges(self, cycle_id: int, costs: Mapping[str, float]) -> None:
        self._db.executemany(
            "INSERT INTO charges (cycle_id, customer, cost) VALUES (?, ?, ?)",
            ((cycle_id, customer, cost) for customer, cost in sorted(costs.items())),
        )

    def charges(self, cycle_id: int) -> dict[str, float]:
        """The per-customer costs committed with cycle ``cycle_id`` (empty if none)."""
        with self._reading(f"reading the charges of cycle {cycle_id}"):
            rows = self._db.execute(
                "SELECT customer, cost FROM charges WHERE cycle_id = ?", (cycle_id,)
            ).fetchall()
        return dict(rows)

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def __enter__(self) -> AccountantStore:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
