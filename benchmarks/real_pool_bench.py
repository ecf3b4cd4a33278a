"""HTCondor's own negotiator against negotiatord, on the same real pool (the minipool), in one run.

For each configuration of the startd (a consumption policy on its partitionable slots, or none) and
each negotiator, a fresh pool is started with that negotiator alone; once it has run an idle cycle,
N jobs are submitted (N = the pool's cores, so that they fill every partitionable slot) and the
script waits until all N run. It prints, per run:

* **submit to running**: seconds from the submit to the last job running;
* **cycles**: negotiation cycles begun in that time, and the matches each made;
* **CPU per cycle**: the negotiator process's CPU time (user and system, its children included:
  negotiatord's collector query runs in a child) over the window, divided by the cycles;
* and the ratio of each figure, negotiatord over HTCondor's negotiator.

HTCondor's schedd sends RESCHEDULE to the negotiator when jobs are submitted, which starts a cycle
at once; negotiatord does not take HTCondor's commands yet, so it also runs with an HTTP reschedule
at submit time (``POST /v1/reschedule``, what condor_reschedule maps to) besides waiting for
``NEGOTIATOR_INTERVAL``.

    python benchmarks/real_pool_bench.py [--pslots 2] [--cores 16] [--interval 5]

A pool of many fake cores starts as many real (sleeping) jobs: keep ``--pslots x --cores`` to what
the machine bears (the default, 32 jobs, takes about 4 minutes in all).
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.minipool import MiniPool, minipool, wait_for  # noqa: E402
from tests.service_harness import DaemonProcess  # noqa: E402

CONFIGS = {
    "consumption policy": "",
    "no consumption policy": "SLOT_TYPE_1_CONSUMPTION_POLICY = False\n",
}
_HTCONDOR_TIME = re.compile(r"^(\d\d/\d\d/\d\d \d\d:\d\d:\d\d) ")


@dataclass
class Run:
    negotiator: str
    seconds: float
    cycles: int
    matches: list[int]
    cpu_s: float

    @property
    def cpu_per_cycle(self) -> float:
        return self.cpu_s / max(self.cycles, 1)


def _cpu_seconds(pid: int) -> float:
    """User and system time of ``pid`` and of its children it waited for (/proc/PID/stat)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = sum(int(value) for value in fields[11:15])   # utime, stime, cutime, cstime
    return ticks / 100.0


def _all_running(pool: MiniPool, cluster: int, jobs: int) -> bool:
    return len(pool.jobs(f"ClusterId == {cluster} && JobStatus == 2")) == jobs


def _htcondor_cycles(pool: MiniPool, since: float, until: float) -> list[int]:
    """Matches of each cycle HTCondor's negotiator began between ``since`` and ``until``."""
    cycles: list[int] = []
    started = False
    for line in (pool.directory / "log" / "NegotiatorLog").read_text(errors="replace").splitlines():
        stamp = _HTCONDOR_TIME.match(line)
        if stamp is None:
            continue
        at = datetime.strptime(stamp.group(1), "%m/%d/%y %H:%M:%S").timestamp()
        if "Started Negotiation Cycle" in line:
            started = since - 1 <= at <= until
            if started:
                cycles.append(0)
        elif started and "      Matched " in line:
            cycles[-1] += 1
    return cycles


def htcondor_run(config: str, pslots: int, cores: int, interval: int) -> Run:
    jobs = pslots * cores
    with minipool(cpus=jobs, pslots=pslots, with_negotiator=True,
                  config=config + f"NEGOTIATOR_INTERVAL = {interval}\nSCHEDD_INTERVAL = 2\n") as pool:
        negotiator = pool.daemon_pid_of("condor_negotiator")
        wait_for(lambda: "Finished Negotiation Cycle" in (pool.directory / "log" / "NegotiatorLog").read_text(),
                 60, "the negotiator's first cycle")
        cpu, start = _cpu_seconds(negotiator), time.time()
        cluster = pool.submit(jobs, arguments="600")
        wait_for(lambda: _all_running(pool, cluster, jobs), 600, "every job to run", every=0.25)
        seconds, cpu = time.time() - start, _cpu_seconds(negotiator) - cpu
        matches = _htcondor_cycles(pool, start, start + seconds)
        pool.remove_all()
    return Run("HTCondor's negotiator", seconds, len(matches), matches, cpu)


