"""The bearer token that authorises writes (ads, reschedule, priority factors, usage resets).

The token lives in a file (``NEGOTIATORD_TOKEN_FILE``, else ``<state dir>/token``) that only the
daemon's user and its administrators can read; a client sends ``Authorization: Bearer <token>``.
At first start the daemon writes a fresh random token there if the file does not exist; a reload
(SIGHUP) reads the file again, so a token can be rotated without a restart.

A token file others can read is refused, as OpenSSH refuses a private key file
(``sshkey_perm_ok`` in its authfile.c): one the daemon's user owns must give no permission to its
group or to others; one another user owns (root's, read through a group) must not be readable by
everyone.
"""

from __future__ import annotations

import os
import secrets
import stat
from pathlib import Path

import structlog

log = structlog.get_logger("negotiatord.token")


class TokenError(Exception):
    """The token file cannot be used; the message names it."""


def load_token(path: Path, create: bool = False) -> bytes:
    """The token in ``path`` (surrounding whitespace stripped); with ``create``, a missing file
    is first created holding a new random token, readable by its owner only."""
    if create and not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            pass  # another process created it first: use theirs
        else:
            with os.fdopen(fd, "w") as out:
                out.write(secrets.token_urlsafe(32) + "\n")
            log.info("created a bearer token for writes", token_file=str(path))
    try:
        token = path.read_text().strip()
        status = path.stat()
    except OSError as error:
        raise TokenError(f"{path}: cannot read the token file: {error.strerror}") from None
    mode = stat.S_IMODE(status.st_mode)
    open_to = stat.S_IRWXG | stat.S_IRWXO if status.st_uid == os.getuid() else stat.S_IROTH
    if mode & open_to:
        raise TokenError(f"{path}: the token file is open to others (mode {mode:04o}); whoever reads it may "
                         f"write to the daemon. Make it private: chmod 600 {path}")
    if not token:
        raise TokenError(f"{path}: the token file is empty")
    return token.encode()
