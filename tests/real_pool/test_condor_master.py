"""negotiatord as the NEGOTIATOR of a real HTCondor 25.14 ``condor_master`` (the minipool, run as
root as a central manager's master is): started, kept alive, reconfigured, stopped and started
again by HTCondor's own tools.

What the master does is ``src/condor_master.V6/masterDaemon.cpp``: it starts the daemon with the
sockets and sessions of ``DaemonCore::Create_Process`` (``CONDOR_INHERIT``), counts it alive once a
``DC_CHILDALIVE`` arrives (``condor_who`` asks it, ``Daemons::QueryReady``), and turns
``condor_reconfig``, ``condor_off`` and ``condor_off -fast`` into SIGHUP, SIGTERM and SIGQUIT
(``daemon::Reconfig``, ``Stop``, ``StopFast``); ``condor_on`` starts it again, and
``condor_restart -negotiator`` sends the daemon itself ``DC_OFF_GRACEFUL``, after which the master
starts it anew (``computeRealAction`` in ``src/condor_tools/tool.cpp``). The daemon is named by the
address it logs (``-addr``): without its ad in the collector, ``condor_restart`` cannot look it up.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.minipool import MiniPool, minipool, wait_for

NEGOTIATORD = Path(sys.executable).parent / "negotiatord"
POOL_CONFIG = f"""
DAEMON_LIST = $(DAEMON_LIST) NEGOTIATOR
NEGOTIATOR = {NEGOTIATORD}
NEGOTIATOR_ARGS = run --config $(LOCAL_DIR)/negotiatord.conf
# a daemon that exits unasked is started again this soon (NextStart: constant + factor^restarts)
MASTER_BACKOFF_CONSTANT = 1
"""
# negotiatord's own config reads the pool's, as on a central manager
NEGOTIATORD_CONFIG = b"""include : $(CONFIG_ROOT)/condor_config
NEGOTIATORD_STATE_DIR = $(LOCAL_DIR)/negotiatord
NEGOTIATORD_HTTP_PORT = 0
"""


@pytest.fixture(scope="module")
def pool() -> Iterator[MiniPool]:
    with minipool(cpus=1, user="root", config=POOL_CONFIG, files={"negotiatord.conf": NEGOTIATORD_CONFIG}) as running:
        yield running


def events(pool: MiniPool, name: str | None = None) -> list[dict]:
    """NEGOTIATOR_LOG's JSON lines (of event ``name``)."""
    path = pool.directory / "log" / "NegotiatorLog"
    lines = path.read_text().splitlines() if path.exists() else []
    found = [json.loads(line) for line in lines if line.startswith("{")]
    return [event for event in found if name is None or event["event"] == name]


def started(pool: MiniPool, count: int) -> dict:
    """The ``count``-th start's "ready" event, once it is logged."""
    return wait_for(lambda: len(events(pool, "negotiatord ready")) >= count and events(pool, "negotiatord ready")[
        count - 1], 60, f"negotiatord to start ({count})")


def master_says(pool: MiniPool) -> str:
    """The NEGOTIATOR's state as the master reports it to ``condor_who``."""
    for line in pool.condor("condor_who", "-quick", "-daemons").splitlines():
        if line.startswith("NEGOTIATOR ="):
            return line.split("=", 1)[1].strip().strip('"')
    return ""


def stopped(pool: MiniPool, count: int) -> None:
    try:
        wait_for(lambda: len(events(pool, "stopped")) >= count, 30, f"negotiatord to stop ({count})")
    except AssertionError as error:         # where the stop got to: the daemon logs its steps
        raise AssertionError(f"{error}; its last events: {events(pool)[-8:]}") from None
    wait_for(lambda: master_says(pool) not in ("Alive", "Startup") or None, 30, "the master to see it exit")


def test_the_master_starts_it_and_hears_its_keep_alives(pool):
    ready = started(pool, 1)
    assert ready["parent"].startswith("<127.0.0.1:") and "sock=master" in ready["parent"]
    assert pool.daemon_pid_of("negotiatord") > 0                       # the master's child
    # DC_CHILDALIVE over the family session the master handed down: the master counts it alive
    wait_for(lambda: master_says(pool) == "Alive", 30, "condor_who to show the NEGOTIATOR alive")
    # behind condor_shared_port: condor_ping reaches it as the master's sockets named it
    address = ready["command_address"]
    assert "sock=negotiator" in address
    table = pool.condor("condor_ping", "-address", address, "-table", "READ", "ADMINISTRATOR")
    assert [line.split()[4] for line in table.splitlines()[1:] if line.strip()] == ["ALLOW", "ALLOW"]


def test_condor_reconfig_reads_its_config_again(pool):
    started(pool, 1)
    before = len(events(pool, "config reloaded"))
    with open(pool.directory / "negotiatord.conf", "a") as config:
        config.write("NEGOTIATOR_CYCLE_DELAY = 7\n")
    pool.condor("condor_reconfig")
    wait_for(lambda: len(events(pool, "config reloaded")) > before, 30, "negotiatord to reload its config")


def test_condor_off_on_restart_and_a_fast_stop(pool):
    first = started(pool, 1)
    pool.condor("condor_off", "-negotiator")                            # SIGTERM
    stopped(pool, 1)
    assert [e["event"] for e in events(pool)][-2:] == ["stopping", "stopped"]
    assert not (pool.directory / "log" / ".negotiator_address").exists()

    pool.condor("condor_on", "-negotiator")
    second = started(pool, 2)
    assert second["pid"] != first["pid"]

    pool.condor("condor_restart", "-negotiator", "-addr", second["command_address"])   # DC_OFF_GRACEFUL
    third = started(pool, 3)                                            # the master started it anew
    assert third["pid"] != second["pid"]
    assert any(e["event"] == "shutdown requested" and e["command"] == "DC_OFF_GRACEFUL" for e in events(pool))
    wait_for(lambda: master_says(pool) == "Alive", 30, "the restarted NEGOTIATOR to be alive")

    pool.condor("condor_off", "-fast", "-negotiator")                   # SIGQUIT
    stopped(pool, 3)
    # each stop was a clean exit, as the master saw it (it reaps the last one a moment after its
    # log's last line)
    log = pool.directory / "log" / "MasterLog"
    exited = f"The NEGOTIATOR (pid {third['pid']}) exited"
    master_log = wait_for(lambda: exited in log.read_text() and log.read_text(), 30, "the master to reap it")
    for ready in (first, second, third):
        assert f"The NEGOTIATOR (pid {ready['pid']}) exited with status 0" in master_log
