"""Where negotiatord keeps the replica of its state when HTCondor's high availability runs it.

Under ``condor_had`` the master starts the NEGOTIATOR only on the central manager whose HAD is the
leader (``MASTER_NEGOTIATOR_CONTROLLER = HAD``: the master forwards the daemon's start and stop to
its controller, as ``masterDaemon.cpp`` does for a controlled daemon), and ``condor_replication``
copies one file, ``STATE_FILE``, from the leader's central manager to the others
(``HAD_USE_REPLICATION``). The replication daemon names that file as
``AbstractReplicatorStateMachine::reinitialize`` does: ``STATE_FILE``, else
``NEGOTIATOR_STATE_FILE``, else ``$(SPOOL)/Accountantnew.log``, the accountant log of HTCondor's own
negotiator. negotiatord writes its replica there after each committed cycle and adopts the one
replicated to it when it starts (:mod:`negotiatord.service.replica`).
"""

from __future__ import annotations

import os
from pathlib import Path

from negotiatord.settings.params import ConfigParams

CONTROLLER = "MASTER_NEGOTIATOR_CONTROLLER"
HAD = "HAD"
DEFAULT_STATE_FILE = "Accountantnew.log"     # in SPOOL, as condor_replication defaults it


def read_replica_file(params: ConfigParams, config_dir: Path, warnings: list[str]) -> Path | None:
    """The file condor_replication ships between central managers, when HAD controls the negotiator
    and replication is on; None otherwise (a warning says so when HAD controls it alone: each
    central manager then starts from its own accountant)."""
    controller = (params.raw(CONTROLLER) or "").strip()
    if controller.upper() != HAD:
        return None
    if not params.boolean("HAD_USE_REPLICATION", fallback=False):
        warnings.append(f"{CONTROLLER} = {controller} without HAD_USE_REPLICATION: the accountant is not carried "
                        "to the other central managers; each starts negotiating with the usage it had when it "
                        "last led")
        return None
    text = params.raw("STATE_FILE") or params.raw("NEGOTIATOR_STATE_FILE")
    if text is None:
        spool = params.raw("SPOOL")
        if spool is None:
            return None
        text = os.path.join(spool, DEFAULT_STATE_FILE)
    return Path(os.path.normpath(config_dir / text.strip()))
