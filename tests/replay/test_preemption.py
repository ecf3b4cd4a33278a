"""Preemption in a replay, and the accountant's after-cycle step the replay shares with the daemon.

References:
- HTCondor manual, "Configuration macros", condor_negotiator: PREEMPTION_REQUIREMENTS (with
  RemoteUserPrio and SubmitterUserPrio inserted), PRIORITY_HALFLIFE; "User priorities and
  negotiation": the real priority moves towards the resources used by a factor of 0.5 per
  half-life. A vacated job without checkpoint starts again from the beginning (manual, "Job
  preemption"); its time on the slot is badput.
- YuniKorn, "Quota Enforcement through Preemption": a group over its maximum starts a timer of its
  quota preemption delay; when due, its youngest jobs are preempted down to the maximum.
- Kueue KEP-4136 (admission fair sharing): usage <- (1 - a) usage + a current, a = 1 - 0.5^(dt / half-life).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from negotiatord.accountant import AccountantStore
from negotiatord.feed import AdKind, AdStore
from negotiatord.feed.api import take_in_text
from negotiatord.pool.builder import SnapshotBuilder
from negotiatord.publish.matchlog import MatchLog, Retention
from negotiatord.replay import NodeShape, SimulatedPool, read_trace, replay
from negotiatord.replay.report import job_rows, summary, utilization
from negotiatord.service.cycles import CycleRunner
from negotiatord.settings import Settings, load_settings
from tests.replay.conftest import CPU_CENTRIC

BASE = CPU_CENTRIC
# The priority moves half way to the usage each minute, so one minute of a running job takes its
# submitter from 0.5 to 0.75, 1.2 times 0.5 and more.
PRIORITY = BASE + """\
PRIORITY_HALFLIFE = 60
PREEMPTION_REQUIREMENTS = RemoteUserPrio > TARGET.SubmitterUserPrio * 1.2
"""
# group_g1's static quota of 1 cpu is also its maximum; surplus lets it take the node's second
# cpu, and two minutes over its maximum it gives it back.
QUOTA = BASE + """\
GROUP_NAMES = group_g1
GROUP_QUOTA_group_g1 = 1
GROUP_ACCEPT_SURPLUS = True
NEGOTIATORD_QUOTA_PREEMPTION = True
GROUP_QUOTA_PREEMPTION_DELAY_group_g1 = 120
NEGOTIATORD_SUBMITTER_ORDER = admission_fair_sharing
NEGOTIATORD_AFS_HALF_LIFE = 60
"""
PRIORITY_TRACE = "job,submit,runtime,cpus,memory,user\na,0,1000,1,512,u1\nb,60,100,1,512,u2\n"
QUOTA_TRACE = "job,submit,runtime,cpus,memory,user,group\ny1,0,1000,1,512,u1,group_g1\ny2,30,1000,1,512,u1,group_g1\n"


def files(folder: Path, config: str, trace: str) -> tuple[Settings, Path]:
    (folder / "replay.conf").write_text(config)
    (folder / "trace.csv").write_text(trace)
    return load_settings(folder / "replay.conf"), folder / "trace.csv"


def test_a_preempted_job_goes_back_to_the_queue_with_its_whole_run_time(tmp_path: Path) -> None:
    """One one-cpu node. a (u1, 1000 s) starts at 0. At 60 u1's priority is still the 0.5 the
    cycle at 0 left, so b (u2) cannot preempt; the cycle at 60 advances u1 to 0.75 (> 1.2 x 0.5),
    and at 120 b preempts a. a goes back to the queue after 120 s of badput; u1, now at 0.875,
    cannot take the slot back from u2 at 0.5. b ends at 220, a starts again at 240 and runs its
    whole 1000 s, to 1240; the cycle at 1260 finds nothing left to do."""
    config, trace = files(tmp_path, PRIORITY, PRIORITY_TRACE)
    pool = SimulatedPool.alike(1, NodeShape.parse("Cpus=1, Memory=1024"))
    result = replay(read_trace(trace), config, pool)
    rows = {row[0]: row for row in job_rows(result)}
    # job, submit, start, finish, wait, turnaround, stretch ...
    assert rows["a"][:7] == ["a", "0", "240", "1240", "240", "1240", "1.24"]
    assert rows["b"][:7] == ["b", "60", "120", "220", "60", "160", "1.6"]
    assert [(cycle.time, cycle.matches, cycle.preemptions) for cycle in result.cycles] == [
        (0, 1, {}), (60, 0, {}), (120, 1, {"priority": 1}), (180, 0, {}), (240, 1, {}), (1260, 0, {})]
    a, b = result.runs
    assert (a.preempted, a.badput_cpu_s, b.preempted) == (1, 120.0, 0)
    document = summary(result, read_trace(trace).cleaning, pool, "trace.csv")
    assert document["preemptions"] == {"by_rule": {"priority": 1, "rank": 0, "fair_sharing": 0, "quota": 0},
                                       "jobs_preempted": 1, "badput_cpu_s": 120.0}
    # busy: a's 1000 s, b's 100 s and the 120 s lost, over the 1240 s up to a's finish, of one cpu
    assert utilization(result) == pytest.approx(1220 / 1240)
    assert [c["Preemptions"] for c in document["cycles"]["per_cycle"]] == [0, 0, 1, 0, 0, 0]


def test_without_preemption_configured_the_same_trace_waits(tmp_path: Path) -> None:
    """HTCondor's default PREEMPTION_REQUIREMENTS is False: b waits for a to end."""
    config, trace = files(tmp_path, BASE, PRIORITY_TRACE)
    result = replay(read_trace(trace), config, SimulatedPool.alike(1, NodeShape.parse("Cpus=1, Memory=1024")))
    assert [(run.job.id, run.start, run.preempted) for run in result.runs] == [("a", 0, 0), ("b", 1020, 0)]


