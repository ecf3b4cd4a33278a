"""Load on the daemon: ad updates ingested per second, and status latency while a cycle runs.

Starts ``negotiatord run`` on a loopback port with an OSPool-shaped pool from
``pool_generator.generate_pool`` (real slot and job shapes), then measures, in one run:

1. the parse floor: ``negotiatord.feed.take_in_text`` on the very same batches, in this process
   (what any ingestion built on classad2 pays per ad);
2. status latency (``GET /v1/status``) with the daemon idle;
3. ingestion: every slot and job ad posted in batches (first load), then the slot ads posted
   again as the startds' next periodic update (``MyCurrentTime`` later, a new ``LoadAvg``, some
   claimed slots switched between Busy and Idle: every update replaces its ad), as fast as the
   daemon takes them;
4. during negotiation cycles over the whole pool, run back to back: status latency probed every
   10 ms, first alone (an idle window), then while slot updates keep coming (a quarter of the
   slots, round after round of periodic updates), one window for each rate of --slot-rates, then
   alone again. The updates come as fast as the daemon takes them (``max``, the default) or R a
   second paced evenly (a tenth of a second's worth of ads every 0.1 s, at most --batch a post,
   as a pool's startds spread their updates over UPDATE_INTERVAL). Each window lasts at least
   --window-seconds and until --min-cycles cycles started and ended in it, at most
   --max-seconds. For each window: the slot updates actually ingested per second, the median
   cycle time against the idle cycle (the ratio; the baseline is the cycles of both idle
   windows, which brackets the first cycles after the load and the drift of a shared machine),
   the median of each of the cycle's phases, the status latency while a cycle ran, and the
   daemon's RSS as the window opened and closed (a daemon whose memory grows with the updates it
   takes shows it here).

``--cycle-worker fork`` runs the daemon with ``NEGOTIATORD_CYCLE_WORKER = fork`` (each cycle
negotiated in a child process forked for it) instead of the default, a thread of the daemon.

The OSPool's real rate is ~150 slot updates/s (45.6k slots re-advertised every UPDATE_INTERVAL =
300 s); paced windows at that rate and at multiples of it say how much the cycle slows at a
pool's real load. Figures are printed with the targets (>= 20,000 ad updates/s without a cycle;
>= 7,500 slot updates/s, 50x the OSPool's rate, while cycles run; status p99 < 50 ms during a
cycle; a cycle under update load <= 1.5x the idle cycle) and ratios against the baselines of the
same run.
Loopback only; bounded by --max-seconds per phase. Small by default (5k slots / 5k jobs);
``--big`` is docs/performance.md's 45k-slot, 50k-job pool.

    .venv/bin/python benchmarks/load_bench.py                 # 5,000 slots, 5,000 jobs
    .venv/bin/python benchmarks/load_bench.py --big           # 45,000 slots, 50,000 jobs
    .venv/bin/python benchmarks/load_bench.py --cycle-worker fork      # the cycle in a child process
    .venv/bin/python benchmarks/load_bench.py --big --slot-rates 150,750,1500,7500,max \
        --window-seconds 30 --max-seconds 150                          # 1x, 5x, 10x, 50x the OSPool
    .venv/bin/python benchmarks/load_bench.py --slots 20k --jobs 20k --batch 500
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import aiohttp
import classad2

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path[:0] = [str(ROOT), str(HERE)]

from pool_generator import CONFIG_PATH, count_arg, generate_pool  # noqa: E402

from negotiatord.feed import AdKind, take_in_text  # noqa: E402

TARGET_UPDATES_PER_S = 20_000
TARGET_UPDATES_DURING_CYCLES_PER_S = 7_500
TARGET_CYCLE_UNDER_LOAD = 1.5
TARGET_STATUS_P99_MS = 50.0


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


def batches(ads: Sequence[classad2.ClassAd], size: int) -> list[str]:
    return ["\n".join(ad.printOld() for ad in ads[i:i + size]) for i in range(0, len(ads), size)]


# A startd's periodic update (every UPDATE_INTERVAL, 300 s by default) advertises the same slot with
# its clock, load and, for a claimed slot, activity as they are now.
UPDATE_INTERVAL_S = 300
UPDATE_ROUNDS = 6          # distinct rounds posted during the cycles, then posted again in turn
_CLOCK_LINE = re.compile(r"^MyCurrentTime = (\d+)$", re.MULTILINE)
_CLAIMED = re.compile(r'^State = "Claimed"$', re.MULTILINE)
_CLAIMED_ACTIVITY = re.compile(r'^Activity = "(Busy|Idle)"$', re.MULTILINE)


def periodic_update(texts: list[str], round_number: int, seed: int) -> list[str]:
    """``texts`` (long-form slot batches) as the startds' ``round_number``-th periodic update
    sends them: ``MyCurrentTime`` later by as many update intervals, a new ``LoadAvg``, and one
    in ten claimed slots switched between Busy and Idle. Every ad differs from the one filed
    before it, so every post replaces an ad, as a real update does."""
    rng = random.Random(seed * 1000 + round_number)

    def clock(line: re.Match[str]) -> str:
        return (f"MyCurrentTime = {int(line.group(1)) + round_number * UPDATE_INTERVAL_S}\n"
                f"LoadAvg = {rng.uniform(0, 1.5):.3f}")

    def activity(line: re.Match[str]) -> str:
        if rng.random() >= 0.1:
            return line.group(0)
        return f'Activity = "{"Idle" if line.group(1) == "Busy" else "Busy"}"'

    def switched(ad: str) -> str:
        return _CLAIMED_ACTIVITY.sub(activity, ad) if _CLAIMED.search(ad) else ad

    return ["\n\n".join(map(switched, _CLOCK_LINE.sub(clock, text).split("\n\n"))) for text in texts]


# Paced slot updates: a post every PACING_TICK_S carrying a tick's worth of ads, so a rate is spread
# evenly over the second as the startds of a pool spread their periodic updates.
PACING_TICK_S = 0.1


def paced_batches(rate: float, batch_limit: int, tick_s: float = PACING_TICK_S) -> tuple[int, float]:
    """Ads per post and seconds between posts that send ``rate`` ads a second evenly: a tick's
    worth of ads every ``tick_s``, but at least one ad a post (then posts are further apart) and at
    most ``batch_limit`` (then closer together). ``size / interval`` is ``rate`` exactly."""
    if rate <= 0 or batch_limit < 1 or tick_s <= 0:
        raise ValueError(f"pacing needs a positive rate, batch limit and tick, not {rate}, {batch_limit}, {tick_s}")
    size = max(1, min(batch_limit, round(rate * tick_s)))
    return size, size / rate


def regroup(texts: list[str], size: int) -> list[str]:
    """Long-form batches of ads (blank-line separated) as batches of ``size`` ads, in order."""
    ads = [ad.strip() for text in texts for ad in text.split("\n\n") if ad.strip()]
    return ["\n\n".join(ads[i:i + size]) + "\n" for i in range(0, len(ads), size)]


def rate_list(text: str) -> list[float | None]:
    """``"150,1500,7500,max"`` -> [150.0, 1500.0, 7500.0, None] (argparse type for --slot-rates;
    ``max``: as fast as the daemon takes them)."""
    rates: list[float | None] = []
    for item in text.split(","):
        item = item.strip().lower()
        if item == "max":
            rates.append(None)
            continue
        try:
            rate = float(count_arg(item))
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a rate: {item!r} (updates per second, or max)") from None
        if rate <= 0:
            raise argparse.ArgumentTypeError(f"a rate must be positive, not {item!r}")
        rates.append(rate)
    return rates


IDLE, IDLE_AGAIN = "none (idle)", "none (idle, again)"
AS_FAST_AS_POSSIBLE = "as fast as possible"


@dataclass
class Window:
    """One measurement window during back-to-back cycles: the slot update rate asked (None: as
    fast as possible), status latencies while a cycle ran, and the cycles that started and ended
    in it."""
    label: str
    rate: float | None
    latencies: list[float]
    cycles: list[dict]
    updates: int
    seconds: float
    resident_mib: tuple[float, float] = (float("nan"), float("nan"))   # the daemon's RSS as it opened and closed

    @property
    def rate_ingested(self) -> float:
        return self.updates / self.seconds if self.seconds > 0 else float("nan")

    @property
    def median_cycle(self) -> float:
        return percentile([figures["Duration"] for figures in self.cycles], .5)


def resident_mib(pid: int) -> float:
    """The RSS of process ``pid`` (VmRSS) in MiB."""
    with open(f"/proc/{pid}/status") as status_file:
        kib = next(line.split()[1] for line in status_file if line.startswith("VmRSS:"))
    return int(kib) / 1024


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class Daemon:
    def __init__(self, home: Path, now: int, cycle_worker: str) -> None:
        shutil.copy(CONFIG_PATH, home / CONFIG_PATH.name)
        self.port = free_port()
        self.config = home / "negotiatord.conf"
        self.config.write_text("\n".join([
            f"include : $(CONFIG_ROOT)/{CONFIG_PATH.name}",
            f"NEGOTIATORD_STATE_DIR = {home / 'state'}",
            f"NEGOTIATORD_HTTP_PORT = {self.port}",
            "NEGOTIATORD_MAX_BODY_BYTES = 256 * 1024 * 1024",
            f"NEGOTIATORD_CYCLE_WORKER = {cycle_worker}",
            "CLASSAD_LIFETIME = 86400",
            # cycles only when the benchmark asks for one
            "NEGOTIATOR_INTERVAL = 86400", "NEGOTIATOR_CYCLE_DELAY = 0", "NEGOTIATOR_MIN_INTERVAL = 0", ""]))
        self.log_path = home / "daemon.log"
        self.log = self.log_path.open("w")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "negotiatord", "run", "--config", str(self.config), "--now", str(now)],
            cwd=ROOT, stdout=self.log, stderr=self.log)
        self.url = f"http://127.0.0.1:{self.port}"
        self.token_file = home / "state" / "token"

    def stop(self) -> None:
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(30)
        except subprocess.TimeoutExpired:
            self.process.kill()
        self.log.close()


async def wait_ready(session: aiohttp.ClientSession, daemon: Daemon) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            async with session.get(daemon.url + "/v1/status") as answer:
                if answer.status == 200:
                    return
        except aiohttp.ClientError:
            pass
        await asyncio.sleep(0.05)
    raise SystemExit("the daemon did not come up; see its log")


async def status(session: aiohttp.ClientSession, url: str) -> tuple[float, dict]:
    started = time.perf_counter()
    async with session.get(url + "/v1/status") as answer:
        body = await answer.json()
    return (time.perf_counter() - started) * 1000, body


async def post_batch(session: aiohttp.ClientSession, url: str, kind: AdKind, body: str, token: str) -> int:
    """POST one batch of ads; returns the ads accepted (a rejected ad stops the benchmark)."""
    async with session.post(f"{url}/v1/ads/{kind.value}", data=body.encode(),
                            headers={"Authorization": f"Bearer {token}"}) as answer:
        reply = await answer.json()
        if answer.status != 200 or reply["rejected"]:
            raise SystemExit(f"ingestion failed: {answer.status} {str(reply)[:300]}")
        return int(reply["accepted"])


async def post_all(session: aiohttp.ClientSession, url: str, kind: AdKind, texts: list[str], token: str,
                   concurrency: int, deadline: float, done: asyncio.Event | None = None) -> int:
    """POST ``texts`` with ``concurrency`` requests in flight until ``deadline`` or ``done``;
    returns the ads accepted."""
    queue = list(reversed(texts))
    accepted = 0

    async def worker() -> None:
        nonlocal accepted
        while queue and time.monotonic() < deadline and not (done and done.is_set()):
            taken = await post_batch(session, url, kind, queue.pop(), token)
            accepted += taken      # after the await: the workers' sums must not interleave

    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return accepted


def print_phases(idle: list[dict], loaded: list[dict]) -> None:
    """The median of each phase of the daemon's cycle, idle against under slot updates."""
    names = dict.fromkeys(name for figures in idle + loaded for name in figures
                          if name.startswith("Phase") and name.endswith("Duration"))
    for name in names:
        quiet = percentile([figures.get(name, 0.0) for figures in idle], .5)
        busy = percentile([figures.get(name, 0.0) for figures in loaded], .5)
        print(f"    {name[len('Phase'):-len('Duration')]:<22} idle {quiet:6.2f} s   under slot updates {busy:6.2f} s")


