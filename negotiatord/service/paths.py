"""Where the daemon keeps its state: accountant database, match log, token file.

``NEGOTIATORD_STATE_DIR``, else ``$STATE_DIRECTORY`` (what systemd's ``StateDirectory=`` sets),
else for root ``/var/lib/negotiatord`` (where the FHS keeps system daemons' state, and where the
systemd unit's ``StateDirectory=negotiatord`` is, so that root's ``negotiatord userprio`` reads
the token the service wrote), else the user's own state directory (``$XDG_STATE_HOME/negotiatord``,
by default ``~/.local/state/negotiatord``, as the XDG Base Directory Specification places "state
data that should persist between restarts") holds everything; ``NEGOTIATORD_ACCOUNTANT_DB`` and
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
SYSTEM_STATE_DIR = Path("/var/lib/negotiatord")


class StateDirError(Exception):
    """No state directory is configured; the message says how to configure one."""


@dataclass(frozen=True)
class StatePaths:
    state_dir: Path
    accountant_db: Path
    match_log: Path
    token_file: Path
    state_dir_from: str = "NEGOTIATORD_STATE_DIR"    # what chose the state directory, for messages

    @classmethod
    def resolve(cls, service: ServiceSettings, environ: Mapping[str, str] = os.environ,
                uid: int | None = None) -> StatePaths:
        """The paths for a process of ``uid`` (default: this one's effective uid) in ``environ``."""
        state_dir, chosen_by = service.state_dir, "NEGOTIATORD_STATE_DIR"
        if state_dir is None and environ.get("STATE_DIRECTORY"):
            state_dir, chosen_by = Path(environ["STATE_DIRECTORY"].split(":")[0]), "$STATE_DIRECTORY (systemd)"
        if state_dir is None and (os.geteuid() if uid is None else uid) == 0:
            state_dir, chosen_by = SYSTEM_STATE_DIR, "root's state directory"
        if state_dir is None:
            state_dir, chosen_by = _user_state_dir(environ)
        return cls(
            state_dir=state_dir,
            accountant_db=service.accountant_db or state_dir / ACCOUNTANT_DB,
            match_log=state_dir / MATCH_LOG,
            token_file=service.token_file or state_dir / TOKEN_FILE,
            state_dir_from=chosen_by,
        )

    def make_state_dir(self) -> None:
        """Create the state directory (owner only) if missing; a ``StateDirError`` naming it and
        what chose it when it cannot be (a file in its place, no permission, ...)."""
        try:
            self.state_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        except FileExistsError:
            raise StateDirError(f"{self.state_dir_from} = {self.state_dir}: not a directory") from None
        except OSError as error:
            raise StateDirError(f"{self.state_dir_from} = {self.state_dir}: cannot create the state directory: "
                                f"{error.strerror or error}") from None


def _user_state_dir(environ: Mapping[str, str]) -> tuple[Path, str]:
    """``$XDG_STATE_HOME/negotiatord``, else ``~/.local/state/negotiatord`` (an XDG path must be
    absolute; a relative one is ignored, as the specification says), and what chose it."""
    xdg = environ.get("XDG_STATE_HOME", "")
    if xdg and Path(xdg).is_absolute():
        return Path(xdg) / "negotiatord", "$XDG_STATE_HOME/negotiatord"
    home = environ.get("HOME")
    if not home:
        raise StateDirError("no state directory: set NEGOTIATORD_STATE_DIR in the config "
                            "(or run under systemd with StateDirectory=, or with HOME set)")
    return Path(home) / ".local" / "state" / "negotiatord", "the user's state directory"
