"""What the daemon's SQLite files (the accountant, the match log) share: transactions and reads
whose SQLite errors name the file, and SQLite's own check of a file.

Each store owns its connection(s), its lock and its error class (the message names the file); these
helpers only wrap a connection's use, so that a failure anywhere says which file and what was
being done ("...: committing cycle 7 failed: database or disk is full").
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def transaction(db: sqlite3.Connection, lock: threading.Lock, error: type[Exception], path: str,
                doing: str) -> Iterator[None]:
    """``BEGIN IMMEDIATE`` .. ``COMMIT`` on ``db`` under ``lock`` (``BEGIN IMMEDIATE`` waits out
    another writer's lock, up to the busy timeout), rolled back on any exception; an SQLite error
    becomes ``error`` naming ``path`` and what was being done."""
    with lock:
        try:
            db.execute("BEGIN IMMEDIATE")
            yield
            db.execute("COMMIT")
        except BaseException as failure:
            if db.in_transaction:
                db.execute("ROLLBACK")
            if isinstance(failure, sqlite3.Error):
                raise error(f"{path}: {doing} failed: {failure}") from failure
            raise


@contextmanager
def reading(lock: threading.Lock, error: type[Exception], path: str, doing: str) -> Iterator[None]:
    """Reads under ``lock``; an SQLite error (a file damaged under the daemon) becomes ``error``
    naming ``path``."""
    with lock:
        try:
            yield
        except sqlite3.Error as failure:
            raise error(f"{path}: {doing} failed: {failure}") from failure


def quick_check(db: sqlite3.Connection, lock: threading.Lock) -> list[str]:
    """What SQLite's ``PRAGMA quick_check`` finds wrong with ``db``'s file (at most five problems);
    empty when it is sound."""
    with lock:
        try:
            rows = db.execute("PRAGMA quick_check(5)").fetchall()
        except sqlite3.DatabaseError as error:
            return [str(error)]
    return [row[0] for row in rows if row[0] != "ok"]
