"""The replica of the daemon's state that ``condor_replication`` carries to the other central managers.

Under HTCondor's high availability (``condor_had``), the leading central manager's negotiator keeps
its accountant in ``STATE_FILE`` and the replication daemon copies that one file to the others
(``ReplicatorStateMachine::replicationTimer`` ships it when its modification time changes). So after
each committed cycle the daemon writes one SQLite file there: the accountant, copied with SQLite's
online backup (a consistent copy of one moment), the match log's rows that hold jobs and slots, and
a table saying which cycle and match sequence number the copy stands at. It is written beside the
target and renamed over it, so the replication daemon, which reads the file whole, never sees half
of one. A daemon that starts on another central manager adopts it (:mod:`.adoption`).

A file that is not such a replica (damaged, cut short, or another program's) is refused with an
error naming it; an empty one is no replica at all: the replication daemon creates ``STATE_FILE``
empty on a central manager that never received one.
"""

from __future__ import annotations

import os
import socket
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path

from negotiatord.accountant import AccountantStore
from negotiatord.accountant.store import SCHEMA_VERSION as ACCOUNTANT_SCHEMA
from negotiatord.publish.matchlog import SCHEMA_VERSION as MATCH_LOG_SCHEMA
from negotiatord.publish.matchlog import MatchLog
from negotiatord.storage import quick_check

# the replica's layout, with the accountant's and the match log's schema versions: a daemon adopts
# only a replica written by one of the same versions (upgrade the central managers alike)
FORMAT = 1
META = "negotiatord_replica"                 # one row: what the copy stands at
MATCHES = "negotiatord_replica_matches"      # the match log's rows that hold jobs and slots
FOREIGN_TABLES = (META, MATCHES)             # what the copy carries beside the accountant's tables
_SQLITE_HEADER = b"SQLite format 3\x00"


_VERSIONS = (FORMAT, ACCOUNTANT_SCHEMA, MATCH_LOG_SCHEMA)


class ReplicaRefused(Exception):
    """The replica file cannot be adopted; the message names it and says why."""


@dataclass(frozen=True)
class Replica:
    """A replica file as read: the last cycle its accountant committed, the match log's highest
    sequence number then, and where and when it was written."""

    path: Path
    cycle_id: int
    cycle_time: float | None
    match_seq: int
    held_rows: int
    taken: float
    host: str
    pid: int

    @contextmanager
    def opened(self) -> Iterator[sqlite3.Connection]:
        """The file, read-only (it is replaced by rename, never written in place)."""
        connection = _open(self.path)
        try:
            yield connection
        finally:
            connection.close()


def write_replica(path: Path, accountant: AccountantStore, matchlog: MatchLog, taken: float) -> Replica:
    """Write the replica of ``accountant`` and ``matchlog`` to ``path`` (beside it, then renamed
    over it); call it between cycles, when the match log holds no staged cycle."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with suppress(FileNotFoundError):
        temporary.unlink()
    connection = sqlite3.connect(temporary, isolation_level=None)
    try:
        os.chmod(temporary, 0o600)     # every submitter's usage: as private as the accountant
        accountant.back_up_into(connection)
        connection.execute("PRAGMA journal_mode = DELETE")   # one file, readable without its -wal
        connection.execute("BEGIN")
        held = matchlog.export_held(connection, MATCHES)
        cycle_id, cycle_time = connection.execute(
            "SELECT COALESCE(MAX(cycle_id), 0), (SELECT time FROM cycles ORDER BY cycle_id DESC LIMIT 1) "
            "FROM cycles").fetchone()
        replica = Replica(path, cycle_id, cycle_time, matchlog.sequence(), held, taken, socket.gethostname(),
                          os.getpid())
        connection.execute(f"CREATE TABLE {META} (format INTEGER, accountant_schema INTEGER, "
                           "match_log_schema INTEGER, cycle_id INTEGER, cycle_time REAL, match_seq INTEGER, "
                           "held_rows INTEGER, taken REAL, host TEXT, pid INTEGER)")
        connection.execute(f"INSERT INTO {META} VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                           (*_VERSIONS, cycle_id, cycle_time, replica.match_seq, held, taken, replica.host,
                            replica.pid))
        connection.execute("COMMIT")
    except BaseException:
        connection.close()
        with suppress(FileNotFoundError):
            temporary.unlink()
        raise
    connection.close()
    _give_to_directory_owner(temporary)
    _fsync(temporary)
    os.replace(temporary, path)
    _fsync(path.parent)
    return replica


def read_replica(path: Path) -> Replica | None:
    """The replica at ``path``; None when there is none (no file, or an empty one); ReplicaRefused
    when the file is not a whole replica."""
    try:
        with open(path, "rb") as file:
            header = file.read(len(_SQLITE_HEADER))
    except FileNotFoundError:
        return None
    except OSError as error:
        raise ReplicaRefused(f"{path}: cannot read the replica: {error.strerror or error}") from None
    if not header:
        return None
    advice = ("move it aside (the next leader's replica replaces it) to start from this central manager's own "
              "state")
    if header != _SQLITE_HEADER:
        raise ReplicaRefused(f"{path}: not a negotiatord replica (not an SQLite database; STATE_FILE names "
                             f"another program's file?); {advice}")
    try:
        connection = _open(path)
    except sqlite3.Error as error:
        raise ReplicaRefused(f"{path}: the replica cannot be opened ({error}); {advice}") from None
    try:
        problems = quick_check(connection, threading.Lock())    # the connection is this function's alone
        if problems:
            raise ReplicaRefused(f"{path}: the replica is damaged or half-written (PRAGMA quick_check: "
                                 f"{'; '.join(problems)}); {advice}")
        row = connection.execute(f"SELECT format, accountant_schema, match_log_schema, cycle_id, cycle_time, "
                                 f"match_seq, held_rows, taken, host, pid FROM {META}").fetchone()
    except sqlite3.Error as error:
        raise ReplicaRefused(f"{path}: the replica is damaged or half-written ({error}); {advice}") from None
    finally:
        connection.close()
    versions = None if row is None else tuple(row[:3])
    if versions != _VERSIONS:
        raise ReplicaRefused(f"{path}: a replica of format, accountant and match log schemas {versions}, not "
                             f"{_VERSIONS}: written by another version of negotiatord (run one version on every "
                             f"central manager); {advice}")
    return Replica(path, *row[3:])


def _give_to_directory_owner(path: Path) -> None:
    """A daemon run as root gives the file to the owner of its directory (SPOOL, the condor user's):
    condor_replication reads it with the condor user's effective uid, as DaemonCore daemons
    started by root do everything they need no privilege for."""
    if os.geteuid() != 0:
        return
    directory = path.parent.stat()
    if directory.st_uid != 0:
        os.chown(path, directory.st_uid, directory.st_gid)


def _open(path: Path) -> sqlite3.Connection:
    return sqlite3.connect(f"{path.absolute().as_uri()}?mode=ro&immutable=1", uri=True, isolation_level=None)


def _fsync(path: Path) -> None:
    descriptor = os.open(path, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)
