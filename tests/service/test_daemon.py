"""negotiatord run, end to end: the real daemon on a loopback port, driven over HTTP.

Slots are the OSPool central manager's own ads (posted as the raw ``condor_status -any -l`` dump:
the daemon must take the Machine ads and refuse the rest by position); jobs are HTCondor's real
job and history ads, some re-targeted at the OSPool. The daemon's clock starts at the sample's
own cycle time (``--now``) so the glideins' START expressions hold. Every published match is
re-checked with classad2 alone, and its charge is looked up in the accountant database.
"""

from __future__ import annotations

import gzip
import json
import signal
import subprocess
import sys
import threading
import time
import urllib.request

import classad2
import pytest
from prometheus_client.parser import text_string_to_metric_families

from negotiatord.accountant import AccountantStore

from tests.service_harness import NOW, POOL, ROOT, DaemonProcess
from tests.commands.test_negotiate import as_ospool_user_would_submit, real_job_ads, verify_with_classad2

MAX_BODY = 8 * 1024 * 1024   # the pool sample is 4.4 MB of text


@pytest.fixture(scope="module")
def daemon(tmp_path_factory):
    process = DaemonProcess(tmp_path_factory.mktemp("daemon"),
                            settings={"NEGOTIATOR_INTERVAL": "3600", "NEGOTIATOR_CYCLE_DELAY": "0",
                                      "NEGOTIATOR_MIN_INTERVAL": "0",
                                      "NEGOTIATORD_MAX_BODY_BYTES": str(MAX_BODY)},
                            args=["--now", str(NOW)], watchdog_usec=300_000)
    with process.running():
        yield process


@pytest.fixture(scope="module")
def jobs() -> list[classad2.ClassAd]:
    real = real_job_ads()
    return real + [as_ospool_user_would_submit(ad) for ad in real
                   if "GlobalJobId" in ad and "PoolName" in str(ad.get("Requirements"))]


@pytest.fixture(scope="module")
def pool_text() -> str:
    return gzip.decompress(POOL.read_bytes()).decode()


class _EventStream:
    """Reads the server-sent match events in a thread."""

    def __init__(self, url: str) -> None:
        self.events: list[dict] = []
        self.response = urllib.request.urlopen(url, timeout=30)
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self) -> None:
        event: dict = {}
        try:
            for raw in self.response:
                line = raw.decode().rstrip("\n")
                if not line:
                    if "data" in event:
                        self.events.append(event)
                    event = {}
                elif not line.startswith(":"):
                    field, _, value = line.partition(": ")
                    event[field] = value
        except OSError:
            pass

    def wait_for(self, count: int, timeout: float = 30.0) -> list[dict]:
        deadline = time.monotonic() + timeout
        while len(self.events) < count and time.monotonic() < deadline:
            time.sleep(0.05)
        return self.events


def test_the_daemon_reports_ready_and_keeps_the_watchdog_fed(daemon):
    assert any("READY=1" in m.splitlines() for m in daemon.messages)
    status = daemon.status()
    assert status["daemon"]["url"] == daemon.url and status["daemon"]["clock_offset_s"] < 0
    first = daemon.wait_for_message("WATCHDOG=1", timeout=5)
    daemon.wait_for_message("WATCHDOG=1", timeout=5, since=first + 1)


