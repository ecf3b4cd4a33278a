"""Published matches, kept in SQLite with a cursor: each match's sequence number.

Matches go out only after their cycle's charges are committed, and survive a restart. The match log
is a second database beside the accountant's (the accountant store owns its connection and its
transaction), so publication is two-phase, keyed by cycle id:

1. ``stage``: the cycle's matches are written, unpublished;
2. the accountant commits the cycle (``AccountantStore.commit_cycle``);
3. ``publish``: the staged matches become visible.

``recover``, at start-up, finishes whatever a crash interrupted: staged matches of a cycle the
accountant committed are published; those of a cycle it did not commit are dropped. So a match is
published exactly when its charges are committed, whenever the daemon is killed.

Each match also keeps the version (:func:`~negotiatord.feed.store.ad_version`) of the job and slot
ads it was matched against: what a restarted daemon needs to hold them again
(:class:`~negotiatord.publish.holds.RestoredHolds`) until newer ads arrive.

A preemption with no job to take the slot (rule ``quota``) is published in the same sequence, as
a row without a job, submitter or group: the consumers of ``/v1/matches`` and its stream learn of
every preemption from one cursor, and a restarted daemon knows which victims are already being
preempted (:class:`~negotiatord.publish.preempting.BeingPreempted`).

Matches for a real pool's schedds are staged *before* they are handed out, marked to be handed
(``handed`` 0), and each is marked handed (1) just before its ``PERMISSION_AND_AD`` is written
(:meth:`MatchLog.mark_handed`). After the hand-out, those never handed are dropped
(:meth:`MatchLog.drop_unhanded`) and the cycle commits with the rest. If the daemon dies in between,
the next start finds the handed matches of a cycle the accountant never committed
(:meth:`MatchLog.handed_uncommitted`): a schedd may be starting their jobs, so they are charged and
published, the others dropped. A mark is written just before its match leaves, so a crash can at
worst charge one match the schedd never received; never miss one it did. The marks are written with
``synchronous = NORMAL`` (SQLite's WAL keeps them through a crash of the process, not of the
machine), since one is written per match.

Sequence numbers come from ``AUTOINCREMENT`` and are never reused; only one cycle is staged at a
time and it holds the highest numbers, so the published matches are always a prefix of the
sequence (with gaps where a crash dropped a staged cycle): a reader resuming after sequence N
misses nothing.
"""

from __future__ import annotations

import json
import math
import sqlite3
import threading
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from collections.abc import Collection, Iterable, Sequence

from negotiatord.cycle.result import Match, Preemption
from negotiatord.feed.kinds import AdKind
from negotiatord.publish.holds import Hold
from negotiatord.publish.report import match_document, preemption_entry, preemption_fields
from negotiatord.storage import quick_check, reading, transaction

SCHEMA_VERSION = 5
_TABLE = """
CREATE TABLE matches (
    seq       INTEGER PRIMARY KEY AUTOINCREMENT,
    cycle_id  INTEGER NOT NULL,
    time      REAL NOT NULL,
    job       TEXT,               -- NULL: a preemption no job takes the slot for
    slot      TEXT NOT NULL,
    submitter TEXT,
    grp       TEXT,
    cost      REAL NOT NULL,
    consumed  TEXT NOT NULL,
    published INTEGER NOT NULL DEFAULT 0,
    job_version  TEXT,
    slot_version TEXT,
    preemption   TEXT,
    handed       INTEGER           -- NULL: no schedd to hand to; 0: to be handed; 1: handed
)"""
_INDEX = "CREATE INDEX matches_by_cycle ON matches (cycle_id, job)"   # a hand-out marks matches by job
# Schema 1 had no ad versions: its matches hold nothing after a restart. Schema 2 had no
# preemptions: its matches preempted nothing. Schema 3 required a job on every row. An older table
# is copied into the current one, sequence numbers and the highest number ever used kept. Schema 4
# had no hand-out marks: its matches were never for a schedd.
_STORED = ("seq", "cycle_id", "time", "job", "slot", "submitter", "grp", "cost", "consumed", "published",
           "job_version", "slot_version", "preemption", "handed")
