"""Where the daemon keeps its state: accountant database, match log, token file.

``NEGOTIATORD_STATE_DIR``, else ``$STATE_DIRECTORY`` (what systemd's ``StateDirectory=`` sets),
else the user's own state directory (``$XDG_STATE_HOME/negotiatord``, by default
``~/.local/state/negotiatord``, as the XDG Base Directory Specification places "state data that
should persist between restarts") holds everything; ``NEGOTIATORD_ACCOUNTANT_DB`` and
``NEGOTIATORD_TOKEN_FILE`` may point elsewhere. The default never depends on where the config
file was put: a config copied to ``/etc`` must not put the accountant in ``/etc``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from collections.abc import Mapping

from negotiatord.settings.model import ServiceSettings

ACCOUNTANT_DB = "accountant.sqlite"
MATCH_LOG = "matches.sqlite"
TOKEN_FILE = "token"


class StateDirError(Exception):
    """No state directory is configured; the message says how to configure one."""


@dataclass(frozen=True)
class StatePaths:
    state_dir: Path
    accountant_db: Path
    match_log: Path
    token_file: Path

    @classmethod
    def resolve(cls, service: ServiceSettings, environ: Mapping[str, str] = os.environ) -> StatePaths:
        state_dir = service.state_dir
        if state_dir is None and environ.get("STATE_DIRECTORY"):
            state_dir = Path(environ["STATE_DIRECTORY"].split(":")[0])
        if state_dir is None:
            state_dir = _user_state_dir(environ)
        return cls(
            state_dir=state_dir,
            accountant_db=service.accountant_db or state_dir / ACCOUNTANT_DB,
            match_log=state_dir / MATCH_LOG,
            token_file=service.token_file or state_dir / TOKEN_FILE,
        )


def _user_state_dir(environ: Mapping[str, str]) -> Path:
    """``$XDG_STATE_HOME/negotiatord``, else ``~/.local/state/negotiatord`` (an XDG path must be
    absolute; a relative one is ignored, as the specification says)."""
    xdg = environ.get("XDG_STATE_HOME", "")
    if xdg and Path(xdg).is_absolute():
        return Path(xdg) / "negotiatord"
    home = environ.get("HOME")
    if not home:
        raise StateDirError("no state directory: set NEGOTIATORD_STATE_DIR in the config "
                            "(or run under systemd with StateDirectory=, or with HOME set)")
    return Path(home) / ".local" / "state" / "negotiatord"