def test_real_ads_in_a_cycle_and_matches_out(daemon, jobs, pool_text):
    daemon.wait_for_cycle(0)                          # the start-up cycle, over an empty pool
    answer = daemon.request("POST", "/v1/ads/slots", pool_text)
    assert answer.status == 200
    reference = list(classad2.parseAds(pool_text, classad2.ParserType.Old))
    assert answer.body["accepted"] == answer.body["filed"] == 143
    refused = answer.body["rejected"]
    assert len(refused) == len(reference) - 143
    assert all(reference[r["position"] - 1].get("MyType") != "Machine" and "MyType" in r["reason"] for r in refused)

    answer = daemon.request("POST", "/v1/ads/jobs", "\n".join(ad.printOld() for ad in jobs))
    assert answer.status == 200
    assert answer.body["accepted"] + len(answer.body["rejected"]) == len(jobs)

    stream = _EventStream(daemon.url + "/v1/matches/stream?after=0")
    cycle = daemon.reschedule()
    page = daemon.get("/v1/matches?after=0&limit=10000")
    matches = page["matches"]
    assert matches and all(m["cycle"] == cycle and m["time"] == pytest.approx(NOW, abs=120) for m in matches)
    assert [m["seq"] for m in matches] == sorted({m["seq"] for m in matches}) and page["last_seq"] == matches[-1]["seq"]

    # every match is one classad2 agrees with, replayed in order on the real ads
    slots = {ad["Name"]: ad for ad in reference if ad.get("MyType") == "Machine"}
    by_id = {ad.get("GlobalJobId") or f"{ad['ClusterId']}.{ad['ProcId']}": ad for ad in jobs if "ClusterId" in ad}
    verify_with_classad2(matches, slots, by_id)

    # the stream carries the same matches, with the sequence number as the event id
    events = stream.wait_for(len(matches))
    assert [int(e["id"]) for e in events] == [m["seq"] for m in matches]
    assert [json.loads(e["data"]) for e in events] == matches and {e["event"] for e in events} == {"match"}

    # each submitter was charged exactly the cost of its matches, in this cycle's transaction
    charged: dict[str, float] = {}
    for m in matches:
        charged[m["submitter"]] = charged.get(m["submitter"], 0.0) + m["cost"]
    with AccountantStore(daemon.state / "accountant.sqlite") as store:
        stored = store.charges(cycle)
    assert {name: stored[name] for name in charged} == pytest.approx(charged)

    # statistics, as the Negotiator ad and as Prometheus metrics
    ad = daemon.get("/v1/negotiator")
    assert ad["LastNegotiationCycleId0"] == cycle and ad["LastNegotiationCycleMatches0"] == len(matches)
    assert ad["LastNegotiationCycleTotalSlots0"] == 143
    metrics = {s.name: s.value for family in text_string_to_metric_families(daemon.get_text("/metrics"))
               for s in family.samples if not s.labels}
    assert metrics["negotiatord_last_cycle_matches"] == len(matches)
    assert metrics["negotiatord_last_cycle_id"] == cycle
    assert metrics["negotiatord_cycle_duration_seconds_count"] == cycle

    # the next cycle does not hand out the same matches again: matched jobs are held
    again = daemon.reschedule()
    assert daemon.get(f"/v1/matches?after={page['last_seq']}")["matches"] == []
    assert daemon.get("/v1/negotiator")["LastNegotiationCycleId0"] == again


def test_an_expression_beyond_the_limits_is_refused_by_key_and_cycles_go_on(daemon):
    """600 ``&&`` clauses (26 KB) used to be filed, and every cycle after failed until the ad was
    invalidated; a chain as long as the limits allow is filed and negotiated."""
    def job(number: int, requirements: str) -> str:
        return (f'MyType = "Job"\nClusterId = {number}\nProcId = 0\nGlobalJobId = "hostile#{number}.0"\n'
                f'JobStatus = 1\nOwner = "mallory"\nRequirements = {requirements}\n')
    clauses = " && ".join(f'(TARGET.Attr_{i} =!= "value_{i}")' for i in range(600))
    longest = "(" + " + ".join(f"x{i}" for i in range(300)) + ") >= 0 && TARGET.Hostile =?= true"
    answer = daemon.request("POST", "/v1/ads/jobs", job(7001, clauses) + "\n" + job(7002, longest))
    assert answer.status == 200 and answer.body["accepted"] == 1
    [refused] = answer.body["rejected"]
    assert refused["key"] == "hostile#7001.0" and refused["position"] == 1
    assert refused["reason"].startswith("line 7: Requirements: 1,799 operators, more than the 320")
    for _ in range(2):
        cycle = daemon.reschedule()
        assert daemon.get("/v1/negotiator")["LastNegotiationCycleId0"] == cycle