_COLUMNS = "seq, cycle_id, time, job, slot, submitter, grp, cost, consumed, preemption"
# The published matches that may still hold their job or slot: each job's last match (``last_job``),
# and each slot's matches against the version of that slot its last match saw (``last_slot``).
_HOLDING = """
    WITH kept AS (SELECT * FROM matches WHERE published = 1 AND job IS NOT NULL),
         last_job AS (SELECT MAX(seq) AS seq FROM kept WHERE job_version IS NOT NULL GROUP BY job),
         last_slot AS (SELECT slot, slot_version FROM kept WHERE seq IN (
             SELECT MAX(seq) FROM kept WHERE slot_version IS NOT NULL GROUP BY slot))"""


class MatchLogError(Exception):
    """The match log cannot be used; the message names the file."""


@dataclass(frozen=True)
class Retention:
    """Which published matches :meth:`MatchLog.prune` forgets: those made before ``before`` on the
    daemon's clock (NEGOTIATORD_MATCH_RETENTION ago) *and* not in the last ``cycles`` cycles up
    to the one pruning, so that a wall clock stepped ahead forgets nothing at once, and none whose job
    or slot is still held (``held_jobs``, ``held_slots``): a restarted daemon holds them again from
    the rows kept (:meth:`MatchLog.held_matches`). The default forgets nothing."""

    before: float = -math.inf
    cycles: int = 0
    held_jobs: frozenset[str] = frozenset()
    held_slots: frozenset[str] = frozenset()


@dataclass(frozen=True)
class PublishedMatch:
    """A published row: a match, or a preemption no job takes the slot for (rule ``quota``)."""

    seq: int
    cycle: int
    time: float
    match: Match | Preemption

    def document(self) -> dict[str, Any]:
        entry = self.match
        body = match_document(entry) if isinstance(entry, Match) else preemption_entry(entry)
        return {"seq": self.seq, "cycle": self.cycle, "time": self.time, **body}