async def run(args: argparse.Namespace) -> None:
    print(f"generating {args.slots} slots and {args.jobs} idle jobs (pool_generator, seed {args.seed}) ...")
    pool = generate_pool(args.slots, args.jobs, args.seed)
    slot_batches, job_batches = batches(pool.slot_ads, args.batch), batches(pool.job_ads, args.batch)
    slot_bytes = sum(map(len, slot_batches)) / len(pool.slot_ads)
    print(f"  {pool.generation_s:.1f} s; slot ads {slot_bytes:.0f} bytes each in the long form, "
          f"batches of {args.batch}")

    started = time.perf_counter()
    floor_ads = sum(len(take_in_text(AdKind.SLOT, text, "bench").accepted) for text in slot_batches)
    floor = floor_ads / (time.perf_counter() - started)
    print(f"parse floor (take_in_text in-process, same batches): {floor:,.0f} slot ads/s")

    with tempfile.TemporaryDirectory(prefix="negotiatord-load-") as home:
        daemon = Daemon(Path(home), pool.now, args.cycle_worker)
        try:
            timeout = aiohttp.ClientTimeout(total=None, sock_read=600)
            async with aiohttp.ClientSession(timeout=timeout) as session:
                await wait_ready(session, daemon)
                await report(session, daemon, args, slot_batches, job_batches, floor, len(pool.slot_ads))
        finally:
            daemon.stop()