def test_bad_input_is_refused_and_nothing_accepted_is_lost(daemon):
    before = daemon.status()["ads"]
    batch = ('MyType = "Machine"\nName = "slot1@new.example.org"\nCpus = 1\n\n'
             'MyType = "Machine"\nName = "slot2@new.example.org"\nCpus = (1 +\n\n'
             'MyType = "Machine"\nCpus = 2\n\n'
             'MyType = "Machine"\nName = "slot3@new.example.org"\nCpus = 3\n')
    answer = daemon.request("POST", "/v1/ads/slots", batch)
    assert answer.status == 200 and answer.body["accepted"] == 2
    assert [(r["position"], r["line"]) for r in answer.body["rejected"]] == [(2, 5), (3, 9)]
    assert "Cpus" in answer.body["rejected"][0]["reason"] and "no Name" in answer.body["rejected"][1]["reason"]
    assert daemon.status()["ads"]["slots"] == before["slots"] + 2

    missing = daemon.request("POST", "/v1/ads/slots", batch, token=None)
    assert missing.status == 401 and missing.headers["WWW-Authenticate"].startswith("Bearer")
    assert daemon.request("POST", "/v1/ads/slots", batch, token="not-the-token").status == 403
    assert daemon.request("POST", "/v1/reschedule", token="not-the-token").status == 403
    assert daemon.request("POST", "/v1/accountant/factor", {"customer": "x@y", "factor": 5},
                          token=None).status == 401

    huge = daemon.request("POST", "/v1/ads/slots", "x" * (MAX_BODY + 1024))
    assert huge.status == 413 and "NEGOTIATORD_MAX_BODY_BYTES" in huge.body["error"]
    unreadable = daemon.request("POST", "/v1/ads/jobs", "<classads><c/></classads>")
    assert unreadable.status == 400 and "XML" in unreadable.body["error"]
    assert daemon.request("POST", "/v1/ads/widgets", batch).status == 404
    assert daemon.status()["ads"]["slots"] == before["slots"] + 2   # nothing lost on the way

    gone = daemon.request("POST", "/v1/ads/slots/invalidate",
                          'Name = "slot1@new.example.org"\n\nName = "slot9@new.example.org"\n')
    assert gone.status == 200 and gone.body["removed"] == 1 and gone.body["unknown"] == ["slot9@new.example.org"]