class MatchLog:
    """One writer (the cycle thread, and start-up) and readers of published matches (the threads
    that serve pages), each thread reading on a connection of its own: in WAL mode readers
    never wait for the writer nor for each other."""

    def __init__(self, path: Path) -> None:
        self.path = str(path)
        self._lock = threading.Lock()
        self._readers = threading.local()
        self._reader_connections: list[sqlite3.Connection] = []
        try:
            self._writer = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
            self._writer.execute("PRAGMA journal_mode = WAL")
            self._writer.execute("PRAGMA synchronous = FULL")
            self._prepare_schema()
            self._marks = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
            self._marks.execute("PRAGMA synchronous = NORMAL")
        except sqlite3.Error as error:
            raise MatchLogError(f"{self.path}: not a usable match log: {error}") from error

    def _prepare_schema(self) -> None:
        with self._transaction("preparing the schema"):
            tables = {row[0] for row in self._writer.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table'")}
            if not tables:
                self._writer.execute("CREATE TABLE schema_version (version INTEGER NOT NULL)")
                self._writer.execute(_TABLE)
                self._writer.execute(_INDEX)
                self._writer.execute("INSERT INTO schema_version VALUES (?)", (SCHEMA_VERSION,))
                return
            version = None
            if "schema_version" in tables:
                version = self._writer.execute("SELECT MAX(version) FROM schema_version").fetchone()[0]
            if "matches" in tables and version in (1, 2, 3, 4):
                self._upgrade()
                self._writer.execute("UPDATE schema_version SET version = ?", (SCHEMA_VERSION,))
                return
            if "matches" not in tables or version != SCHEMA_VERSION:
                raise MatchLogError(f"{self.path}: not a negotiatord match log of schema version "
                                    f"{SCHEMA_VERSION} (tables: {', '.join(sorted(tables))}, "
                                    f"version {version!r})")

    def _upgrade(self) -> None:
        """Copy an older ``matches`` table into the current schema (SQLite cannot drop a NOT NULL
        in place): columns it lacks are NULL, and the sequence goes on from the highest number it
        ever gave, so a reader's cursor stays valid."""
        db = self._writer
        present = {row[1] for row in db.execute("PRAGMA table_info(matches)")}
        used = self._sequence()
        db.execute("ALTER TABLE matches RENAME TO matches_before")
        db.execute("DROP INDEX IF EXISTS matches_by_cycle")
        db.execute(_TABLE)
        db.execute(_INDEX)
        columns = ", ".join(_STORED)
        kept = ", ".join(column if column in present else "NULL" for column in _STORED)
        db.execute(f"INSERT INTO matches ({columns}) SELECT {kept} FROM matches_before")
        db.execute("DROP TABLE matches_before")
        if used:
            self._give_after(used)

    def _transaction(self, doing: str) -> AbstractContextManager[None]:
        return transaction(self._writer, self._lock, MatchLogError, self.path, doing)

    def _reading(self, doing: str) -> AbstractContextManager[None]:
        """The writer's connection for a read; SQLite errors name the file."""
        return reading(self._lock, MatchLogError, self.path, doing)

    # -- the cycle thread -----------------------------------------------------------------------

    def stage(self, cycle_id: int, time: float, matches: Iterable[Match], holds: Sequence[Hold] = (),
              preemptions: Iterable[Preemption] = (), to_hand: Collection[str] = frozenset()) -> int:
        """Write a cycle's matches unpublished, with the versions of the ads ``holds`` are about,
        then its ``preemptions`` that no match makes (those of a match go with it), replacing what
        an earlier, failed attempt at the same cycle id may have left staged. The matches of the
        jobs in ``to_hand`` are marked to be handed to their schedds. Returns the highest sequence
        number given so far, which the accountant keeps with the cycle."""
        versions = {(hold.kind, hold.key): hold.version for hold in holds}
        rows: list[tuple[object, ...]] = [
            (cycle_id, time, m.job, m.slot, m.submitter, m.group, m.cost, json.dumps(m.consumed),
             versions.get((AdKind.JOB, m.job)), versions.get((AdKind.SLOT, m.slot)), _preemption_text(m.preemption),
             0 if m.job in to_hand else None)
            for m in matches]
        rows += [(cycle_id, time, None, p.slot, None, None, 0.0, "{}", None, None, _preemption_text(p), None)
                 for p in preemptions if p.job is None]
        with self._transaction(f"staging the matches of cycle {cycle_id}"):
            self._writer.execute("DELETE FROM matches WHERE cycle_id = ? AND published = 0", (cycle_id,))
            self._writer.executemany(
                "INSERT INTO matches (cycle_id, time, job, slot, submitter, grp, cost, consumed, "
                "job_version, slot_version, preemption, handed) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)
            return self._sequence()

    def mark_handed(self, cycle_id: int, job: str) -> None:
        """Record that the match of ``job`` in staged cycle ``cycle_id`` is being handed to its schedd."""
        try:
            self._marks.execute("UPDATE matches SET handed = 1 WHERE cycle_id = ? AND job = ? AND published = 0",
                                (cycle_id, job))
        except sqlite3.Error as error:
            raise MatchLogError(f"{self.path}: marking the match of {job} handed failed: {error}") from error

    def drop_unhanded(self, cycle_id: int) -> int:
        """Drop staged cycle ``cycle_id``'s matches that were to be handed and never were."""
        with self._transaction(f"dropping the matches of cycle {cycle_id} no schedd received"):
            return self._writer.execute(
                "DELETE FROM matches WHERE cycle_id = ? AND published = 0 AND handed = 0", (cycle_id,)).rowcount

    def handed_uncommitted(self, last_committed: int) -> dict[int, tuple[float, list[Match]]]:
        """By cycle, the staged matches handed to a schedd in cycles after ``last_committed``: a
        daemon died between handing them out and committing them."""
        with self._lock:
            rows = self._writer.execute(
                "SELECT cycle_id, time, job, slot, submitter, grp, cost, consumed, preemption FROM matches "
                "WHERE published = 0 AND handed = 1 AND cycle_id > ? ORDER BY seq", (last_committed,)).fetchall()
        cycles: dict[int, tuple[float, list[Match]]] = {}
        for cycle_id, at, job, slot, submitter, group, cost, consumed, preemption in rows:
            cycles.setdefault(cycle_id, (at, []))[1].append(_match(job, slot, submitter, group, cost, consumed,
                                                                    preemption))
        return cycles

    def publish(self, cycle_id: int) -> int:
        """Make cycle ``cycle_id``'s staged matches visible; returns the last published sequence."""
        with self._transaction(f"publishing the matches of cycle {cycle_id}"):
            self._writer.execute("UPDATE matches SET published = 1 WHERE cycle_id = ?", (cycle_id,))
            return self._last_seq(self._writer)

    def discard(self, cycle_id: int) -> None:
        """Drop cycle ``cycle_id``'s staged matches (its accountant commit did not happen)."""
        with self._transaction(f"dropping the matches of cycle {cycle_id}"):
            self._writer.execute("DELETE FROM matches WHERE cycle_id = ? AND published = 0", (cycle_id,))

    def recover(self, last_committed: int) -> tuple[int, int]:
        """Publish staged matches of committed cycles, drop the others; returns (published, dropped)."""
        with self._transaction("recovering staged matches"):
            published = self._writer.execute(
                "UPDATE matches SET published = 1 WHERE published = 0 AND cycle_id <= ?",
                (last_committed,)).rowcount
            dropped = self._writer.execute(
                "DELETE FROM matches WHERE published = 0 AND cycle_id > ?", (last_committed,)).rowcount
        return published, dropped

    # -- start-up checks ------------------------------------------------------------------------

    def quick_check(self) -> list[str]:
        """What SQLite's ``PRAGMA quick_check`` finds wrong with the file."""
        return quick_check(self._writer, self._lock)

    def highest_published_cycle(self) -> int:
        """The highest cycle id of a published row; 0 if there is none."""
        with self._reading("reading the highest published cycle"):
            return self._writer.execute(
                "SELECT COALESCE(MAX(cycle_id), 0) FROM matches WHERE published = 1").fetchone()[0]

    def sequence(self) -> int:
        """The highest sequence number ever given (pruned and dropped rows included); 0 if none."""
        with self._reading("reading the sequence"):
            return self._sequence()

    def _sequence(self) -> int:
        row = self._writer.execute("SELECT seq FROM sqlite_sequence WHERE name = 'matches'").fetchone()
        return 0 if row is None else row[0]

    def continue_after(self, seq: int) -> None:
        """Give sequence numbers above ``seq`` from now on: the administrator starts over on purpose
        with a match log behind the accountant, whose readers have seen numbers up to ``seq``."""
        with self._transaction(f"going on after sequence number {seq}"):
            if seq > self._sequence():
                self._give_after(seq)

    def _give_after(self, seq: int) -> None:
        """Make AUTOINCREMENT give numbers above ``seq`` (in a transaction of the writer)."""
        self._writer.execute("DELETE FROM sqlite_sequence WHERE name = 'matches'")
        self._writer.execute("INSERT INTO sqlite_sequence (name, seq) VALUES ('matches', ?)", (seq,))

    def held_matches(self) -> list[tuple[Match, str | None, str | None]]:
        """The published matches that may still hold their job or slot, with the versions of the
        ads they were matched against, oldest first (for
        :class:`~negotiatord.publish.holds.RestoredHolds`, at start-up): each job's last match, and
        each slot's matches against the version of that slot its last match saw."""
        with self._reading("reading the matches that hold their job or slot"):
            rows = self._writer.execute(_HOLDING + """
                SELECT job, slot, submitter, grp, cost, consumed, preemption,
                       CASE WHEN seq IN (SELECT seq FROM last_job) THEN job_version END,
                       CASE WHEN (slot, slot_version) IN (SELECT slot, slot_version FROM last_slot)
                            THEN slot_version END
                FROM kept
                WHERE seq IN (SELECT seq FROM last_job)
                   OR (slot, slot_version) IN (SELECT slot, slot_version FROM last_slot)
                ORDER BY seq""").fetchall()
        return [(_match(job, slot, submitter, group, cost, consumed, preemption), job_version, slot_version)
                for job, slot, submitter, group, cost, consumed, preemption, job_version, slot_version in rows]

    # -- another central manager's copy (HTCondor's high availability) ---------------------------

    def export_held(self, target: sqlite3.Connection, table: str) -> int:
        """Copy into a new ``table`` of ``target`` what a daemon taking over from this one needs to
        hold what this one matched: the published rows :meth:`held_matches` and
        :meth:`quota_preemptions` read; returns how many. The history readers page through stays
        here: their cursors are this daemon's."""
        columns = ", ".join(_STORED)
        with self._reading("copying the matches that hold their job or slot"):
            rows = self._writer.execute(_HOLDING + f"""
                SELECT {columns} FROM matches
                WHERE published = 1 AND (job IS NULL OR seq IN (SELECT seq FROM last_job)
                   OR (slot, slot_version) IN (SELECT slot, slot_version FROM last_slot))
                ORDER BY seq""").fetchall()
        target.execute(f'CREATE TABLE "{table}" ({columns})')
        target.executemany(f'INSERT INTO "{table}" VALUES ({", ".join("?" for _ in _STORED)})', rows)
        return len(rows)

    def adopt(self, source: sqlite3.Connection, table: str, seen: int) -> tuple[int, int]:
        """Take in the rows another daemon exported (:meth:`export_held`) into ``table`` of
        ``source``, as published matches, after dropping this log's unpublished ones (a cycle of
        its own that the adopted accountant never committed). The rows get new sequence numbers,
        above every number this log gave and above ``seen`` (the other daemon's), so that this
        log's readers are never handed a number twice. Returns (dropped, taken in)."""
        names = [column for column in _STORED if column != "seq"]
        columns = ", ".join(names)
        taken = ", ".join("1" if column == "published" else column for column in names)
        try:
            rows = source.execute(f'SELECT {taken} FROM "{table}" ORDER BY seq').fetchall()
        except sqlite3.Error as error:
            raise MatchLogError(f"{self.path}: reading the matches to adopt failed: {error}") from error
        with self._transaction("adopting another daemon's matches"):
            dropped = self._writer.execute("DELETE FROM matches WHERE published = 0").rowcount
            if seen > self._sequence():
                self._give_after(seen)
            self._writer.executemany(
                f"INSERT INTO matches ({columns}) VALUES ({', '.join('?' for _ in names)})", rows)
        return dropped, len(rows)

    def quota_preemptions(self) -> list[tuple[float, Preemption]]:
        """The published preemptions no job took the slot for, with their cycle's time, oldest
        first (for :class:`~negotiatord.publish.preempting.BeingPreempted`, at start-up)."""
        with self._reading("reading the quota preemptions"):
            rows = self._writer.execute("SELECT time, slot, preemption FROM matches "
                                        "WHERE published = 1 AND job IS NULL ORDER BY seq").fetchall()
        return [(at, _preemption(slot, text)) for at, slot, text in rows]

    def prune(self, retention: Retention, cycle_id: int) -> int:
        """Forget the published matches ``retention`` lets go of, as cycle ``cycle_id`` publishes;
        returns how many. The held keys are handed to SQLite only when some match is old enough."""
        last_forgotten = cycle_id - retention.cycles
        old = "published = 1 AND time < ? AND cycle_id <= ?"
        with self._transaction("pruning old matches"):
            db = self._writer
            if db.execute(f"SELECT 1 FROM matches WHERE {old} LIMIT 1", (retention.before, last_forgotten)).fetchone() \
                    is None:
                return 0
            db.execute("CREATE TEMP TABLE IF NOT EXISTS held (kind TEXT, key TEXT, PRIMARY KEY (kind, key))")
            db.execute("DELETE FROM temp.held")
            db.executemany("INSERT OR IGNORE INTO temp.held VALUES ('job', ?)", ((k,) for k in retention.held_jobs))
            db.executemany("INSERT OR IGNORE INTO temp.held VALUES ('slot', ?)", ((k,) for k in retention.held_slots))
            return db.execute(
                f"DELETE FROM matches WHERE {old} "
                "AND (job IS NULL OR job NOT IN (SELECT key FROM temp.held WHERE kind = 'job')) "
                "AND slot NOT IN (SELECT key FROM temp.held WHERE kind = 'slot')",
                (retention.before, last_forgotten)).rowcount

    # -- readers of published matches -----------------------------------------------------------

    def since(self, after: int, limit: int) -> list[PublishedMatch]:
        """Published matches with a sequence number above ``after``, oldest first."""
        try:
            rows = self._reader().execute(
                f"SELECT {_COLUMNS} FROM matches WHERE published = 1 AND seq > ? ORDER BY seq LIMIT ?",
                (after, limit)).fetchall()
        except sqlite3.Error as error:
            raise MatchLogError(f"{self.path}: reading published matches failed: {error}") from error
        return [PublishedMatch(seq, cycle, at, _row(job, slot, submitter, group, cost, consumed, preemption))
                for seq, cycle, at, job, slot, submitter, group, cost, consumed, preemption in rows]

    def bounds(self) -> tuple[int, int]:
        """(first, last) published sequence numbers still kept; (0, 0) when there are none."""
        try:
            row = self._reader().execute(
                "SELECT COALESCE(MIN(seq), 0), COALESCE(MAX(seq), 0) FROM matches WHERE published = 1"
            ).fetchone()
        except sqlite3.Error as error:
            raise MatchLogError(f"{self.path}: reading the published sequence numbers failed: {error}") from error
        return row[0], row[1]

    def _reader(self) -> sqlite3.Connection:
        """This thread's reading connection, opened on its first read."""
        reader = getattr(self._readers, "connection", None)
        if reader is None:
            reader = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
            with self._lock:
                self._reader_connections.append(reader)
            self._readers.connection = reader
        return reader

    @staticmethod
    def _last_seq(db: sqlite3.Connection) -> int:
        return db.execute("SELECT COALESCE(MAX(seq), 0) FROM matches WHERE published = 1").fetchone()[0]

    def close(self) -> None:
        with self._lock:
            self._writer.close()
            self._marks.close()
            for reader in self._reader_connections:
                reader.close()


def _preemption_text(preemption: Preemption | None) -> str | None:
    """What the match log keeps of a preemption beside its slot (and its match's job, submitter
    and group): the victim, whose it was, the rule."""
    if preemption is None:
        return None
    return json.dumps({"victim_job": preemption.victim_job, **preemption_fields(preemption)})


def _preemption(slot: str, text: str, job: str | None = None, submitter: str | None = None,
                group: str | None = None) -> Preemption:
    """A preemption as the log kept it (:func:`_preemption_text`)."""
    kept = json.loads(text)
    return Preemption(kept["victim_job"], slot, kept["victim_submitter"], kept["victim_group"],
                      job, submitter, group, kept["rule"], kept["strategy"])


def _match(job: str, slot: str, submitter: str, group: str, cost: float, consumed: str,
           preemption: str | None) -> Match:
    """A match as the log kept it."""
    preempted = None if preemption is None else _preemption(slot, preemption, job, submitter, group)
    return Match(job, slot, submitter, group, cost, json.loads(consumed), preempted)


def _row(job: str | None, slot: str, submitter: str | None, group: str | None, cost: float, consumed: str,
         preemption: str | None) -> Match | Preemption:
    """A published row: a match, or (no job) a preemption no job takes the slot for."""
    if job is None:
        assert preemption is not None      # a row without a job is a preemption (stage)
        return _preemption(slot, preemption)
    assert submitter is not None and group is not None
    return _match(job, slot, submitter, group, cost, consumed, preemption)
