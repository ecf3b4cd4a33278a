"""Status latency through every phase of full cycles, against the idle daemon in the same run.

Starts ``negotiatord run`` on a loopback port, posts a "fill" pool from ``pool_generator`` (every
partitionable slot empty: a cycle matches thousands of jobs, and holds their jobs and slots), then
runs --cycles cycles back to back. Before each, fresh idle jobs and the startds' next periodic
slot update (newer ads: ending the holds, the slots empty again) are posted, so every cycle
matches and holds again. ``GET
/v1/status`` is asked every 10 ms throughout, and each answer is filed under the phase the status
itself reports (``cycle.phase``; ``idle`` between cycles, when the holds are filed on the event
loop). Printed: p50/p99/max per phase and in all, against the idle daemon's before the cycles.
Target: p99 < 50 ms in every phase.

    .venv/bin/python benchmarks/status_phases_bench.py                 # 1,000 slots, 5,000 jobs, 6 cycles
    .venv/bin/python benchmarks/status_phases_bench.py --slots 5k --jobs 25k --cycles 4
"""

from __future__ import annotations

import argparse
import asyncio
import re
import sys
import tempfile
import time
from pathlib import Path

import aiohttp

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE)]

from load_bench import Daemon, batches, percentile, periodic_update, post_all, wait_ready  # noqa: E402
from pool_generator import count_arg, generate_pool  # noqa: E402

from negotiatord.feed import AdKind  # noqa: E402

TARGET_STATUS_P99_MS = 50.0


def refreshed_slots(texts: list[str], round_number: int, seed: int) -> list[str]:
    """The startds' ``round_number``-th periodic update (:func:`periodic_update`), heard by the
    collector later (``LastHeardFrom``): newer ads, which end the holds on their slots."""
    def later(line: re.Match[str]) -> str:
        return f"LastHeardFrom = {int(line.group(1)) + round_number * 300}"
    return [_HEARD.sub(later, text) for text in periodic_update(texts, round_number, seed)]


_HEARD = re.compile(r"^LastHeardFrom = (\d+)$", re.MULTILINE)


def fresh_jobs(texts: list[str], round_number: int) -> list[str]:
    """The same job ads as new jobs: other cluster ids and global job ids."""
    return [text.replace("ClusterId = ", f"ClusterId = {round_number}")
            .replace('GlobalJobId = "', f'GlobalJobId = "round{round_number}.') for text in texts]


def row(label: str, values: list[float], idle_p99: float) -> str:
    p99 = percentile(values, .99)
    return (f"  {label:<14} {len(values):>6} {percentile(values, .5):8.2f} ms {p99:8.2f} ms "
            f"{max(values, default=float('nan')):8.2f} ms {p99 / idle_p99:8.1f}x "
            f"{'MET' if p99 < TARGET_STATUS_P99_MS else 'NOT MET'}")


async def run(args: argparse.Namespace) -> None:
    pool = generate_pool(args.slots, args.jobs, args.seed, scenario="fill")
    slot_batches, job_batches = batches(pool.slot_ads, 500), batches(pool.job_ads, 500)
    with tempfile.TemporaryDirectory(prefix="negotiatord-phases-") as home:
        daemon = Daemon(Path(home), pool.now, "thread")
        try:
            async with aiohttp.ClientSession() as session:
                await wait_ready(session, daemon)
                token = daemon.token_file.read_text().strip()
                url = daemon.url
                deadline = time.monotonic() + 600
                await post_all(session, url, AdKind.SLOT, slot_batches, token, 2, deadline)
                await post_all(session, url, AdKind.JOB, job_batches, token, 2, deadline)

                async def status() -> tuple[float, dict]:
                    started = time.perf_counter()
                    async with session.get(url + "/v1/status") as answer:
                        body = await answer.json()
                    return (time.perf_counter() - started) * 1000, body

                idle = []
                for _ in range(300):
                    idle.append((await status())[0])
                    await asyncio.sleep(0.01)
                by_phase: dict[str, list[float]] = {}
                seen, matches = None, []
                (_, body) = await status()
                first = (body["last_cycle"] or {}).get("Id", 0)
                for number in range(1, args.cycles + 1):
                    await post_all(session, url, AdKind.JOB, fresh_jobs(job_batches, number), token, 2, deadline)
                    await post_all(session, url, AdKind.SLOT, refreshed_slots(slot_batches, number, args.seed),
                                   token, 2, deadline)
                    async with session.post(url + "/v1/reschedule", headers={"Authorization": f"Bearer {token}"}):
                        pass
                    while True:
                        latency, body = await status()
                        phase = body["cycle"]["phase"] if body["cycle"]["running"] else "idle"
                        by_phase.setdefault(phase, []).append(latency)
                        last = body["last_cycle"]
                        finished = not body["cycle"]["running"] and last and last["Id"] >= first + number
                        if finished and last["Id"] != seen:
                            seen = last["Id"]
                            matches.append(last["Matches"])
                            break
                        await asyncio.sleep(0.01)
                    for _ in range(20):      # the holds are filed after the cycle ends
                        latency, _ = await status()
                        by_phase.setdefault("idle", []).append(latency)
                        await asyncio.sleep(0.01)
        finally:
            daemon.stop()
    idle_p99 = percentile(idle, .99)
    print(f"{args.slots:,} slots (fill), {args.jobs:,} jobs; {len(matches)} cycles matched {matches}")
    print(f"  {'phase':<14} {'probes':>6} {'p50':>11} {'p99':>11} {'max':>11} {'p99/idle':>9}")
    print(row("idle daemon", idle, idle_p99))
    for phase, values in by_phase.items():
        print(row(phase, values, idle_p99))
    print(row("all phases", [v for values in by_phase.values() for v in values], idle_p99))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--slots", type=count_arg, default=1000)
    parser.add_argument("--jobs", type=count_arg, default=5000)
    parser.add_argument("--cycles", type=int, default=6)
    parser.add_argument("--seed", type=int, default=0)
    asyncio.run(run(parser.parse_args()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
