"""HTCondor's tools and schedds find negotiatord as they find HTCondor's negotiator: through its
Negotiator ad in the collector, with no ``NEGOTIATOR_HOST``.

``Daemon::locate`` (``src/condor_daemon_client/daemon.cpp``) asks the collector for the
negotiator's ad and connects to its ``MyAddress``. ``condor_userprio -negotiator`` then queries it
directly, and a schedd, once ``condor_submit`` has queued a job, sends it ``RESCHEDULE``
(``Scheduler::sendReschedule``, ``src/condor_schedd.V6/schedd.cpp``), which starts a cycle.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator

import pytest

from tests.minipool import HTCONDOR, MiniPool, minipool, wait_for
from tests.real_pool.conftest import JOB, POOL_CONFIG, negotiatord


@pytest.fixture(scope="module")
def pool() -> Iterator[MiniPool]:
    """The directory's pool, whose schedds send RESCHEDULE after a submit, as by default."""
    with minipool(cpus=2, pslots=1, config=POOL_CONFIG + "SCHEDD_SEND_RESCHEDULE = True\n") as running:
        yield running


def test_condor_userprio_and_a_schedds_reschedule_reach_negotiatord_through_its_ad(pool, tmp_path):
    daemon = negotiatord(pool, tmp_path / "negotiatord")     # NEGOTIATOR_INTERVAL is an hour
    try:
        first = daemon.wait_for_cycle(0)["Id"]
        address = daemon.status()["command_port"]["address"]
        advertised = wait_for(lambda: pool.condor("condor_status", "-negotiator", "-af", "MyAddress").split() or None,
                              30, "the Negotiator ad in the collector")
        assert advertised == [address]

        # condor_userprio, with no NEGOTIATOR_HOST, asks the negotiator the collector names
        environment = pool.env()
        environment.pop("_CONDOR_NEGOTIATOR_HOST", None)
        done = subprocess.run([str(HTCONDOR / "bin" / "condor_userprio"), "-negotiator", "-allusers"],
                              env=environment, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0 and "Can't locate" not in done.stderr, done.stderr

        # condor_submit: the schedd sends RESCHEDULE to the negotiator it finds, which negotiates
        # at once (without it, the next cycle is an hour away)
        cluster = pool.submit(1, **JOB)
        daemon.wait_for_cycle(first, timeout=60)
        asked = [event for event in daemon.log_events() if event.get("event") == "reschedule requested"]
        assert asked and all(event["by"] for event in asked)
        wait_for(lambda: [job for job in pool.history() if job["ClusterId"] == cluster] or None, 90,
                 "the submitted job to run and complete", every=1)
    finally:
        daemon.stop()
        pool.remove_all()
