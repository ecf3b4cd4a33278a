"""Where negotiatord keeps its replica under HTCondor's high availability: the file
condor_replication ships, named as ``AbstractReplicatorStateMachine::reinitialize`` names it, and
only when HAD controls the negotiator with replication on."""

from __future__ import annotations

from pathlib import Path

from negotiatord.settings import load_settings

UNDER_HAD = "SPOOL = /var/spool/cm\nMASTER_NEGOTIATOR_CONTROLLER = HAD\n"


def replica_file(tmp_path: Path, text: str) -> tuple[Path | None, tuple[str, ...]]:
    path = tmp_path / "negotiator.conf"
    path.write_text(text)
    settings = load_settings(path)
    return settings.service.replica_file, settings.warnings


def test_the_replica_is_state_file_under_had_with_replication(tmp_path):
    assert replica_file(tmp_path, UNDER_HAD + "HAD_USE_REPLICATION = True\nSTATE_FILE = $(SPOOL)/negotiatord.replica\n"
                        )[0] == Path("/var/spool/cm/negotiatord.replica")
    # else NEGOTIATOR_STATE_FILE, else the accountant log's name in SPOOL, as condor_replication reads them
    assert replica_file(tmp_path, UNDER_HAD + "HAD_USE_REPLICATION = true\nNEGOTIATOR_STATE_FILE = /cm/state\n"
                        )[0] == Path("/cm/state")
    assert replica_file(tmp_path, UNDER_HAD + "HAD_USE_REPLICATION = True\n")[0] == Path(
        "/var/spool/cm/Accountantnew.log")


def test_no_replica_without_had_or_without_replication(tmp_path):
    path, warnings = replica_file(tmp_path, "SPOOL = /s\nHAD_USE_REPLICATION = True\nSTATE_FILE = /s/x\n")
    assert path is None and not any("HAD" in w for w in warnings)
    path, warnings = replica_file(tmp_path, UNDER_HAD)
    assert path is None
    assert any("MASTER_NEGOTIATOR_CONTROLLER = HAD without HAD_USE_REPLICATION" in w for w in warnings)
