"""HTCondor 25.14's own ``condor_userprio`` and ``condor_ping`` against negotiatord's command port,
on the minipool: reads, writes, refusals, and a ceiling that takes effect in the next cycle.

``condor_userprio`` finds the negotiator as ``Daemon::locate`` does (``src/condor_daemon_client/
daemon.cpp``): here through ``NEGOTIATOR_HOST``, set to the daemon's ``host:port`` (through the
collector: ``test_found_through_the_collector``). Its queries are
``QUERY_ACCOUNTING_ADS`` (``-negotiator``, ``-allusers``, named users), ``GET_PRIORITY`` (with
``USERPRIO_USE_NEGOTIATOR_MODULAR_QUERY`` false), ``GET_PRIORITY_ROLLUP`` (``-grouprollup``) and
``GET_RESLIST``; its writes the commands ``matchmaker.cpp`` registers at ADMINISTRATOR
(``SET_PRIORITYFACTOR`` at WRITE, then ADMINISTRATOR). The tools run as root with FS, which the
minipool maps to its own user, an administrator there (``ALLOW_ADMINISTRATOR``); ``bob@minipool``
(an IDTOKENS identity) may write but is no administrator.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.minipool import HTCONDOR, MiniPool, wait_for
from tests.real_pool.conftest import JOB, negotiatord
from tests.service_harness import DaemonProcess

USER = "minipool@minipool"      # the pool user, who submits the jobs


@pytest.fixture(scope="module")
def daemon(pool: MiniPool, tmp_path_factory: pytest.TempPathFactory) -> Iterator[DaemonProcess]:
    running = negotiatord(pool, tmp_path_factory.mktemp("userprio") / "negotiatord")
    try:
        running.wait_for_cycle(0)     # the cycle due at start-up, before the tests' jobs are queued
        yield running
    finally:
        running.stop()


def tool(pool: MiniPool, daemon: DaemonProcess, *args: str, identity: Path | None = None,
         **knobs: str) -> subprocess.CompletedProcess:
    """One of HTCondor's tools, pointed at the daemon by ``NEGOTIATOR_HOST``; as ``identity``'s
    token when given, else as root through FS."""
    address = daemon.status()["command_port"]["address"]
    host_and_port = address.strip("<>").split("?")[0]
    env = {**pool.env(), "_CONDOR_NEGOTIATOR_HOST": host_and_port,
           **{f"_CONDOR_{name}": value for name, value in knobs.items()}}
    if identity is not None:
        env.update(_CONDOR_SEC_TOKEN_DIRECTORY=str(identity), _CONDOR_SEC_CLIENT_AUTHENTICATION_METHODS="IDTOKENS")
    program = HTCONDOR / "bin" / args[0]
    return subprocess.run([str(program), *args[1:]], env=env, capture_output=True, text=True, timeout=60)


def userprio_ads(pool: MiniPool, daemon: DaemonProcess, *attributes: str) -> dict[str, list[str]]:
    """``condor_userprio -negotiator -allusers -af Name ...``: the customers' ads over QUERY_ACCOUNTING_ADS."""
    done = tool(pool, daemon, "condor_userprio", "-negotiator", "-allusers", "-af", "Name", *attributes)
    assert done.returncode == 0, done.stderr
    return {line.split()[0]: line.split()[1:] for line in done.stdout.splitlines() if line.strip()}


