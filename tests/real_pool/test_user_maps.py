"""HTCondor's two negotiator user maps (``NEGOTIATOR_CLASSAD_USER_MAP_NAMES``) against the minipool's
schedd and HTCondor 25.14's own ``condor_userprio``.

* ``GROUP_PREFIX`` (``Matchmaker::TransformSubmitterAd``, ``src/condor_negotiator.V6/matchmaker.cpp``):
  a submitter's accounting domain mapped to P is charged as ``P.<Name>``, and its schedd is asked
  about ``OriginalName`` in the ``NEGOTIATE`` ad's ``Owner`` (``Matchmaker::negotiate``), so the
  job still runs.
* ``PRIORITY_FACTOR_AUTHORIZATION`` (``SET_PRIORITYFACTOR_commandHandler``): a client that is no
  administrator may set the factor of a submitter whose name starts with one of the comma list
  of prefixes the map gives its identity, and of no other.
"""

from __future__ import annotations

import signal
from collections.abc import Iterator

import pytest

from tests.minipool import MiniPool, wait_for
from tests.real_pool.conftest import JOB, negotiatord
from tests.real_pool.test_condor_userprio import tool, userprio_ads
from tests.service_harness import DaemonProcess

USER = "minipool@minipool"
PREFIXED = f"group_physics.{USER}"


@pytest.fixture(scope="module")
def daemon(pool: MiniPool, tmp_path_factory: pytest.TempPathFactory) -> Iterator[DaemonProcess]:
    running = negotiatord(pool, tmp_path_factory.mktemp("user_maps") / "negotiatord", **{
        "NEGOTIATOR_CLASSAD_USER_MAP_NAMES": "GROUP_PREFIX PRIORITY_FACTOR_AUTHORIZATION",
        # the map file's form: method, then a literal or /regex/, then the result
        "CLASSAD_USER_MAPDATA_GROUP_PREFIX": "* minipool group_physics",
        "CLASSAD_USER_MAPDATA_PRIORITY_FACTOR_AUTHORIZATION": "* /^bob@.*$/ group_chemistry.,group_physics.",
    })
    try:
        running.wait_for_cycle(0)
        yield running
    finally:
        running.stop()


def test_group_prefix_charges_the_prefixed_submitter_and_the_job_runs(pool, daemon):
    cluster = pool.submit(1, arguments="1", **JOB)
    try:
        pool.wait_until_advertised(USER)
        daemon.reschedule()
        [match] = daemon.get("/v1/cycles/last")["matches"]
        assert match["submitter"] == PREFIXED
        # the schedd was asked about minipool@minipool, whose job it started
        wait_for(lambda: any(job["ClusterId"] == cluster for job in pool.history()), 60, "the job to complete")
        assert PREFIXED in userprio_ads(pool, daemon) and USER not in userprio_ads(pool, daemon)
    finally:
        pool.remove_all()


def test_priority_factor_authorization_lets_bob_set_the_factors_of_his_groups_only(pool, daemon):
    bob = pool.token_directory("bob@minipool")
    allowed = tool(pool, daemon, "condor_userprio", "-setfactor", "group_physics.dave@minipool", "7", identity=bob)
    assert allowed.returncode == 0, allowed.stderr
    # a double crosses CEDAR as a 31-bit mantissa (stream.cpp)
    [factor] = userprio_ads(pool, daemon, "PriorityFactor")["group_physics.dave@minipool"]
    assert float(factor) == pytest.approx(7.0)

    refused = tool(pool, daemon, "condor_userprio", "-setfactor", "dave@minipool", "7", identity=bob)
    assert refused.returncode == 1 and "PRIORITY_FACTOR_AUTHORIZATION maps bob@minipool" in refused.stderr
    assert "dave@minipool" not in userprio_ads(pool, daemon)


def test_a_reload_replaces_the_maps(pool, daemon):
    """A reconfig loads the maps again (``reconfig_user_maps``): bob's prefixes, changed in the
    config, decide from the reload on."""
    bob = pool.token_directory("bob@minipool")
    daemon.write_config("CLASSAD_USER_MAPDATA_PRIORITY_FACTOR_AUTHORIZATION = * bob@minipool group_chemistry.")
    seen = len(daemon.messages)
    daemon.signal(signal.SIGHUP)
    daemon.wait_for_message("READY=1", since=daemon.wait_for_message("RELOADING=1", since=seen))
    assert daemon.status()["reload"]["ok"] is True
    refused = tool(pool, daemon, "condor_userprio", "-setfactor", "group_physics.erin@minipool", "3", identity=bob)
    assert refused.returncode == 1 and "maps bob@minipool to group_chemistry." in refused.stderr
    allowed = tool(pool, daemon, "condor_userprio", "-setfactor", "group_chemistry.erin@minipool", "3", identity=bob)
    assert allowed.returncode == 0, allowed.stderr
