"""negotiatord under HTCondor 25.14's high availability: two central managers on loopback, each a
``condor_master`` running ``condor_had``, ``condor_replication`` and negotiatord as its NEGOTIATOR,
beside a pool (collector, schedd, startd) of a third master. Only the leader's master starts the
NEGOTIATOR (``MASTER_NEGOTIATOR_CONTROLLER = HAD``: ``masterDaemon.cpp`` forwards the start to HAD,
which sends ``CHILD_ON`` once ``HADStateMachine::step`` makes it the leader); the leader writes its
replica to ``STATE_FILE`` after each cycle and ``condor_replication`` copies it to the other. When
the leader's central manager is killed (``kill -9`` of its master and every daemon it started), the
standby's HAD takes over, its negotiatord adopts the replica, and goes on with the usage it had:
jobs submitted after the failover run, and no job is matched twice.

What loopback needs that separate hosts do not: each central manager's HAD and replication daemon
on a port of its own (``-p``), listed in ``HAD_LIST`` and ``REPLICATION_LIST`` in the same order on
both; family sessions off for them (on one address HTCondor takes the other central manager's
daemons for its own family and refuses its session); and the second central manager started once
the first leads, since two HADs that send at the same moment each wait for the other's answer
until ``HAD_CONNECTION_TIMEOUT`` (``sendCommandToOthers`` blocks) and neither hears the other.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from negotiatord.service.replica import read_replica
from tests.minipool import HTCONDOR, MiniPool, minipool, wait_for
from tests.service_harness import free_port

NEGOTIATORD = Path(sys.executable).parent / "negotiatord"
SUBMITTER = "minipool@minipool"
POOL_CONFIG = """
# every job is matched by a negotiator: no claim is kept for the next job, nor a p-slot's leftovers
CLAIM_WORKLIFE = 0
CLAIM_PARTITIONABLE_LEFTOVERS = False
SCHEDD_INTERVAL = 2
"""
# HAD's interval is (2 x HAD_CONNECTION_TIMEOUT x number of HADs + 1) x 2 seconds
# (HADStateMachine::softReconfigure): 10 s here; a leader is elected, or replaced, within two or three.
CENTRAL_MANAGER = """
include : {pool}/condor_config
LOCAL_DIR = {directory}
LOCAL_CONFIG_DIR = {directory}/config.d
MASTER_NAME = {name}
USE_SHARED_PORT = False
DAEMON_LIST = MASTER, HAD, REPLICATION, NEGOTIATOR
HAD_ARGS = -p {had}
REPLICATION_ARGS = -p {replication}
HAD_LIST = {had_list}
REPLICATION_LIST = {replication_list}
HAD_CONTROLLEE = NEGOTIATOR
MASTER_NEGOTIATOR_CONTROLLER = HAD
HAD_USE_REPLICATION = True
HAD_CONNECTION_TIMEOUT = 1
REPLICATION_INTERVAL = 2
TRANSFERER = $(SBIN)/condor_transferer
STATE_FILE = $(SPOOL)/negotiatord.replica
HAD.SEC_USE_FAMILY_SESSION = False
REPLICATION.SEC_USE_FAMILY_SESSION = False
TRANSFERER.SEC_USE_FAMILY_SESSION = False
NEGOTIATOR = {negotiatord}
NEGOTIATOR_ARGS = run --config $(LOCAL_DIR)/negotiatord.conf
NEGOTIATOR_INTERVAL = 2
NEGOTIATOR_MIN_INTERVAL = 0
NEGOTIATOR_CYCLE_DELAY = 0
# one name on both: the collector keys Negotiator ads by Name, so the new leader's replaces the dead one's
NEGOTIATOR_NAME = negotiatord@minipool
"""
NEGOTIATORD_CONFIG = """
include : $(CONFIG_ROOT)/condor_config
NEGOTIATORD_STATE_DIR = $(LOCAL_DIR)/negotiatord
NEGOTIATORD_HTTP_PORT = 0
SEC_TOKEN_DIRECTORY = {tokens}
SEC_CLIENT_AUTHENTICATION_METHODS = IDTOKENS
"""


@dataclass
class CentralManager:
    """One central manager: its master, run as root as a central manager's is, in ``directory``."""

    directory: Path
    process: subprocess.Popen | None = None

    @property
    def config(self) -> Path:
        return self.directory / "condor_config"

    @property
    def replica_file(self) -> Path:
        return self.directory / "spool" / "negotiatord.replica"

    def start(self) -> None:
        env = {**os.environ, "CONDOR_CONFIG": str(self.config), "LD_LIBRARY_PATH": str(HTCONDOR / "lib")}
        self.process = subprocess.Popen([str(HTCONDOR / "sbin" / "condor_master"), "-f"], env=env,
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def family(self) -> list[int]:
        """The master and the daemons it started."""
        if self.process is None or self.process.poll() is not None:
            return []
        children = subprocess.run(["pgrep", "-P", str(self.process.pid)], capture_output=True, text=True).stdout
        return [self.process.pid, *(int(pid) for pid in children.split())]

    def kill(self) -> None:
        """kill -9 of the master and every daemon it started, at once, as a central manager's crash."""
        for pid in self.family():
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        if self.process is not None:
            self.process.wait(30)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()            # condor_master shuts its daemons down on SIGTERM
            try:
                self.process.wait(60)
            except subprocess.TimeoutExpired:
                self.kill()

    def events(self, name: str) -> list[dict]:
        """NEGOTIATOR_LOG's JSON lines of event ``name``."""
        path = self.directory / "log" / "NegotiatorLog"
        lines = path.read_text().splitlines() if path.exists() else []
        return [event for event in map(json.loads, (line for line in lines if line.startswith("{")))
                if event["event"] == name]

    def get(self, path: str) -> dict:
        """A GET of negotiatord's HTTP API (its URL as its last start logged it)."""
        url = self.events("negotiatord ready")[-1]["url"]
        with urllib.request.urlopen(url + path, timeout=10) as answer:
            return json.load(answer)


def central_managers(pool: MiniPool) -> tuple[CentralManager, CentralManager]:
    """Two central managers' configs, HAD and replication on ports of their own, in the pool's directory."""
    had, replication = [free_port(), free_port()], [free_port(), free_port()]
    tokens = pool.token_directory()           # negotiatord@minipool, owned by root who runs negotiatord
    managers = []
    for index in (0, 1):
        directory = pool.directory / f"cm{index + 1}"
        for sub in ("log", "spool", "execute", "lock", "run", "config.d"):
            (directory / sub).mkdir(parents=True)
        directory.joinpath("condor_config").write_text(CENTRAL_MANAGER.format(
            pool=pool.directory, directory=directory, name=f"cm{index + 1}", had=had[index],
            replication=replication[index], had_list=", ".join(f"127.0.0.1:{port}" for port in had),
            replication_list=", ".join(f"127.0.0.1:{port}" for port in replication), negotiatord=NEGOTIATORD))
        directory.joinpath("negotiatord.conf").write_text(NEGOTIATORD_CONFIG.format(tokens=tokens))
        # its daemons write as the pool's user (CONDOR_IDS); negotiatord, run as root, anywhere
        subprocess.run(["chown", "-R", f"{os.stat(pool.directory).st_uid}:{os.stat(pool.directory).st_gid}",
                        str(directory)], check=True)
        managers.append(CentralManager(directory))
    return managers[0], managers[1]


def usage_in(replica_file: Path) -> float:
    """The submitter's accumulated usage in a replica; 0 if it has none."""
    with sqlite3.connect(f"file:{replica_file}?mode=ro&immutable=1", uri=True) as replica:
        row = replica.execute("SELECT accumulated_usage FROM customers WHERE name = ?", (SUBMITTER,)).fetchone()
    return 0.0 if row is None else row[0]


def matched_jobs(match_log: Path, after_cycle: int = 0) -> list[str]:
    with sqlite3.connect(f"file:{match_log}?mode=ro", uri=True) as log:
        return [row[0] for row in log.execute(
            "SELECT job FROM matches WHERE job IS NOT NULL AND cycle_id > ? AND (published = 1 OR handed = 1)",
            (after_cycle,))]


def test_the_standby_takes_over_with_the_usage_it_had_and_matches_nothing_twice():
    with minipool(cpus=4, config=POOL_CONFIG) as pool:
        leader, standby = central_managers(pool)
        try:
            leader.start()
            running = pool.submit(2, arguments="60")        # still running when the leader dies
            wait_for(lambda: leader.events("negotiatord ready"), 90, "HAD to elect the first central manager")
            standby.start()                                  # once the first leads (see the docstring)
            wait_for(lambda: len(pool.jobs(f"ClusterId == {running} && JobStatus == 2")) == 2, 60,
                     "the leader's matches to run")
            # the standby's master does not start its negotiatord; the leader's replica reaches it
            # with the usage of the running jobs
            replica = wait_for(lambda: (r := read_replica(standby.replica_file)) and usage_in(standby.replica_file)
                               and r, 60, "the replica with usage to reach the standby")
            assert not standby.events("negotiatord ready")

            leader.kill()
            killed = time.monotonic()
            carried = usage_in(standby.replica_file)
            wait_for(lambda: standby.events("negotiatord ready"), 60, "the standby's negotiatord to start")
            took_over_s = time.monotonic() - killed
            adopted = standby.events("replica adopted; cycle ids and sequence numbers go on after the highest "
                                     "either side gave")
            assert adopted and adopted[0]["replica_cycle"] >= replica.cycle_id
            usage = {c["name"]: c["accumulated_usage_s"] for c in standby.get("/v1/accountant")["customers"]}
            assert usage[SUBMITTER] >= carried > 0

            fresh = pool.submit(2, arguments="1")
            wait_for(lambda: len([j for j in pool.history() if j["ClusterId"] == fresh]) == 2, 60,
                     "the jobs submitted after the failover to run")
            first_cycle = standby.events("cycle")[0]
            print(f"\nfailover: negotiatord ready on the standby {took_over_s:.1f} s after the kill "
                  f"(HAD interval 10 s), first cycle {first_cycle['cycle']}; usage carried {carried:.1f} s")
            assert took_over_s < 60
            assert first_cycle["cycle"] == adopted[0]["next_cycle"] > adopted[0]["replica_cycle"]
            address = standby.events("negotiatord ready")[-1]["command_address"]
            wait_for(lambda: pool.condor("condor_status", "-negotiator", "-af", "MyAddress").split() == [address],
                     30, "the standby's Negotiator ad to replace the leader's in the collector")
            # and HTCondor's condor_userprio, which finds it there, shows the usage carried over
            assert SUBMITTER in pool.condor("condor_userprio", "-allusers", "-usage")

            # no job was matched twice: the leader's matches and the standby's own are apart, and
            # no job started twice
            before = matched_jobs(leader.directory / "negotiatord" / "matches.sqlite")
            after = matched_jobs(standby.directory / "negotiatord" / "matches.sqlite", adopted[0]["replica_cycle"])
            assert len(before) == len(set(before)) == 2 and len(after) == len(set(after)) == 2
            assert not set(before) & set(after)
            jobs = pool.jobs() + pool.history()
            assert all(job["NumJobStarts"] <= 1 for job in jobs), jobs
        finally:
            leader.kill()
            standby.stop()
