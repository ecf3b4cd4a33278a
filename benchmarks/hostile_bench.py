"""Hostile clients against the daemon: status latency and well-behaved clients' throughput, each
measured in the same run without the attack (the baseline) and during it.

Starts ``negotiatord run`` on a loopback port over a state of --matches published matches (made with
the daemon's own stores, as ``tests/service/test_match_pages.py`` makes them), then, for each
scenario, one window without the attack and one with it:

* ``pages``: --readers clients at once asking ``GET /v1/matches?after=N&limit=10000`` again and
  again, without a token (the daemon caps a page at 1,000, builds it on a reader thread and gives a
  client one at a time: 429 beyond); the well-behaved client pages through the matches one page at
  a time: matches read per second;
* ``connections``: --idle connections that send a header line and then nothing, and --slow-bodies
  POSTs with the token whose body comes a byte a second, each reopened as soon as the daemon
  closes it (the header and body timeouts), or a second after a 503 (beyond the connection
  limits); the well-behaved client posts normal batches: ads filed per second;
* ``bodies``: a client posting 10 MB bodies, two at a time, one a single ad of repeated ``A = 1``
  lines (refused at once: an ad's size is bounded), one of 60,000 small ads (parsed in turns with
  other clients' bodies); the well-behaved client posts normal batches of 94 kB: ads filed per
  second and the time each batch took.

In every window ``GET /v1/status`` is asked every 10 ms from another address. The attacker is
127.0.0.1; the prober 127.0.0.2 and the well-behaved client 127.0.0.3 (other loopback addresses
are other clients to the daemon's per-client limits). Printed: status p50/p99/max in each
window, the well-behaved figure and its ratio to the baseline, and what the attack got (answers
by status, connections refused or cut off). Target: status p99 < 50 ms during every attack.

    .venv/bin/python benchmarks/hostile_bench.py                       # 20k matches, 10 s windows
    .venv/bin/python benchmarks/hostile_bench.py --matches 60k --readers 200 --idle 500 --slow-bodies 200
    .venv/bin/python benchmarks/hostile_bench.py --scenarios pages --window-seconds 20
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

import aiohttp

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path[:0] = [str(ROOT), str(HERE)]

from load_bench import Daemon, percentile, wait_ready  # noqa: E402
from pool_generator import count_arg  # noqa: E402

from tests.service.test_match_pages import NOW, a_state_with_many_matches  # noqa: E402

ATTACKER, PROBER, CLIENT = "127.0.0.1", "127.0.0.2", "127.0.0.3"
TARGET_STATUS_P99_MS = 50.0
SAMPLE_SLOTS = (ROOT / "samples" / "slots.ads").read_text().strip().split("\n\n")


def normal_batch(number: int) -> str:
    """About 94 kB of real slot ads (the sample's), named for the batch."""
    ads = []
    while sum(map(len, ads)) < 94_000:
        ad = SAMPLE_SLOTS[len(ads) % len(SAMPLE_SLOTS)]
        ads.append(ad.replace('Name = "', f'Name = "b{number}x{len(ads)}.', 1))
    return "\n\n".join(ads) + "\n"


def session_from(address: str, connections: int = 100) -> aiohttp.ClientSession:
    return aiohttp.ClientSession(connector=aiohttp.TCPConnector(local_addr=(address, 0), limit=connections),
                                 timeout=aiohttp.ClientTimeout(total=120))


@dataclass
class Window:
    label: str
    latencies: list[float] = field(default_factory=list)   # status, ms
    done: float = 0.0            # the well-behaved client's work (matches read, ads filed)
    took: list[float] = field(default_factory=list)         # seconds per well-behaved request
    attack: Counter = field(default_factory=Counter)
    seconds: float = 0.0

    @property
    def rate(self) -> float:
        return self.done / self.seconds if self.seconds else float("nan")


async def probe(url: str, window: Window, stop: asyncio.Event) -> None:
    async with session_from(PROBER) as session:
        while not stop.is_set():
            started = time.perf_counter()
            try:
                async with session.get(f"{url}/v1/status") as answer:
                    await answer.read()
                window.latencies.append((time.perf_counter() - started) * 1000)
            except aiohttp.ClientError:
                window.attack["status failed"] += 1
            await asyncio.sleep(0.01)


async def page_through(url: str, window: Window, stop: asyncio.Event) -> None:
    """The well-behaved reader: one page at a time, from the start again at the end."""
    async with session_from(CLIENT) as session:
        cursor = 0
        while not stop.is_set():
            started = time.perf_counter()
            async with session.get(f"{url}/v1/matches?after={cursor}&limit=1000") as answer:
                page = await answer.json()
            window.took.append(time.perf_counter() - started)
            window.done += len(page["matches"])
            cursor = page["next"] if page["matches"] else 0


async def post_batches(url: str, token: str, window: Window, stop: asyncio.Event) -> None:
    """The well-behaved feeder: a normal batch at a time."""
    async with session_from(CLIENT) as session:
        number = 0
        while not stop.is_set():
            number += 1
            started = time.perf_counter()
            async with session.post(f"{url}/v1/ads/slots", data=normal_batch(number).encode(),
                                    headers={"Authorization": f"Bearer {token}"}) as answer:
                reply = await answer.json()
            window.took.append(time.perf_counter() - started)
            window.done += reply.get("accepted", 0)


async def flood_pages(url: str, readers: int, matches: int, window: Window, stop: asyncio.Event) -> None:
    async with session_from(ATTACKER, connections=readers) as session:
        async def reader(number: int) -> None:
            after = number * 997 % max(matches, 1)
            while not stop.is_set():
                try:
                    async with session.get(f"{url}/v1/matches?after={after}&limit=10000") as answer:
                        await answer.read()
                        window.attack[f"pages {answer.status}"] += 1
                except aiohttp.ClientError:
                    window.attack["pages failed"] += 1
        await asyncio.gather(*(reader(i) for i in range(readers)))


async def hold_connections(port: int, token: str, idle: int, slow: int, window: Window, stop: asyncio.Event) -> None:
    """Connections that never finish their request, each opened again once the daemon closes it."""
    async def one(slow_body: bool) -> None:
        while not stop.is_set():
            try:
                reader, writer = await asyncio.open_connection("127.0.0.1", port, local_addr=(ATTACKER, 0))
            except OSError:
                window.attack["connect failed"] += 1
                await asyncio.sleep(0.1)
                continue
            if slow_body:
                writer.write(f"POST /v1/ads/slots HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\n"
                             "Content-Length: 1000000\r\n\r\n".encode())
            else:
                writer.write(b"GET /v1/status HTTP/1.1\r\n")
            answer = b""
            with contextlib.suppress(OSError):
                while not stop.is_set():
                    if slow_body:
                        writer.write(b"x")
                    try:
                        chunk = await asyncio.wait_for(reader.read(4096), 1.0)
                    except TimeoutError:
                        continue
                    if not chunk:
                        break
                    answer += chunk
            status = answer.split(b" ", 2)[1].decode() if answer.startswith(b"HTTP/") else "closed"
            window.attack[f"{'slow body' if slow_body else 'idle'} {status}"] += 1
            writer.close()
            await asyncio.sleep(1.0 if status == "503" else 0.1)      # refused: try again a second later
    await asyncio.gather(*(one(False) for _ in range(idle)), *(one(True) for _ in range(slow)))


async def post_large_bodies(url: str, token: str, window: Window, stop: asyncio.Event) -> None:
    one_ad = ('MyType = "Machine"\nName = "huge@attacker"\n' + "A = 1\n" * 1_700_000).encode()
    many = "\n".join(f'MyType = "Machine"\nName = "s{i}@attacker"\nCpus = 1\nMemory = 2048\nStart = true\n'
                     for i in range(60_000)).encode()
    async with session_from(ATTACKER) as session:
        async def poster(body: bytes, label: str) -> None:
            while not stop.is_set():
                started = time.perf_counter()
                async with session.post(f"{url}/v1/ads/slots", data=body,
                                        headers={"Authorization": f"Bearer {token}"}) as answer:
                    reply = await answer.json()
                window.attack[f"{label}: posts"] += 1
                window.attack[f"{label}: ads accepted"] += reply.get("accepted", 0)
                window.attack[f"{label}: seconds"] += round(time.perf_counter() - started, 1)
        await asyncio.gather(poster(one_ad, "10 MB, one ad"), poster(many, "10 MB, 60,000 ads"))


async def measure(label: str, seconds: float, work: list[Callable[[Window, asyncio.Event], Awaitable[None]]]
                  ) -> Window:
    window = Window(label)
    stop = asyncio.Event()
    tasks = [asyncio.ensure_future(job(window, stop)) for job in work]
    started = time.perf_counter()
    await asyncio.sleep(seconds)
    stop.set()
    window.seconds = time.perf_counter() - started
    done, pending = await asyncio.wait(tasks, timeout=30)
    for task in pending:
        task.cancel()
    for task in done:
        if task.exception() is not None:
            raise task.exception()      # type: ignore[misc]
    return window


def report(scenario: str, unit: str, baseline: Window, attacked: Window) -> None:
    print(f"\n{scenario}:")
    print(f"  {'window':<10} {'status p50':>10} {'p99':>9} {'max':>9} {'probes':>7}   well-behaved client")
    for window in (baseline, attacked):
        took = (f", per request p50 {percentile(window.took, .5) * 1000:.0f} ms max {max(window.took) * 1000:.0f} ms"
                if window.took else "")
        ratio = f" ({window.rate / baseline.rate:.2f}x baseline)" if window is attacked and baseline.rate else ""
        p50, p99 = percentile(window.latencies, .5), percentile(window.latencies, .99)
        print(f"  {window.label:<10} {p50:7.2f} ms {p99:6.2f} ms"
              f" {max(window.latencies, default=float('nan')):6.2f} ms {len(window.latencies):>7}   "
              f"{window.rate:,.0f} {unit}/s{ratio}{took}")
    print("  the attack got: " + ", ".join(f"{name} {count:,}" for name, count in sorted(attacked.attack.items())))
    p99 = percentile(attacked.latencies, .99)
    print(f"  target status p99 < {TARGET_STATUS_P99_MS:.0f} ms under attack: {p99:.2f} ms "
          f"{'MET' if p99 < TARGET_STATUS_P99_MS else 'NOT MET'}")


async def run(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory(prefix="negotiatord-hostile-") as home:
        print(f"a state of {args.matches:,} published matches ...")
        a_state_with_many_matches(Path(home) / "state", args.matches)   # as the test of pages makes it
        daemon = Daemon(Path(home), NOW, "thread")
        try:
            async with aiohttp.ClientSession() as session:
                await wait_ready(session, daemon)
            token = daemon.token_file.read_text().strip()
            url, seconds = daemon.url, args.window_seconds

            def status_and(*work: Callable[[Window, asyncio.Event], Awaitable[None]]) -> list:
                return [lambda w, s: probe(url, w, s), *work]

            if "pages" in args.scenarios:
                reading = status_and(lambda w, s: page_through(url, w, s))
                baseline = await measure("baseline", seconds, reading)
                attacked = await measure("attack", seconds, [
                    *reading, lambda w, s: flood_pages(url, args.readers, args.matches, w, s)])
                report(f"pages: {args.readers} readers of 10,000-match pages at once, no token", "matches read",
                       baseline, attacked)
            if "connections" in args.scenarios:
                feeding = status_and(lambda w, s: post_batches(url, token, w, s))
                baseline = await measure("baseline", seconds, feeding)
                attacked = await measure("attack", seconds, [
                    *feeding, lambda w, s: hold_connections(daemon.port, token, args.idle, args.slow_bodies, w, s)])
                report(f"connections: {args.idle} idle after a header line, {args.slow_bodies} bodies a byte a "
                       "second (each reopened when closed)", "ads filed", baseline, attacked)
            if "bodies" in args.scenarios:
                feeding = status_and(lambda w, s: post_batches(url, token, w, s))
                baseline = await measure("baseline", seconds, feeding)
                attacked = await measure("attack", seconds,
                                         [*feeding, lambda w, s: post_large_bodies(url, token, w, s)])
                report("bodies: 10 MB bodies, two at a time (one ad of repeated lines; 60,000 small ads)",
                       "ads filed", baseline, attacked)
        finally:
            daemon.stop()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--matches", type=count_arg, default=20_000, help="published matches in the state")
    parser.add_argument("--readers", type=int, default=200, help="concurrent page readers (pages)")
    parser.add_argument("--idle", type=int, default=500, help="connections idle after a header line")
    parser.add_argument("--slow-bodies", type=int, default=200, help="POSTs whose body comes a byte a second")
    parser.add_argument("--window-seconds", type=float, default=10.0)
    parser.add_argument("--scenarios", type=lambda text: text.split(","), default=["pages", "connections", "bodies"],
                        help="comma-separated: pages, connections, bodies (default: all)")
    asyncio.run(run(parser.parse_args()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