def negotiatord_run(config: str, pslots: int, cores: int, interval: int, reschedule: bool) -> Run:
    jobs = pslots * cores
    with minipool(cpus=jobs, pslots=pslots, config=config + "SCHEDD_INTERVAL = 2\n") as pool, \
            tempfile.TemporaryDirectory() as home:
        daemon = DaemonProcess(Path(home), include=str(pool.config), settings={
            "SEC_TOKEN_DIRECTORY": str(pool.token_directory()), "SEC_CLIENT_AUTHENTICATION_METHODS": "IDTOKENS",
            "NEGOTIATOR_INTERVAL": str(interval), "NEGOTIATOR_MIN_INTERVAL": "1", "NEGOTIATOR_CYCLE_DELAY": "1"})
        daemon.start()
        try:
            first = daemon.wait_for_cycle(0)["Id"]
            assert daemon.process is not None
            cpu, start = _cpu_seconds(daemon.process.pid), time.time()
            cluster = pool.submit(jobs, arguments="600")
            if reschedule:
                pool.wait_until_advertised("minipool@minipool", idle=jobs)
                daemon.request("POST", "/v1/reschedule")
            wait_for(lambda: _all_running(pool, cluster, jobs), 600, "every job to run", every=0.25)
            seconds, cpu = time.time() - start, _cpu_seconds(daemon.process.pid) - cpu
            made = [m["cycle"] for m in daemon.get(f"/v1/matches?limit={10 * jobs}")["matches"]]
            last = daemon.status()["last_cycle"]["Id"]
            matches = [made.count(cycle) for cycle in range(first + 1, last + 1)]
        finally:
            daemon.stop()
            pool.remove_all()
    how = "HTTP reschedule at submit" if reschedule else f"every {interval} s"
    return Run(f"negotiatord ({how})", seconds, len(matches), matches, cpu)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pslots", type=int, default=2)
    parser.add_argument("--cores", type=int, default=16, help="cores per partitionable slot")
    parser.add_argument("--interval", type=int, default=5, help="NEGOTIATOR_INTERVAL of both negotiators")
    args = parser.parse_args()
    print(f"{args.pslots} partitionable slots x {args.cores} cores, {args.pslots * args.cores} jobs, "
          f"NEGOTIATOR_INTERVAL = {args.interval}")
    for name, config in CONFIGS.items():
        runs = [htcondor_run(config, args.pslots, args.cores, args.interval),
                negotiatord_run(config, args.pslots, args.cores, args.interval, reschedule=False),
                negotiatord_run(config, args.pslots, args.cores, args.interval, reschedule=True)]
        base = runs[0]
        print(f"\n{name}")
        print(f"  {'negotiator':44} {'submit->running':>16} {'cycles':>7} {'CPU/cycle':>10}  matches per cycle")
        for run in runs:
            print(f"  {run.negotiator:44} {run.seconds:14.1f} s {run.cycles:7d} {run.cpu_per_cycle:8.3f} s  "
                  f"{run.matches}")
        for run in runs[1:]:
            cpu = (f"{run.cpu_per_cycle / base.cpu_per_cycle:.1f}" if base.cpu_per_cycle >= 0.01
                   else "n/a (HTCondor's is below the clock's 10 ms tick)")
            print(f"  ratio {run.negotiator} / HTCondor: submit->running {run.seconds / base.seconds:.2f}, "
                  f"cycles {run.cycles / max(base.cycles, 1):.2f}, CPU/cycle {cpu}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
