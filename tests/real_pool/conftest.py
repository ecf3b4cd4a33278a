"""The pool every test of this directory shares, and negotiatord on it as an administrator runs it.

The pool is a collector, two schedds (``vm`` and ``schedd2@vm``, a second schedd of the same host,
as HTCondor's ``-local-name`` runs one) and a startd with two 4-cpu partitionable slots under a
consumption policy, secured with IDTOKENS. Each test leaves it idle (:meth:`MiniPool.remove_all`).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.minipool import MiniPool, minipool
from tests.service_harness import DaemonProcess

# SlotWeight counts memory too, so that a match's cost (SlotWeight before minus after) is not its
# cpu count: 1 + 512/1024 for each job below.
POOL_CONFIG = """
SLOT_WEIGHT = Cpus + Memory / 1024.0
SCHEDD_DEBUG = D_FULLDEBUG D_MATCH
# submitter ads reach the collector within seconds of a submit, and a claim is not kept for the
# next job (every job is matched, and a removed job's slot is free at once)
SCHEDD_INTERVAL = 2
CLAIM_WORKLIFE = 0
# nor does a schedd start a job on what a p-slot it claimed has left ("Received match from startd,
# leftover slot ad"): every job that runs here was matched by the negotiator under test
CLAIM_PARTITIONABLE_LEFTOVERS = False
# and a cycle runs when a test asks for it, not also when a schedd's RESCHEDULE after a submit
# finds negotiatord through its ad (test_found_through_the_collector has a pool that sends it)
SCHEDD_SEND_RESCHEDULE = False
SCHEDD2 = $(SCHEDD)
SCHEDD2_ARGS = -local-name schedd2
SCHEDD2.SCHEDD_NAME = schedd2
SCHEDD2.SPOOL = $(SPOOL)/schedd2
SCHEDD2.SCHEDD_LOG = $(LOG)/SchedLog2
SCHEDD2.SCHEDD_ADDRESS_FILE = $(LOG)/.schedd2_address
SCHEDD2.SCHEDD_DAEMON_AD_FILE = $(LOG)/.schedd2_classad
DAEMON_LIST = $(DAEMON_LIST) SCHEDD2
"""
SCHEDD2 = "schedd2@vm"
JOB = {"request_memory": "512"}


@pytest.fixture(scope="package")
def pool() -> Iterator[MiniPool]:
    with minipool(cpus=8, pslots=2, config=POOL_CONFIG) as running:
        yield running


def negotiatord(pool: MiniPool, home: Path, tokens: Path | None = None, *, start: bool = True,
                **settings: str) -> DaemonProcess:
    """A negotiatord configured as an administrator would: the pool's config, its own state and
    HTTP port, its own token. Cycles run on request (``NEGOTIATOR_INTERVAL`` is an hour)."""
    directory = tokens if tokens is not None else pool.token_directory()
    daemon = DaemonProcess(home, include=str(pool.config), settings={
        "SEC_TOKEN_DIRECTORY": str(directory), "SEC_CLIENT_AUTHENTICATION_METHODS": "IDTOKENS",
        "NEGOTIATOR_INTERVAL": "3600", "NEGOTIATOR_MIN_INTERVAL": "0", "NEGOTIATOR_CYCLE_DELAY": "0",
        **settings})
    if start:
        daemon.start()
    return daemon