def test_quota_timers_and_admission_usage_run_after_each_cycle(tmp_path: Path) -> None:
    """y1 starts at 0 within group_g1's maximum of 1 cpu; y2 starts at 60 on surplus: 2 > 1, so the
    timer starts at 60, due at 180. Nothing happens in between, so the cycle at 120 is skipped,
    and the accountant is advanced over it as it would have been: u1's admission usage in cpus is
    1 at 0 (the first sample), 1.5 at 60 and 1.75 at 120 (half way to the 2 held, each minute)."""
    config, trace = files(tmp_path, QUOTA, QUOTA_TRACE)
    pool = SimulatedPool.alike(1, NodeShape.parse("Cpus=2, Memory=1024"))
    result = replay(read_trace(trace), config, pool, until=170)
    assert [cycle.time for cycle in result.cycles] == [0, 60]
    usage = result.accountant.admission_usage("group_g1.u1@trace")
    assert usage is not None and (usage.resources["cpus"], usage.last_update_time) == (1.75, 120)
    (timer,) = result.accountant.quota_timers.values()
    assert (timer.group, dict(timer.maximum), timer.started, timer.due) == ("group_g1", {"matches": 1.0}, 60, 180)


def test_a_due_quota_timer_preempts_the_youngest_job_back_to_the_queue(tmp_path: Path) -> None:
    """At 180, the timer due, the cycle preempts y2 (started at 60, younger than y1) with no job to
    take its cpu: y2 waits in the queue again, after 120 s of badput. The replay does not skip
    over the due time, although no job arrives or ends then."""
    config, trace = files(tmp_path, QUOTA, QUOTA_TRACE)
    pool = SimulatedPool.alike(1, NodeShape.parse("Cpus=2, Memory=1024"))
    result = replay(read_trace(trace), config, pool, until=200)
    assert [(cycle.time, cycle.preemptions, cycle.busy_cpus, cycle.queued) for cycle in result.cycles] == [
        (0, {}, 1.0, 0), (60, {}, 2.0, 0), (180, {"quota": 1}, 1.0, 1)]
    y1, y2 = result.runs
    assert (y1.start, y1.preempted) == (0, 0)
    assert (y2.start, y2.preempted, y2.badput_cpu_s) == (None, 1, 120.0)


@pytest.mark.parametrize("config_text, trace_text, node", [
    pytest.param(QUOTA, QUOTA_TRACE, "Cpus=2, Memory=1024", id="quota preemption, admission fair sharing"),
    pytest.param(PRIORITY, PRIORITY_TRACE, "Cpus=1, Memory=1024", id="priority preemption"),
])
def test_the_replay_leaves_the_accountant_state_the_daemon_leaves(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, config_text: str, trace_text: str, node: str) -> None:
    """Every cycle the replay ran, run again by the daemon's cycle runner over the same slot and
    job ads at the same time, each committing to an accountant database: the state the database
    holds at the end is the one the replay's accountant ends with (priorities, usage, admission
    usage, quota timers)."""
    config, trace = files(tmp_path, config_text, trace_text)
    offered: list[tuple[list, list]] = []
    build = SnapshotBuilder.build

    def recording(self: SnapshotBuilder, slots, jobs, settings):  # type: ignore[no-untyped-def]
        slots, jobs = list(slots), list(jobs)
        offered.append(([slot.printOld() for slot in slots], [job.printOld() for job in jobs]))
        return build(self, slots, jobs, settings)

    monkeypatch.setattr(SnapshotBuilder, "build", recording)
    loaded = read_trace(trace)
    result = replay(loaded, config, SimulatedPool.alike(1, NodeShape.parse(node)), until=1000, skip_quiet_cycles=False)
    monkeypatch.undo()
    assert len(offered) == len(result.cycles)

    log = MatchLog(tmp_path / "matches.sqlite")
    with AccountantStore(tmp_path / "accountant.sqlite") as store:
        runner = CycleRunner(store, log)
        for (slots, jobs), cycle in zip(offered, result.cycles):
            ads = AdStore()
            ads.update(AdKind.SLOT, take_in_text(AdKind.SLOT, "\n\n".join(slots), "replay").accepted, 0.0, 1e12)
            ads.update(AdKind.JOB, take_in_text(AdKind.JOB, "\n\n".join(jobs), "replay").accepted, 0.0, 1e12)
            runner.run(ads.view(), config, int(loaded.start_epoch + cycle.time), retention=Retention())
        daemon = store.load()
    log.close()
    replayed = result.accountant
    assert [record.name for record in daemon.customers()] == [record.name for record in replayed.customers()]
    for kept, ran in zip(daemon.customers(), replayed.customers()):
        assert (kept.real_priority, kept.weighted_usage, kept.accumulated_usage, kept.last_update_time) == \
            pytest.approx((ran.real_priority, ran.weighted_usage, ran.accumulated_usage, ran.last_update_time))
    assert dict(daemon.admission_usages) == dict(replayed.admission_usages)
    assert dict(daemon.quota_timers) == dict(replayed.quota_timers)
    assert sum(cycle.preemptions.get(rule, 0) for cycle in result.cycles for rule in ("priority", "quota")) > 0
