"""Where the daemon keeps its state: accountant database, match log, token file.

``NEGOTIATORD_STATE_DIR``, else ``$STATE_DIRECTORY`` (what systemd's ``StateDirectory=`` sets),
holds everything by default; ``NEGOTIATORD_ACCOUNTANT_DB`` and ``NEGOTIATORD_TOKEN_FILE`` may
point elsewhere.
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
            raise StateDirError("no state directory: set NEGOTIATORD_STATE_DIR in the config "
                                "(or run under systemd with StateDirectory=)")
        return cls(
            state_dir=state_dir,
            accountant_db=service.accountant_db or state_dir / ACCOUNTANT_DB,
            match_log=state_dir / MATCH_LOG,
            token_file=service.token_file or state_dir / TOKEN_FILE,
        )
