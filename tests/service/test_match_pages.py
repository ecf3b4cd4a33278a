"""No client freezes the event loop through the match log: pages are capped, built off the event
loop, and a client gets at most a few at a time.

The state holds 20,000 published matches (made with the daemon's own stores). Reads need no token,
so anyone who reaches the address can ask for pages: one client asking for many at once is
answered 429 beyond its share of one (with ``Retry-After``, after that many seconds), and
``/v1/status`` answers meanwhile.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import aiohttp
import pytest

from negotiatord.accountant import AccountantState, AccountantStore
from negotiatord.cycle.result import Match
from negotiatord.publish.matchlog import MatchLog
from negotiatord.service.http import MATCH_PAGE_MAX

from tests.service_harness import DaemonProcess

MATCHES = 20_000
NOW = 1790000000


def a_state_with_many_matches(state: Path, count: int = MATCHES) -> None:
    """Cycle 1, committed and published, with ``count`` matches (as the daemon would write them)."""
    state.mkdir(parents=True, mode=0o700)
    matches = [Match(f"submit.example.org#{i}.0#{NOW}", f"slot{i % 64}@node{i // 64}.example.org",
                     f"user{i % 97}@example.org", "<none>", 1.0, {"Cpus": 1, "Memory": 2048, "Disk": 1024})
               for i in range(count)]
    with AccountantStore(state / "accountant.sqlite") as accountant:
        log = MatchLog(state / "matches.sqlite")
        try:
            seq = log.stage(1, NOW, matches)
            assert accountant.commit_cycle(1, NOW, AccountantState(), {"user0@example.org": 1.0}, seq)
            log.publish(1)
        finally:
            log.close()


@pytest.fixture(scope="module")
def daemon(tmp_path_factory):
    home = tmp_path_factory.mktemp("pages")
    a_state_with_many_matches(home / "state")
    process = DaemonProcess(home, settings={"NEGOTIATOR_INTERVAL": "3600"})
    with process.running():
        yield process


def test_a_page_is_capped_and_the_cursor_reaches_every_match(daemon):
    page = daemon.get("/v1/matches?after=0&limit=10000")
    assert len(page["matches"]) == MATCH_PAGE_MAX == 1000
    assert page["next"] == page["matches"][-1]["seq"] and page["last_seq"] == MATCHES
    seen, cursor = 0, 0
    while True:
        page = daemon.get(f"/v1/matches?after={cursor}&limit=5000")
        if not page["matches"]:
            break
        seen += len(page["matches"])
        cursor = page["next"]
    assert seen == MATCHES


async def _flood(url: str, readers: int) -> tuple[list[int], list[str], list[float]]:
    """``readers`` concurrent full pages from one client, and /v1/status asked every 20 ms
    meanwhile from another connection; the statuses and Retry-After headers of the pages, and
    the status latencies."""
    statuses: list[int] = []
    retry_after: list[str] = []
    latencies: list[float] = []
    done = asyncio.Event()
    async with aiohttp.ClientSession() as pages, aiohttp.ClientSession() as probe:
        async def page(after: int) -> None:
            async with pages.get(f"{url}/v1/matches?after={after}&limit=1000") as answer:
                await answer.read()
                statuses.append(answer.status)
                if answer.status == 429:
                    retry_after.append(answer.headers.get("Retry-After", ""))
                    assert "error" in await answer.json()

        async def status() -> None:
            while not done.is_set():
                started = time.perf_counter()
                async with probe.get(f"{url}/v1/status") as answer:
                    assert answer.status == 200
                    await answer.read()
                latencies.append(time.perf_counter() - started)
                await asyncio.sleep(0.02)

        prober = asyncio.ensure_future(status())
        await asyncio.gather(*(page(i * 97 % MATCHES) for i in range(readers)))
        done.set()
        await prober
    return statuses, retry_after, latencies


def test_one_client_asking_for_many_pages_at_once_gets_its_share_and_status_answers(daemon):
    statuses, retry_after, latencies = asyncio.run(_flood(daemon.url, 60))
    assert statuses.count(200) >= 1 and statuses.count(429) >= 30, statuses
    assert set(statuses) <= {200, 429} and retry_after and all(int(value) >= 1 for value in retry_after)
    # before, the pages were built on the event loop one after the other (60 of 10,000 matches:
    # seconds), and status waited behind them all
    assert latencies and max(latencies) < 3.0 and sorted(latencies)[len(latencies) // 2] < 0.2, latencies
    # a client within its share is served in full, one page after the other
    assert asyncio.run(_flood(daemon.url, 1))[0] == [200]