def test_a_ceiling_set_with_condor_userprio_holds_the_next_cycle(pool, daemon):
    """matchmaker.cpp negotiate(): a submitter stops at its ceiling. Each job costs 1.5 (SLOT_WEIGHT
    counts memory): a ceiling of 2 lets one of three start."""
    set_ceiling = tool(pool, daemon, "condor_userprio", "-setceiling", USER, "2")
    assert set_ceiling.returncode == 0 and set_ceiling.stdout.strip() == f"The ceiling of {USER} was set to 2"
    pool.submit(3, arguments="60", **JOB)
    try:
        pool.wait_until_advertised(USER, idle=3)
        daemon.reschedule()
        last = daemon.get("/v1/cycles/last")
        assert len(last["matches"]) == 1
        assert {r["reason"] for r in last["rejections"]} == {"submitter ceiling reached"}

        # the reads: QUERY_ACCOUNTING_ADS, GET_PRIORITY, GET_PRIORITY_ROLLUP, GET_RESLIST
        ads = userprio_ads(pool, daemon, "WeightedResourcesUsed", "Ceiling", "Floor")
        assert ads[USER] == ["1.5", "2", "0"]
        table = tool(pool, daemon, "condor_userprio", "-allusers", USERPRIO_USE_NEGOTIATOR_MODULAR_QUERY="false")
        row = next(line for line in table.stdout.splitlines() if line.startswith(USER))
        # Effective Priority, Priority Factor, Wghted In Use (no decimals), ..., Submitter Ceiling
        assert row.split()[3] == "2" and row.split()[-1] == "2.00"
        rollup = tool(pool, daemon, "condor_userprio", "-grouprollup", "-allusers")
        assert rollup.returncode == 0 and any(line.startswith(USER) for line in rollup.stdout.splitlines())
        resources = tool(pool, daemon, "condor_userprio", "-getreslist", USER)
        assert "Number of Resources Used: 1" in resources.stdout
    finally:
        tool(pool, daemon, "condor_userprio", "-setceiling", USER, "-1")
        pool.remove_all()


def test_condor_userprios_writes_reach_the_accountant(pool, daemon):
    """Each write as user_prio.cpp sends it and matchmaker.cpp's handler takes it, read back with
    condor_userprio over QUERY_ACCOUNTING_ADS."""
    carol = "carol@minipool"
    writes = [("-setfactor", "4"), ("-setprio", "3"), ("-setaccum", "7200"), ("-setbegin", "1700000000"),
              ("-setlast", "1700003600"), ("-setfloor", "2"), ("-setceiling", "5")]
    for option, value in writes:
        done = tool(pool, daemon, "condor_userprio", option, carol, value)
        assert done.returncode == 0, (option, done.stderr)
    ads = userprio_ads(pool, daemon, "PriorityFactor", "Priority", "WeightedAccumulatedUsage", "BeginUsageTime",
                       "LastUsageTime", "Floor", "Ceiling")
    factor, priority, usage, begin, last, floor, ceiling = map(float, ads[carol])
    # a double crosses CEDAR as a 31-bit mantissa (stream.cpp), as it does to HTCondor's negotiator
    assert factor == pytest.approx(4.0) and priority == pytest.approx(12.0) and usage == pytest.approx(7200)
    assert (begin, last, floor, ceiling) == (1700000000, 1700003600, 2, 5)
    assert tool(pool, daemon, "condor_userprio", "-resetusage", carol).returncode == 0
    assert float(userprio_ads(pool, daemon, "WeightedAccumulatedUsage")[carol][0]) == 0.0
    assert tool(pool, daemon, "condor_userprio", "-setaccum", carol, "60").returncode == 0
    assert tool(pool, daemon, "condor_userprio", "-resetall").returncode == 0
    assert float(userprio_ads(pool, daemon, "WeightedAccumulatedUsage")[carol][0]) == 0.0
    assert tool(pool, daemon, "condor_userprio", "-delete", carol).returncode == 0
    assert carol not in userprio_ads(pool, daemon)