async def report(session: aiohttp.ClientSession, daemon: Daemon, args: argparse.Namespace,
                 slot_batches: list[str], job_batches: list[str], floor: float, slots: int) -> None:
    token = daemon.token_file.read_text().strip()
    url = daemon.url
    idle = [(await status(session, url))[0] for _ in range(300)]
    print(f"status latency, idle:        p50 {percentile(idle, .5):6.2f} ms  p99 {percentile(idle, .99):6.2f} ms")

    phase_end = time.monotonic() + args.max_seconds
    started = time.perf_counter()
    first_load = await post_all(session, url, AdKind.SLOT, slot_batches, token, args.concurrency, phase_end)
    first_load += await post_all(session, url, AdKind.JOB, job_batches, token, args.concurrency, phase_end)
    elapsed = time.perf_counter() - started
    print(f"first load:                  {first_load:,} ads in {elapsed:.1f} s = {first_load / elapsed:,.0f} ads/s")

    rates = {}
    for kind, texts in ((AdKind.SLOT, periodic_update(slot_batches, 1, args.seed)), (AdKind.JOB, job_batches)):
        started = time.perf_counter()
        updated = await post_all(session, url, kind, texts, token, args.concurrency,
                                 time.monotonic() + args.max_seconds)
        rates[kind] = updated / (time.perf_counter() - started)
        print(f"{kind.my_type.lower()} updates, no cycle:   {updated:,} = {rates[kind]:,.0f} updates/s"
              + (f" ({rates[kind] / floor:.2f}x the parse floor)" if kind is AdKind.SLOT else ""))

    # a quarter of the slots, updated round after round (each round's ads made before the windows)
    chunk = slot_batches[:max(1, len(slot_batches) // 4)]
    rounds = [periodic_update(chunk, number, args.seed) for number in range(2, 2 + UPDATE_ROUNDS)]

    async def cycle_id() -> int:
        """The id of the cycle running now or, if none runs, of the next one."""
        body = (await status(session, url))[1]
        last = body["last_cycle"]["Id"] if body["last_cycle"] else 0
        return last + 1

    async def measure(label: str, rate: float | None) -> Window:
        """Cycles back to back for at least --window-seconds and until --min-cycles cycles started
        and ended in the window (at most --max-seconds): status probed every 10 ms, and, unless
        ``label`` is the idle window, slot updates posted as fast as the daemon takes them
        (``rate`` None) or ``rate`` a second, paced evenly. The cycle running when the window
        opens is not the window's."""
        first = await cycle_id() + 1
        opened_mib = resident_mib(daemon.process.pid)
        latencies: list[float] = []
        cycles: dict[int, dict] = {}
        updates = [0]
        done = asyncio.Event()
        started = time.monotonic()
        shortest, longest = started + args.window_seconds, started + args.max_seconds

        async def probe() -> None:
            """Status every 10 ms, counting the answers given while a cycle ran; when none runs,
            file the last cycle and ask for the next one (back-to-back cycles, as on a busy
            central manager)."""
            while True:
                now = time.monotonic()
                if now >= longest or (now >= shortest and sum(i >= first for i in cycles) >= args.min_cycles):
                    done.set()
                    return
                latency, body = await status(session, url)
                if body["cycle"]["running"]:
                    latencies.append(latency)
                else:
                    if body["last_cycle"]:
                        cycles[body["last_cycle"]["Id"]] = body["last_cycle"]
                    async with session.post(url + "/v1/reschedule",
                                            headers={"Authorization": f"Bearer {token}"}) as answer:
                        assert answer.status == 202
                await asyncio.sleep(0.01)

        async def update_fast() -> None:
            for number in itertools.count():
                if done.is_set():
                    return
                updates[0] += await post_all(session, url, AdKind.SLOT, rounds[number % len(rounds)], token,
                                             args.concurrency, longest, done)

        async def update_paced(rate: float) -> None:
            """``rate`` slot updates a second: a post of ``size`` ads every ``interval`` seconds,
            at most --concurrency in flight; posts the daemon falls behind on go out as soon as
            one in flight returns, so the ingested rate says whether it kept up."""
            size, interval = paced_batches(rate, args.batch, PACING_TICK_S)
            posts = itertools.cycle([text for paced_round in rounds for text in regroup(paced_round, size)])
            in_flight = asyncio.Semaphore(args.concurrency)
            sent: set[asyncio.Task[None]] = set()

            async def post(body: str) -> None:
                try:
                    taken = await post_batch(session, url, AdKind.SLOT, body, token)
                    updates[0] += taken
                finally:
                    in_flight.release()

            for number in itertools.count():
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(done.wait(), max(0.0, started + number * interval - time.monotonic()))
                if done.is_set():
                    break
                await in_flight.acquire()
                task = asyncio.create_task(post(next(posts)))
                sent.add(task)
                task.add_done_callback(sent.discard)
            await asyncio.gather(*sent)

        work = [probe()]
        if label not in (IDLE, IDLE_AGAIN):
            work.append(update_fast() if rate is None else update_paced(rate))
        await asyncio.gather(*work)
        seconds = time.monotonic() - started
        last = await cycle_id() - 1        # one running now began in the window but ends after it
        return Window(label, rate, latencies, [cycles[i] for i in sorted(cycles) if first <= i <= last],
                      updates[0], seconds, (opened_mib, resident_mib(daemon.process.pid)))

    # idle windows before and after the windows under updates: their cycles together are the
    # baseline, so the first cycles after the load and the drift of a shared machine weigh on both
    windows = [await measure(IDLE, None)]
    for asked in args.slot_rates:
        windows.append(await measure(AS_FAST_AS_POSSIBLE if asked is None else f"{asked:,.0f} /s paced", asked))
    windows.append(await measure(IDLE_AGAIN, None))
    quiet = Window("idle", None, windows[0].latencies + windows[-1].latencies,
                   windows[0].cycles + windows[-1].cycles, 0, windows[0].seconds + windows[-1].seconds)
    loaded = windows[1:-1]
    final = (await status(session, url))[1]
    while final["cycle"]["running"]:
        await asyncio.sleep(0.2)
        final = (await status(session, url))[1]
    cycle = final["last_cycle"] or {}
    idle_cycle = quiet.median_cycle
    print(f"during cycles, back to back (the last took {cycle.get('Duration', float('nan')):.1f} s over "
          f"{cycle.get('TotalSlots')} slots, {cycle.get('NumIdleJobs')} idle jobs, {cycle.get('Matches')} matches; "
          f"windows >= {args.window_seconds:.0f} s and >= {args.min_cycles} cycles, <= {args.max_seconds:.0f} s):")
    print(f"  {'slot updates':<22} {'ingested':>11} {'cycles':>6} {'median cycle':>12} {'vs idle':>8}"
          f" {'status p50':>10} {'p99':>9} {'max':>9} {'p99 vs no cycle':>15} {'daemon RSS, MiB':>16}")
    for window in windows:
        p50, p99 = percentile(window.latencies, .5), percentile(window.latencies, .99)
        taken = "" if window.label in (IDLE, IDLE_AGAIN) else f"{window.rate_ingested:,.0f} /s"
        print(f"  {window.label:<22} {taken:>11} {len(window.cycles):>6} {window.median_cycle:>10.2f} s"
              f" {window.median_cycle / idle_cycle:>7.2f}x {p50:>7.2f} ms {p99:>6.2f} ms"
              f" {max(window.latencies, default=float('nan')):>6.2f} ms {p99 / percentile(idle, .99):>14.1f}x"
              f" {window.resident_mib[0]:>7.0f} -> {window.resident_mib[1]:.0f}")
    print(f"  cycle time, idle, median of both idle windows: {idle_cycle:.2f} s ({len(quiet.cycles)} cycles)")
    for window in loaded:
        print(f"  phases, median, {window.label} (slot updates: {window.updates:,} in {window.seconds:.1f} s):")
        print_phases(quiet.cycles, window.cycles)
    print()
    for kind, rate in rates.items():
        print(f"target >= {TARGET_UPDATES_PER_S:,} updates/s, {kind.value} without a cycle: {rate:,.0f}/s "
              f"{'MET' if rate >= TARGET_UPDATES_PER_S else 'NOT MET'}")
    for window in loaded:
        if window.rate is None or window.rate >= TARGET_UPDATES_DURING_CYCLES_PER_S:
            print(f"target >= {TARGET_UPDATES_DURING_CYCLES_PER_S:,} updates/s, slots during cycles, "
                  f"{window.label}: {window.rate_ingested:,.0f}/s "
                  f"{'MET' if window.rate_ingested >= TARGET_UPDATES_DURING_CYCLES_PER_S else 'NOT MET'}")
        ratio = window.median_cycle / idle_cycle
        print(f"target cycle under slot updates <= {TARGET_CYCLE_UNDER_LOAD}x idle, {window.label}: {ratio:.2f}x "
              f"{'MET' if ratio <= TARGET_CYCLE_UNDER_LOAD else 'NOT MET'}")
    for window in windows:
        p99 = percentile(window.latencies, .99)
        print(f"target status p99 < {TARGET_STATUS_P99_MS:.0f} ms during cycles, {window.label}: {p99:.2f} ms "
              f"{'MET' if p99 < TARGET_STATUS_P99_MS else 'NOT MET'}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--slots", type=count_arg, default=5000)
    parser.add_argument("--jobs", type=count_arg, default=5000)
    parser.add_argument("--big", action="store_true", help="docs/performance.md's pool: 45,000 slots, 50,000 jobs")
    parser.add_argument("--batch", type=int, default=1000, help="ads per request")
    parser.add_argument("--concurrency", type=int, default=2, help="requests in flight")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--cycle-worker", choices=("thread", "fork"), default="thread",
                        help="NEGOTIATORD_CYCLE_WORKER: negotiate on a thread (the default) or in a forked child")
    parser.add_argument("--max-seconds", type=float, default=60.0, help="bound on each phase and window")
    parser.add_argument("--window-seconds", type=float, default=10.0,
                        help="shortest measurement window during cycles (default 10)")
    parser.add_argument("--min-cycles", type=int, default=3,
                        help="cycles a window must see start and end, within --max-seconds (default 3)")
    parser.add_argument("--slot-rates", "--slot-rate", type=rate_list, default=[None], metavar="R[,R...]",
                        help="slot updates per second during cycles, paced evenly, one window each after "
                             "the idle one; max: as fast as the daemon takes them (default)")
    args = parser.parse_args()
    if args.big:
        args.slots, args.jobs = 45_000, 50_000
    asyncio.run(run(args))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