def test_userprio_shows_the_accountant_and_edits_it_through_the_daemon(daemon):
    direct = ("--url", daemon.url, "--token-file", str(daemon.state / "token"))

    def userprio(*args: str, located: tuple[str, ...] = direct) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "negotiatord", "userprio", *located, *args],
                              capture_output=True, text=True, cwd=ROOT, timeout=60)

    # the daemon's address and token found through its config, as an administrator would
    document = json.loads(userprio("-l", located=("--config", str(daemon.config))).stdout)
    users = {c["name"]: c for c in document["customers"] if not c["is_group"]}
    matched = {m["submitter"] for m in daemon.get("/v1/matches?after=0&limit=10000")["matches"]}
    assert matched <= set(users)
    someone = sorted(matched)[0]
    assert users[someone]["weighted_in_use"] > 0 and users[someone]["factor"] == 1000.0

    table = userprio().stdout.splitlines()
    assert table[0].startswith("Last Priority Update: ")
    assert "Effective" in table[1] and "(wghted-hrs)" in table[2] and "Last Usage" in table[2]
    row = next(line for line in table if someone.split(".")[-1] in line)
    assert "1000.00" in row                                         # the factor column
    # like condor_userprio, only customers active in the last day unless -allusers
    idle = [name for name, c in users.items() if c["weighted_in_use"] == 0 and c["last_usage_time"] is None]
    assert idle and table[-1].startswith(f"Number of users: {len(users) - len(idle)} ")
    assert not any(line.strip().startswith(idle[0].split(".")[-1]) for line in table)
    assert userprio("-allusers").stdout.splitlines()[-1].startswith(f"Number of users: {len(users)} ")

    done = userprio("-setfactor", someone, "2")
    assert done.returncode == 0 and done.stdout.strip() == f"The priority factor of {someone} was set to 2.000000"
    after = {c["name"]: c for c in json.loads(userprio("-l").stdout)["customers"]}
    assert after[someone]["factor"] == 2.0 and after[someone]["factor_is_explicit"]
    assert after[someone]["effective_priority"] == pytest.approx(2.0 * after[someone]["real_priority"])

    assert userprio("-resetusage", someone).returncode == 0
    after = {c["name"]: c for c in json.loads(userprio("-l").stdout)["customers"]}
    assert after[someone]["accumulated_usage_s"] == 0.0

    refused = userprio("-setfactor", someone, "0.5")                 # condor_userprio refuses < 1 too
    assert refused.returncode == 1 and "must be >= 1" in refused.stderr


def test_userprio_makes_condor_userprios_other_writes_through_the_daemon(daemon):
    """-setprio, -setaccum, -setbegin, -setlast, -setceiling, -setfloor, -resetall and -delete, each
    printing what condor_userprio prints (user_prio.cpp), each read back from the accountant."""
    def userprio(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "negotiatord", "userprio", "--url", daemon.url, "--token-file",
                               str(daemon.state / "token"), *args], capture_output=True, text=True, cwd=ROOT,
                              timeout=60)

    def carol() -> dict:
        return next(c for c in daemon.get("/v1/accountant")["customers"] if c["name"] == "carol@site")

    said = [userprio(*args).stdout.strip() for args in (
        ("-setprio", "carol@site", "7"), ("-setaccum", "carol@site", "3600"),
        ("-setbegin", "carol@site", "1700000000"), ("-setlast", "carol@site", "1700000600"),
        ("-setceiling", "carol@site", "4"), ("-setfloor", "carol@site", "2"))]
    assert said == ["The priority of carol@site was set to 7.000000",
                    "The Accumulated Usage of carol@site was set to 3600.000000",
                    "The Begin Usage Time of carol@site was set to 1700000000",
                    "The Last Usage Time of carol@site was set to 1700000600",
                    "The ceiling of carol@site was set to 4", "The floor of carol@site was set to 2"]
    record = carol()
    assert (record["real_priority"], record["accumulated_usage_s"], record["begin_usage_time"],
            record["last_usage_time"], record["ceiling"], record["floor"]) == (7.0, 3600.0, 1.7e9, 1.7e9 + 600, 4, 2)
    table = userprio("-allusers").stdout
    row = next(line for line in table.splitlines() if line.lstrip().startswith("carol@site"))
    assert row.split()[-2:] == ["2.00", "4.00"]                   # Submitter Floor, Submitter Ceiling
    # -1 clears a ceiling, 0 a floor (condor_userprio's man page)
    assert userprio("-setceiling", "carol@site", "-1").returncode == 0
    assert userprio("-setfloor", "carol@site", "0").returncode == 0
    assert (carol()["ceiling"], carol()["floor"]) == (None, None)
    assert userprio("-resetall").stdout.strip() == "The accumulated usage was reset for all users"
    assert all(c["accumulated_usage_s"] == 0 for c in daemon.get("/v1/accountant")["customers"])
    assert userprio("-delete", "carol@site").stdout.strip() == "The accountant record named carol@site was deleted"
    assert "carol@site" not in {c["name"] for c in daemon.get("/v1/accountant")["customers"]}
    refused = userprio("-setprio", "carol@site", "-3")
    assert refused.returncode == 1 and "must be >= 0" in refused.stderr and "Traceback" not in refused.stderr