def test_writes_need_the_administrator_level_and_a_refusal_names_it(pool, daemon):
    bob = pool.token_directory("bob@minipool")
    since = len(daemon.log_text())
    refused = tool(pool, daemon, "condor_userprio", "-setprio", "dave@minipool", "9", identity=bob)
    assert refused.returncode == 1 and "failed to send SET_PRIORITY" in refused.stderr
    # the tool may exit before the daemon has logged why
    def logged_denial() -> dict | None:
        lines = [line for line in daemon.log_text()[since:].splitlines() if line.startswith("{")]
        return next((event for event in map(json.loads, lines) if event["event"] == "permission denied"), None)
    denial = wait_for(logged_denial, 10, "the denial to be logged")
    assert denial["event"] == "permission denied" and denial["command"] == "SET_PRIORITY"
    assert (denial["user"], denial["needs"]) == ("bob@minipool", "ADMINISTRATOR")
    assert "ALLOW_ADMINISTRATOR" in denial["reason"]
    # SET_PRIORITYFACTOR takes WRITE, then asks for ADMINISTRATOR and answers why not
    factor = tool(pool, daemon, "condor_userprio", "-setfactor", "dave@minipool", "9", identity=bob)
    assert factor.returncode == 1 and "ADMINISTRATOR" in factor.stderr
    assert "dave@minipool" not in userprio_ads(pool, daemon)
    # reading takes READ, which bob holds
    assert tool(pool, daemon, "condor_userprio", "-negotiator", "-allusers", identity=bob).returncode == 0


@pytest.mark.parametrize("who, decisions", [
    ("bob", {"READ": "ALLOW", "WRITE": "ALLOW", "NEGOTIATOR": "FAIL", "ADMINISTRATOR": "FAIL"}),
    ("root", {"READ": "ALLOW", "WRITE": "ALLOW", "NEGOTIATOR": "ALLOW", "ADMINISTRATOR": "ALLOW"}),
])
def test_condor_ping_sees_the_pools_authorization_levels(pool, daemon, who, decisions):
    """DC_SEC_QUERY for each level's DC_NOP, decided by the pool's ALLOW lists as IpVerify would:
    READ is *, WRITE *@minipool, NEGOTIATOR and ADMINISTRATOR name the pool's daemons."""
    identity = pool.token_directory("bob@minipool") if who == "bob" else None
    address = daemon.status()["command_port"]["address"]
    done = tool(pool, daemon, "condor_ping", "-address", address, "-table", *decisions, identity=identity)
    rows = {line.split()[0]: line.split() for line in done.stdout.splitlines()[1:] if line.strip()}
    assert {level: rows[level][4] for level in decisions} == decisions
    method = "IDTOKENS" if who == "bob" else "FS"
    assert {rows[level][1] for level in decisions if decisions[level] == "ALLOW"} == {method}


def test_a_token_the_pool_did_not_sign_does_not_authenticate(pool, daemon, tmp_path):
    """The daemon signs the token's header and payload with the key its kid names (POOL:
    SEC_TOKEN_POOL_SIGNING_KEY_FILE, condor_auth_passwd.cpp); a token signed with another key
    yields another signature, and neither side's proof holds."""
    def part(value: dict) -> str:
        return base64.urlsafe_b64encode(json.dumps(value).encode()).rstrip(b"=").decode()
    unsigned = (part({"alg": "HS256", "typ": "JWT", "kid": "POOL"}) + "." +
                part({"iss": "minipool", "sub": "mallory@minipool", "iat": int(time.time()), "jti": "forged"}))
    signature = hmac.new(os.urandom(32), unsigned.encode(), hashlib.sha256).digest()
    tokens = tmp_path / "tokens"
    tokens.mkdir(mode=0o700)
    (tokens / "forged").write_text(unsigned + "." + base64.urlsafe_b64encode(signature).rstrip(b"=").decode())
    (tokens / "forged").chmod(0o600)
    address = daemon.status()["command_port"]["address"]
    done = tool(pool, daemon, "condor_ping", "-address", address, "-table", "READ", identity=tokens)
    assert done.stdout.splitlines()[1].split()[1:5] == ["FAIL"] * 4
    refusal = wait_for(lambda: [e for e in daemon.log_events() if e["event"] == "command refused"], 10,
                       "the refusal in the daemon's log")
    assert "IDTOKENS" in refusal[-1]["reason"] and "key" in refusal[-1]["reason"]
