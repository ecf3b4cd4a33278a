"""Quota victims over several daemon cycles: published once, then held as being preempted.

References: YuniKorn's design "Quota Enforcement through Preemption" (``../shared/seeds/004_*``)
preempts a victim once; its quota preemptor (``quota_preemptor.go``) leaves out allocations
already preempted (``IsPreempted``) and subtracts the resources a queue is preempting from its
usage, so no further victims are picked for what is already on its way out. HTCondor's startd
shows such a slot as ``State = "Preempting"`` until the job is gone.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import aiohttp
from prometheus_client.parser import text_string_to_metric_families

from negotiatord.accountant import AccountantStore
from negotiatord.accountant.quota_timers import QuotaTimer
from negotiatord.feed import AdKind
from negotiatord.feed.api import take_in_text
from negotiatord.service.daemon import Daemon
from tests.builders import static_slot
from tests.service_harness import cycle_after, in_process, next_cycle, serve

DELAY = 600.0
SETTINGS = {"NEGOTIATOR_INTERVAL": "3600", "NEGOTIATOR_CYCLE_DELAY": "0", "NEGOTIATOR_MIN_INTERVAL": "0",
            "NEGOTIATORD_QUOTA_PREEMPTION": "True", "GROUP_NAMES": "$(GROUP_NAMES), group_a",
            "GROUP_LIMIT_group_a": "Cpus:2",
            "GROUP_QUOTA_PREEMPTION_DELAY_group_a": str(int(DELAY))}


def slot(n: int, owner: str, age: float, **attrs):
    """bob's two jobs are the oldest; alice's first job, third in start order, took group_a over Cpus:2."""
    return static_slot(f"s{n}", State="Claimed", Activity="Busy", AccountingGroup=f"group_a.{owner}@site",
                       RemoteUser=f"group_a.{owner}@site", GlobalJobId=f"{owner}#{n}",
                       JobStart=time.time() - age, **attrs)


def _home(tmp_path: Path) -> tuple[Path, dict[str, Path]]:
    """A daemon home whose accountant has group_a's timer due (started two delays ago), and the
    four claimed slots to preload."""
    home = tmp_path / "daemon"
    (home / "state").mkdir(parents=True)
    with AccountantStore(home / "state" / "accountant.sqlite") as store:
        store.commit_cycle(1, time.time() - 2 * DELAY, store.load().with_quota_timers(
            {"group_a": QuotaTimer("group_a", {"cpus": 2.0}, DELAY, time.time() - 2 * DELAY)}), {})
    ads = home / "slots.ads"
    ads.write_text("\n".join(slot(n, owner, age).printOld()
                             for n, (owner, age) in enumerate((("bob", 4000), ("bob", 3000), ("alice", 2000),
                                                              ("alice", 1000)))))
    return home, {"slots": ads}


def _file(daemon: Daemon, *ads) -> None:
    """Slot ads advertised anew, as a startd's update would file them."""
    text = "\n".join(ad.printOld() for ad in ads)
    daemon.store.update(AdKind.SLOT, take_in_text(AdKind.SLOT, text, "test").accepted, time.monotonic(), 3600.0)


def _preempted(daemon: Daemon) -> list[tuple[str, str | None, str]]:
    last = daemon.history.last
    assert last is not None
    return [(p.slot, p.job, p.rule) for p in last.outcome.result.preemptions]


async def _stream_events(url: str, count: int) -> list[dict]:
    events: list[dict] = []
    event: dict = {}
    async with aiohttp.ClientSession() as session, session.get(url, timeout=aiohttp.ClientTimeout(total=30)) as answer:
        async for raw in answer.content:
            line = raw.decode().rstrip("\n")
            if not line:
                if "data" in event:
                    events.append(event)
                event = {}
                if len(events) == count:
                    return events
            elif not line.startswith(":"):
                field, _, value = line.partition(": ")
                event[field] = value
    return events


def test_victims_are_named_once_held_as_preempting_and_not_named_again_after_a_restart(tmp_path):
    home, preload = _home(tmp_path)
    seen: dict[str, object] = {}

    async def first_run(daemon: Daemon) -> None:
        await cycle_after(daemon, 1)                 # the start-up cycle, with the timer due
        seen["named"] = _preempted(daemon)
        seen["metric"] = {sample.labels["rule"]: sample.value
                          for family in text_string_to_metric_families(daemon.metrics.exposition().decode())
                          for sample in family.samples if sample.name == "negotiatord_last_cycle_preemptions"}
        seen["document"] = daemon.history.last_cycle_document()["preemptions"]
        async with aiohttp.ClientSession() as session, session.get(daemon._url + "/v1/matches?after=0") as answer:
            seen["page"] = await answer.json()
        seen["events"] = await _stream_events(daemon._url + "/v1/matches/stream?after=0", 2)

        await next_cycle(daemon)                     # the victims' slots still show them running
        seen["next"] = _preempted(daemon)
        seen["timers"] = dict(daemon.quota_timers)
        seen["being_preempted"] = daemon.status()["quota_victims_being_preempted"]

        # s1's startd advertises anew, the victim still running; s0's shows it gone
        _file(daemon, slot(1, "bob", 3000, TotalJobRunTime=3000), static_slot("s0", State="Unclaimed"))
        await next_cycle(daemon)
        seen["after_updates"] = _preempted(daemon)
        seen["left"] = daemon.status()["quota_victims_being_preempted"]

    serve(in_process(home, SETTINGS, preload), first_run)

    # cycle 2 names bob's two jobs, the younger first, with no job taking their slots
    assert seen["named"] == [("s1", None, "quota"), ("s0", None, "quota")]
    assert seen["metric"]["quota"] == 2 and [p["victim_job"] for p in seen["document"]] == ["bob#1", "bob#0"]
    page = seen["page"]
    assert [(m["slot"], m["job"], m["preempts"], m["rule"]) for m in page["matches"]] == [
        ("s1", None, "bob#1", "quota"), ("s0", None, "bob#0", "quota")]
    assert [(e["event"], int(e["id"]), json.loads(e["data"])) for e in seen["events"]] == [
        ("preemption", m["seq"], m) for m in page["matches"]]
    # the next cycles name nobody: not the victims again, nor alice's jobs for what they release
    assert seen["next"] == [] and seen["after_updates"] == []
    assert seen["being_preempted"] == 2 and seen["left"] == 1
    assert seen["timers"] == {}          # with the victims released, group_a is within its maximum

    # a restarted daemon reads the victims back from the match log; its preloaded ads still show
    # both running, and it names neither again
    async def restarted(daemon: Daemon) -> None:
        await cycle_after(daemon, 4)
        seen["restarted"] = _preempted(daemon)
        seen["restored"] = daemon.status()["quota_victims_being_preempted"]

    serve(in_process(home, SETTINGS, preload), restarted)
    assert seen["restarted"] == [] and seen["restored"] == 2
