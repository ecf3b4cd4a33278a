"""Pull mode (COLLECTOR_HOST) and re-sent ads: an unchanged ad does not end a hold, and a failed
collector query says why.

A collector answers every query with every ad it has, changed or not, and a client may re-post
what it sent before. Only a newer ad (its own ``UpdateSequenceNumber``/``LastHeardFrom``, else its
content) may end the hold on a matched job or slot; otherwise every pull hands out the same matches
again. The daemon tests run it in this process with the collector query answered from the sample
pool's own ads, parsed afresh for each pull as a real query's answer is.

The bindings do not ship HTCondor's daemons, so failed queries are made against loopback ports:
one closed, one that takes the connection and never answers, one that drops it during the
security handshake.
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import urllib.request
from collections import Counter
from pathlib import Path

import classad2
import pytest
from structlog.testing import capture_logs

from negotiatord.ads import read_ads
from negotiatord.accountant import AccountantState
from negotiatord.feed import AdKind, AdStore, take_in
from negotiatord.feed.pull import CollectorQueries, PullError, Pulled, failure, pull, sort_ads
from negotiatord.feed.store import Source
from negotiatord.pool.builder import build_snapshot
from negotiatord.publish.holds import apply_holds, holds_for
from negotiatord.publish.matchlog import MatchLog
from negotiatord.runtime import run_cycle
from negotiatord.service.daemon import Daemon
from negotiatord.settings import load_settings

from tests.service_harness import (
    ROOT, SAMPLE_FIRST_CYCLE_MATCHES, SAMPLE_POOL, cycle_after, free_port, in_process, next_cycle, serve,
)

LIFETIME = 900.0
PULL_S = 0.2
QUICK = {"NEGOTIATOR_INTERVAL": "3600", "NEGOTIATOR_CYCLE_DELAY": "0", "NEGOTIATOR_MIN_INTERVAL": "0"}


@pytest.fixture(scope="module")
def settings():
    return load_settings(ROOT / "config" / "default.conf")


def _fresh(ads: list[tuple[str, classad2.ClassAd]]) -> list[tuple[str, classad2.ClassAd]]:
    """The same ads as new objects, as the next query or POST delivers them."""
    return [(key, classad2.parseOne(ad.printOld(), classad2.ParserType.Old)) for key, ad in ads]


def _sample() -> tuple[list, list]:
    return (take_in(AdKind.SLOT, read_ads(SAMPLE_POOL["slots"]), "slots").accepted,
            take_in(AdKind.JOB, read_ads(SAMPLE_POOL["jobs"]), "jobs").accepted)


def _held_store(settings) -> tuple[AdStore, list, list, list]:
    slots, jobs = _sample()
    store = AdStore()
    store.replace_pulled(AdKind.SLOT, slots, 0.0, LIFETIME)
    store.replace_pulled(AdKind.JOB, jobs, 0.0, LIFETIME)
    view = store.view()
    result = run_cycle(build_snapshot(view.slots.values(), view.jobs.values(), settings),
                       AccountantState(), settings, 1790000000)
    assert result.matches
    apply_holds(store, holds_for(view, result.matches))
    return store, slots, jobs, list(result.matches)


def test_a_re_pulled_or_re_posted_unchanged_ad_keeps_its_hold(settings):
    store, slots, jobs, matches = _held_store(settings)
    held = store.held()
    before = store.view()
    store.replace_pulled(AdKind.SLOT, _fresh(slots), 10.0, LIFETIME)        # the next pull
    store.replace_pulled(AdKind.JOB, _fresh(jobs), 10.0, LIFETIME)
    store.update(AdKind.JOB, _fresh(jobs), 11.0, LIFETIME, Source.PUSH)      # a client re-posts
    assert store.held() == held
    after = store.view()
    assert not {m.job for m in matches} & set(after.jobs)
    assert {key: ad.printOld() for key, ad in after.slots.items()} == \
           {key: ad.printOld() for key, ad in before.slots.items()}
    result = run_cycle(build_snapshot(after.slots.values(), after.jobs.values(), settings),
                       AccountantState(), settings, 1790000100)
    assert not {m.job for m in result.matches} & {m.job for m in matches}
    # the refresh counts: a re-sent ad keeps the held one alive past its first deadline
    assert store.expire(LIFETIME + 5.0) == {kind: 0 for kind in AdKind}


def test_update_marks_decide_where_an_ad_has_them_and_content_where_it_has_none(settings):
    store, slots, jobs, matches = _held_store(settings)
    slot_name = next(m.slot for m in matches if "UpdateSequenceNumber" in dict(slots)[m.slot])
    job_key = matches[0].job

    def refile(kind: AdKind, key: str, source: list, **changes) -> None:
        (_, ad), = _fresh([(key, dict(source)[key])])
        for name, value in changes.items():
            ad[name] = value
        store.update(kind, [(key, ad)], 20.0, LIFETIME)

    sequence = dict(slots)[slot_name]["UpdateSequenceNumber"]
    refile(AdKind.SLOT, slot_name, slots, Memory=1)          # same update number: the same update
    assert slot_name not in store.view().slots or store.view().slots[slot_name]["Memory"] != 1
    refile(AdKind.JOB, job_key, jobs, ServerTime=1790000200)  # a schedd's answer, stamped anew
    assert job_key not in store.view().jobs
    refile(AdKind.SLOT, slot_name, slots, UpdateSequenceNumber=sequence + 1)
    assert store.view().slots[slot_name]["UpdateSequenceNumber"] == sequence + 1
    refile(AdKind.JOB, job_key, jobs, JobPrio=5)             # the job changed: it speaks for itself
    assert store.view().jobs[job_key]["JobPrio"] == 5


def test_an_unchanged_ad_re_posted_while_the_cycle_commits_is_still_held(settings):
    slots, jobs = _sample()
    store = AdStore()
    store.update(AdKind.SLOT, slots, 0.0, LIFETIME)
    store.update(AdKind.JOB, jobs, 0.0, LIFETIME)
    view = store.view()
    result = run_cycle(build_snapshot(view.slots.values(), view.jobs.values(), settings),
                       AccountantState(), settings, 1790000000)
    store.update(AdKind.JOB, _fresh(jobs), 1.0, LIFETIME)
    store.update(AdKind.SLOT, _fresh(slots), 1.0, LIFETIME)
    apply_holds(store, holds_for(view, result.matches))
    assert not {m.job for m in result.matches} & set(store.view().jobs)
    assert store.held()["slots"] == len({m.slot for m in result.matches})


# --- the daemon in pull mode -------------------------------------------------------------------

def _collector_answer() -> str:
    return "\n".join(Path(path).read_text() for path in SAMPLE_POOL.values())


def _published(state: Path) -> list:
    log = MatchLog(state / "matches.sqlite")
    try:
        return log.since(0, 100000)
    finally:
        log.close()


def test_pulling_unchanged_ads_every_cycle_publishes_each_match_once(tmp_path, monkeypatch):
    answer = _collector_answer()
    pulls: list[int] = []

    async def collector(self: CollectorQueries, host: str, **constraints: str | None) -> Pulled:
        pulls.append(1)
        await asyncio.sleep(PULL_S)     # a collector takes its time to answer
        return sort_ads(answer, f"collector {host}")

    monkeypatch.setattr(CollectorQueries, "pull", collector)
    daemon = in_process(tmp_path / "d", {**QUICK, "COLLECTOR_HOST": "cm.example.org:9618"})

    async def scenario(daemon: Daemon) -> None:
        await cycle_after(daemon, 0)
        for _ in range(3):
            await next_cycle(daemon)
        # a client re-posting the jobs it sent before does not end the holds either
        jobs = Path(SAMPLE_POOL["jobs"]).read_bytes()
        request = urllib.request.Request(daemon.status()["daemon"]["url"] + "/v1/ads/jobs", data=jobs, method="POST",
                                         headers={"Authorization": f"Bearer {daemon.token.decode()}"})
        answer = await asyncio.to_thread(lambda: json.loads(urllib.request.urlopen(request).read()))
        assert answer["accepted"] == 58
        await next_cycle(daemon)

    with capture_logs() as events:
        serve(daemon, scenario)
    assert len(pulls) == 5
    published = _published(daemon.paths.state_dir)
    assert {m.cycle for m in published} == {1}
    jobs = Counter(m.match.job for m in published)
    assert len(jobs) == SAMPLE_FIRST_CYCLE_MATCHES and max(jobs.values()) == 1

    # the pull is the cycle's first phase, in every figure of it, and counts in its duration
    cycles = [e for e in events if e["event"] == "cycle"]
    assert len(cycles) == 5
    for logged in cycles:
        assert list(logged["phases_s"])[0] == "pull" and logged["phases_s"]["pull"] >= PULL_S
        assert logged["duration_s"] >= sum(logged["phases_s"].values()) - 0.001
    last = daemon.history.last_cycle_document()["cycle"]
    assert last["phases_s"]["pull"] >= PULL_S and last["duration_s"] >= PULL_S
    assert daemon.negotiator_ad()["LastNegotiationCyclePhasePullDuration0"] >= PULL_S
    assert 'negotiatord_last_cycle_phase_seconds{phase="pull"}' in daemon.metrics.exposition().decode()


# --- why a collector query failed --------------------------------------------------------------

class _Listener:
    """A TCP port on loopback that takes connections and then never answers (``stall``) or drops
    them at once (``drop``), as a firewall, a wrong service or a refusing collector would."""

    def __init__(self, behaviour: str) -> None:
        self.socket = socket.create_server(("127.0.0.1", 0))
        self.address = f"127.0.0.1:{self.socket.getsockname()[1]}"
        self.behaviour = behaviour
        self.taken: list[socket.socket] = []
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                connection, _ = self.socket.accept()
            except OSError:
                return
            if self.behaviour == "drop":
                connection.close()
            else:
                self.taken.append(connection)

    def close(self) -> None:
        for connection in self.taken:
            connection.close()
        self.socket.close()


@pytest.fixture
def quick_config(tmp_path) -> Path:
    config = tmp_path / "condor_config"
    config.write_text("QUERY_TIMEOUT = 2\n")
    return config


def _pull_error(host: str, config: Path) -> PullError:
    with pytest.raises(PullError) as failed:
        asyncio.run(pull(host, config))
    return failed.value


def test_a_closed_port_a_silent_one_and_a_refused_handshake_are_told_apart(quick_config):
    closed = f"127.0.0.1:{free_port()}"
    refused = _pull_error(closed, quick_config)
    assert refused.reason == "connection refused"
    assert f"collector {closed}: connection refused" in str(refused)
    assert "Connection refused (connect errno = 111)" in str(refused)       # HTCondor's own words
    assert "Failed communication with collector" in str(refused)

    for behaviour, reason, said in (("stall", "no answer in time", "timeout reading"),
                                    ("drop", "connection closed during the security handshake", "SECMAN")):
        listener = _Listener(behaviour)
        try:
            error = _pull_error(listener.address, quick_config)
        finally:
            listener.close()
        assert error.reason == reason and said in str(error), str(error)
        assert f"collector {listener.address}: {reason}" in str(error)


def test_the_cause_is_read_from_what_htcondor_says():
    said = {
        "authentication refused": "Failed communication with collector.; ERROR: AUTHENTICATE:1003:Failed "
                                  "to authenticate with any method|AUTHENTICATE:1004:Failed to "
                                  "authenticate using IDTOKENS",
        "unknown host": "Failed communication with collector.; Can't resolve collector cm.invalid; skipping",
        "query failed": "Failed communication with collector.",
    }
    for reason, text in said.items():
        error = failure("cm.example.org", text)
        assert error.reason == reason and text in str(error)
    assert "SEC_CLIENT_AUTHENTICATION_METHODS" in str(failure("cm", said["authentication refused"]))


def test_the_daemon_logs_why_the_collector_failed(tmp_path):
    listener = _Listener("stall")
    closed = f"127.0.0.1:{free_port()}"
    logged = {}
    try:
        for host in (closed, listener.address):
            daemon = in_process(tmp_path / host.replace(":", "_"),
                                {**QUICK, "COLLECTOR_HOST": host, "QUERY_TIMEOUT": "2"})

            async def first_cycle(daemon: Daemon) -> None:
                await cycle_after(daemon, 0)

            with capture_logs() as events:
                serve(daemon, first_cycle)
            failed, = [e for e in events if e["event"].startswith("collector query failed")]
            assert failed["host"] == host and daemon.status()["collector"]["reason"] == failed["reason"]
            logged[host] = failed
    finally:
        listener.close()
    assert logged[closed]["reason"] == "connection refused"
    assert logged[listener.address]["reason"] == "no answer in time"
    assert "Connection refused" in logged[closed]["error"] and "timeout" in logged[listener.address]["error"]


def test_an_ad_a_pull_leaves_out_is_named_by_its_key():
    """A collector's answer (condor_status -l form) with a slot ad holding a line classad2 cannot
    read, a job ad whose Requirements is beyond the reader's limits and a slot ad without a Name:
    each problem names the ad's key where its readable attributes give one, and its line."""
    bad_line = 'MyType = "Machine"\nName = "slot1@broken.example.org"\nCpus = 4 +\nMemory = 1024'
    deep = ('MyType = "Job"\nGlobalJobId = "ap#9.0#1"\nJobStatus = 1\n'
            f"Requirements = {'(' * 100}true{')' * 100}")
    unnamed = 'MyType = "Machine"\nCpus = 1'
    good = 'MyType = "Machine"\nName = "slot1@good.example.org"\nCpus = 1'
    pulled = sort_ads("\n\n".join([bad_line, deep, unnamed, good]) + "\n", "collector cm")
    assert [key for key, _ in pulled.ads[AdKind.SLOT]] == ["slot1@good.example.org"]
    first, second, third = pulled.problems
    assert first.startswith("collector cm:1 (ad 1, slot1@broken.example.org): line 3: cannot parse 'Cpus = 4 +'")
    assert second.startswith("collector cm:6 (ad 2, ap#9.0#1): line 9: Requirements: brackets nested 100 deep")
    assert third == "collector cm:11 (ad 3): no Name: a Machine ad is filed under it"
