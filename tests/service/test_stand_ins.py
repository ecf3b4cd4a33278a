"""The stand-ins for held slots are made on the event loop, a slice at a time, not on the cycle's
thread.

A fill cycle matches thousands of jobs; standing in for their slots copies each matched slot ad
through classad2 and makes a claimed dynamic slot per match. On the cycle's thread that work took
the GIL from the event loop a switch interval at a time, and on a loaded machine status requests
waited 90-290 ms twice a cycle. Made as they are filed, on the event loop, in slices of
``FILING_SLICE_S``, they keep other requests waiting a slice at most.
"""

from __future__ import annotations

import asyncio
import threading
import time

import classad2

from negotiatord.cycle.result import Match
from negotiatord.feed.kinds import AdKind, ad_key
from negotiatord.feed.store import AdStore
from negotiatord.publish import holds as holds_module
from negotiatord.publish.holds import file_holds, holds_for
from negotiatord.service.daemon import CYCLE_THREAD

from tests.service_harness import SAMPLE_FIRST_CYCLE_MATCHES, SAMPLE_POOL, in_process, next_cycle, serve

QUICK = {"NEGOTIATOR_INTERVAL": "3600", "NEGOTIATOR_CYCLE_DELAY": "0", "NEGOTIATOR_MIN_INTERVAL": "0"}


def test_stand_ins_are_made_on_the_event_loop_not_on_the_cycles_thread(tmp_path, monkeypatch):
    made_on: list[str] = []
    making = holds_module.slot_after_matches

    def recording(*args, **kwargs):
        made_on.append(threading.current_thread().name)
        return making(*args, **kwargs)

    monkeypatch.setattr(holds_module, "slot_after_matches", recording)
    loop_thread: list[str] = []

    async def scenario(daemon) -> None:
        loop_thread.append(threading.current_thread().name)
        await next_cycle(daemon)
        assert daemon.history.last.outcome.result.stats.matches == SAMPLE_FIRST_CYCLE_MATCHES
        assert daemon.store.held()["slots"] > 0

    serve(in_process(tmp_path / "d", QUICK, SAMPLE_POOL), scenario)
    assert made_on and CYCLE_THREAD not in made_on
    assert set(made_on) == set(loop_thread)


def _pslots(count: int) -> list[classad2.ClassAd]:
    """Partitionable slots shaped as the sample's first p-slot, each its own node."""
    text = SAMPLE_POOL["slots"].read_text().split("\n\n")
    template = next(ad for ad in text if "PartitionableSlot = true" in ad)
    ads = []
    for i in range(count):
        ad = classad2.parseOne(template, classad2.ParserType.Old)
        ad["Name"] = f"slot1@node{i}.example.org"
        ad["Machine"] = f"node{i}.example.org"
        ads.append(ad)
    return ads


def test_filing_stand_ins_lets_the_event_loop_turn(tmp_path):
    """A thousand matched p-slots filed while a ticker runs: the ticker gets its turns all along."""
    store = AdStore()
    slots = _pslots(1000)
    store.update(AdKind.SLOT, [(ad_key(AdKind.SLOT, ad), ad) for ad in slots], 0.0, 900.0)
    view = store.view()
    matches = [Match(f"job{i}", str(ad["Name"]), "alice@example.org", "<none>", 1.0, {"Cpus": 1, "Memory": 1024})
               for i, ad in enumerate(slots)]
    holds = holds_for(view, matches)

    async def scenario() -> tuple[int, float, float]:
        ticks: list[float] = []
        stop = asyncio.Event()

        async def ticker() -> None:
            while not stop.is_set():
                ticks.append(time.perf_counter())
                await asyncio.sleep(0)

        ticking = asyncio.ensure_future(ticker())
        await asyncio.sleep(0)
        started = time.perf_counter()
        await file_holds(store, holds)
        took = time.perf_counter() - started
        stop.set()
        await ticking
        during = [t for t in ticks if t >= started]
        gaps = [b - a for a, b in zip(during, during[1:])]
        return len(during), max(gaps, default=took), took

    ticks, longest_gap, took = asyncio.run(scenario())
    assert store.held()["slots"] == 1000
    assert ticks >= 5 and longest_gap < max(0.25, took / 5), (ticks, longest_gap, took)
    held = store.view().slots
    assert held["slot1@node0.example.org"]["Cpus"] == slots[0]["Cpus"] - 1
    assert sum(name.startswith("slot1@node7.example.org#") for name in held) == 1
