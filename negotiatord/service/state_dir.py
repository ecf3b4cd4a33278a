"""The state directory: held by one daemon at a time, its files readable by the daemon's user only.

Two daemons on one state directory would commit into one accountant and one match log, their cycle
ids interleaved; so a daemon takes an exclusive lock on ``<state dir>/daemon.lock`` (``flock``,
released by the kernel when the process ends, however it ends) and writes its pid there, and a
second one is refused naming that pid.

The databases hold every submitter's usage and every match: they are created 0600 whatever the
umask and the directory's mode, and looser ones are tightened with a warning. SQLite creates a
database's ``-wal`` and ``-shm`` files with the database file's own permissions.
"""

from __future__ import annotations

import fcntl
import os
import stat
from collections.abc import Iterable
from pathlib import Path

LOCK_FILE = "daemon.lock"
_OTHERS = stat.S_IRWXG | stat.S_IRWXO
SQLITE_SIDE_FILES = ("-wal", "-shm")


class StateDirInUse(Exception):
    """Another daemon holds the state directory; the message names it and its pid."""


class StateDirLock:
    """The exclusive hold of one daemon on its state directory."""

    def __init__(self, fd: int, path: Path) -> None:
        self._fd: int | None = fd
        self.path = path

    @classmethod
    def take(cls, state_dir: Path) -> StateDirLock:
        """Hold ``state_dir``, or StateDirInUse naming the daemon that holds it."""
        path = state_dir / LOCK_FILE
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 64, 0).decode(errors="replace").strip() or "unknown"
            os.close(fd)
            raise StateDirInUse(f"{state_dir}: the state directory is in use by another negotiatord (pid {holder}, "
                                f"which holds {path}); stop it, or give this one another "
                                "NEGOTIATORD_STATE_DIR") from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        return cls(fd, path)

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)       # closing the only descriptor releases the lock
            self._fd = None


def keep_private(databases: Iterable[Path]) -> list[Path]:
    """Create each missing database file 0600 (SQLite takes an empty file as an empty database) and
    take group and other permissions off existing ones and their ``-wal`` and ``-shm`` files;
    returns the files whose permissions were tightened."""
    tightened = []
    for database in databases:
        try:
            os.close(os.open(database, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
        except FileExistsError:
            pass
        for path in (database, *(database.with_name(database.name + side) for side in SQLITE_SIDE_FILES)):
            try:
                mode = stat.S_IMODE(path.stat().st_mode)
            except FileNotFoundError:
                continue
            if mode & _OTHERS:
                path.chmod(mode & ~_OTHERS)
                tightened.append(path)
    return tightened


def open_to_others(state_dir: Path) -> bool:
    """Whether users other than the daemon's may list or enter the state directory."""
    return bool(stat.S_IMODE(state_dir.stat().st_mode) & _OTHERS)