def test_resetting_the_usage_of_an_unknown_customer_is_refused_and_adds_none(daemon):
    before = {c["name"] for c in daemon.get("/v1/accountant")["customers"]}
    refused = daemon.request("POST", "/v1/accountant/reset-usage", {"customer": "nobody@nowhere"})
    assert refused.status == 404 and "nobody@nowhere" in refused.body["error"]
    shown = subprocess.run([sys.executable, "-m", "negotiatord", "userprio", "--url", daemon.url, "--token-file",
                            str(daemon.state / "token"), "-resetusage", "nobody@nowhere"],
                           capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert shown.returncode == 1 and "nobody@nowhere" in shown.stderr and "Traceback" not in shown.stderr
    assert {c["name"] for c in daemon.get("/v1/accountant")["customers"]} == before


def test_an_edit_with_another_token_names_the_token_file_it_read(daemon, tmp_path):
    stale = tmp_path / "token"
    stale.write_text("not-the-daemons-token\n")
    shown = subprocess.run([sys.executable, "-m", "negotiatord", "userprio", "--url", daemon.url, "--token-file",
                            str(stale), "-setfactor", "alice@example.org", "2"],
                           capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert shown.returncode == 1 and "403" in shown.stderr
    assert str(stale) in shown.stderr and "token_file" in shown.stderr

def test_a_broken_config_on_reload_is_reported_and_the_old_one_stays(daemon):
    good = daemon.config.read_text()
    daemon.config.write_text(good + "NEGOTIATOR_INTERVAL = soon\n")
    seen = len(daemon.messages)
    daemon.signal(signal.SIGHUP)
    reloading = daemon.wait_for_message("RELOADING=1", since=seen)
    daemon.wait_for_message("READY=1", since=reloading)
    reload = daemon.status()["reload"]
    assert reload["ok"] is False
    assert str(daemon.config) in reload["error"] and "NEGOTIATOR_INTERVAL" in reload["error"]
    assert any(e.get("event", "").startswith("config reload refused") for e in daemon.log_events())
    # the old config is in force: the interval is still an hour, and cycles still run
    assert daemon.status()["cycle"]["next_in_s"] > 600
    daemon.reschedule()

    # a good config takes effect; the token file is read again (rotation without a restart); a
    # knob that needs a restart is named and the running value kept
    old_token = daemon.token
    (daemon.state / "token").write_text("rotated-token\n")
    daemon.config.write_text(good + "NEGOTIATION_CYCLE_STATS_LENGTH = 1\nNEGOTIATORD_MAX_BODY_BYTES = 1024\n")
    daemon.signal(signal.SIGHUP)
    deadline = time.monotonic() + 15
    while not daemon.status()["reload"]["ok"] and time.monotonic() < deadline:
        time.sleep(0.05)
    reload = daemon.status()["reload"]
    assert reload["ok"] is True and reload["needs_restart"] == ["NEGOTIATORD_MAX_BODY_BYTES"]
    assert [k for k in daemon.get("/v1/negotiator") if k.startswith("LastNegotiationCycleId")] == \
        ["LastNegotiationCycleId0"]
    assert daemon.request("POST", "/v1/reschedule", token=old_token).status == 403
    big = 'MyType = "Machine"\nName = "slot1@big.example.org"\nComment = "' + "x" * 4096 + '"\n'
    assert daemon.request("POST", "/v1/ads/slots", big, token="rotated-token").status == 200


def test_sigterm_stops_the_daemon_cleanly(daemon):
    seen = len(daemon.messages)
    daemon.signal(signal.SIGTERM)
    daemon.wait_for_message("STOPPING=1", since=seen)
    assert daemon.wait() == 0
    assert daemon.log_events()[-1]["event"] == "stopped"

