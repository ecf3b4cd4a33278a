"""The dry run says when its input is probably not what was meant, instead of an empty cycle
that looks like a negotiator with nothing to do: swapped ``--slots``/``--jobs``, a
``condor_history`` dump (no idle job), and glideins whose START has expired at the cycle's time().

Real ads throughout: the bundled samples, CHTC's ``condor_history`` output, and the OSPool central
manager's ads (shared data), whose glidein START holds only while ``time() < GLIDEIN_ToRetire``
(or ``CurrentTime < GLIDEIN_ToRetire``).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import classad2
import pytest

from negotiatord.commands.input_hints import AdTally, input_hints
from negotiatord.cycle.result import CycleStats

from tests.service_harness import DATA, NOW, POOL, ROOT
from tests.commands.test_negotiate import as_ospool_user_would_submit, real_job_ads, write_ads

CONFIG = ROOT / "config" / "default.conf"
SLOTS, JOBS = ROOT / "samples" / "slots.ads", ROOT / "samples" / "jobs.ads"
HISTORY = DATA / "htcondor" / "history" / "sandyHistory.hist"   # five completed jobs
LAST_HEARD = 1783286388   # the latest LastHeardFrom among the OSPool sample's Machine ads


def dry_run(*args: str) -> tuple[subprocess.CompletedProcess, dict | None]:
    """The run, and its JSON document (None for ``--format table``)."""
    done = subprocess.run([sys.executable, "-m", "negotiatord", "negotiate", "--config", str(CONFIG), *args],
                          capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert done.returncode == 0, done.stderr
    return done, None if "table" in args else json.loads(done.stdout)


def warnings(stderr: str) -> list[str]:
    return [event["hint"] for event in map(json.loads, stderr.splitlines())
            if event.get("event") == "the input is probably not what was meant"]


def test_swapped_files_are_named() -> None:
    done, document = dry_run("--slots", str(JOBS), "--jobs", str(SLOTS))
    expected = ["the slots file holds no Machine ads (MyType: 58 Job): are --slots and --jobs swapped?",
                "the jobs file holds no Job ads (MyType: 15 Machine): are --slots and --jobs swapped?"]
    assert document["problems"] == expected
    assert warnings(done.stderr) == expected


def test_a_history_file_holds_no_idle_job() -> None:
    done, _ = dry_run("--slots", str(SLOTS), "--jobs", str(HISTORY), "--format", "table")
    assert done.stdout.rstrip().endswith("problems:\n  the jobs file holds 0 idle jobs (5 completed)")
    assert warnings(done.stderr) == ["the jobs file holds 0 idle jobs (5 completed)"]


def test_a_sound_input_gets_no_hint() -> None:
    done, document = dry_run("--slots", str(SLOTS), "--jobs", str(JOBS))
    assert document["cycle"]["matches"] > 0 and document["problems"] == [] and warnings(done.stderr) == []


@pytest.fixture(scope="module")
def ospool_jobs(tmp_path_factory) -> Path:
    jobs = real_job_ads()
    jobs += [as_ospool_user_would_submit(ad) for ad in jobs
             if "GlobalJobId" in ad and "PoolName" in str(ad.get("Requirements"))]
    return write_ads(tmp_path_factory.mktemp("jobs") / "jobs.ads", jobs)


def test_glideins_past_their_end_of_life_name_now(ospool_jobs: Path) -> None:
    month_later = NOW + 30 * 86400    # after every glidein's GLIDEIN_ToRetire in the sample
    done, document = dry_run("--slots", str(POOL), "--jobs", str(ospool_jobs), "--now", str(month_later))
    assert document["cycle"]["matches"] == 0 and document["cycle"]["jobs"] > 0
    hint = ("no job matched, and every slot's START reads the clock (time()): 143 of 143 slots' end of life "
            f"(GLIDEIN_ToRetire, else GLIDEIN_ToDie) is before --now {month_later}; to negotiate when the "
            f"ads were written, give --now {LAST_HEARD}")
    assert document["problems"][-1] == hint and warnings(done.stderr) == [hint]

    # at the sample's own time the same input matches, and says nothing of the clock
    done, document = dry_run("--slots", str(POOL), "--jobs", str(ospool_jobs), "--now", str(NOW))
    assert document["cycle"]["matches"] > 0 and warnings(done.stderr) == []


def glidein(name: str, retire: int) -> classad2.ClassAd:
    return classad2.ClassAd({"MyType": "Machine", "Name": name, "GLIDEIN_ToRetire": retire,
                             "START": classad2.ExprTree("time() < GLIDEIN_ToRetire")})


def test_the_clock_hint_needs_most_slots_expired_and_every_start_reading_the_clock() -> None:
    now = 2_000
    stats = CycleStats(duration_s=0.1, matches=0, rejections=1, slots=3, jobs=1, autoclusters=1, pie_spins=1,
                       pool_size=3.0)
    tallies = AdTally("Machine"), AdTally("Job")
    expired = [glidein("a", 1_000), glidein("b", 1_500), glidein("c", 3_000)]
    [hint] = input_hints(*tallies, expired, stats, now, now_given=False)
    assert "2 of 3 slots' end of life" in hint and "before now (2000)" in hint
    assert "give --now with that time" in hint       # the ads say nothing of when they were written

    assert input_hints(*tallies, [glidein("a", 1_000), glidein("b", 3_000), glidein("c", 3_000)], stats, now,
                       now_given=False) == []                  # most glideins still start jobs
    static = classad2.ClassAd({"MyType": "Machine", "Name": "d", "START": True})
    assert input_hints(*tallies, [*expired, static], stats, now, now_given=False) == []


def test_the_jobs_of_a_cluster_read_as_repeats_are_each_counted(tmp_path: Path) -> None:
    """A cluster's jobs that differ only in ProcId and GlobalJobId are read as repeats of its first
    ad; each is still a job of the tally, by its own status."""
    first = JOBS.read_text().split("\n\n")[0]
    ads = []
    for cluster, status, count in ((101, 4, 4), (102, 5, 3), (103, 4, 1)):
        for proc in range(count):
            ads.append(first.replace("JobStatus = 1", f"JobStatus = {status}")
                       .replace("ClusterId = 101", f"ClusterId = {cluster}").replace("ProcId = 0", f"ProcId = {proc}")
                       .replace("#101.0#", f"#{cluster}.{proc}#"))
    jobs = tmp_path / "jobs.ads"
    jobs.write_text("\n\n".join(ads) + "\n")
    done, document = dry_run("--slots", str(SLOTS), "--jobs", str(jobs))
    assert document["problems"] == ["the jobs file holds 0 idle jobs (5 completed, 3 held)"]
