"""Knobs of HTCondor's negotiator that change a cycle, each as HTCondor 25.14 applies it.

References: ``src/condor_negotiator.V6/matchmaker.cpp`` (``calculateSubmitterLimit`` for
NEGOTIATOR_IGNORE_USER_PRIORITIES, ``calculateRanks`` for NEGOTIATOR_IGNORE_JOB_RANKS,
``trimStartdAds_ShutdownLogic`` for NEGOTIATOR_TRIM_SHUTDOWN_THRESHOLD) and ``GroupEntry.cpp``
(``strict_enforce_quota`` for NEGOTIATOR_STRICT_ENFORCE_QUOTA). Each cycle runs on the fast
path, the classad2 reference and the job-by-job loop (``tests.cycle.test_preemption.cycle``).
"""

from __future__ import annotations

from collections import Counter

import pytest

from tests.builders import expr, group, jobs, settings, static_slot
from tests.cycle.test_preemption import NOW, claimed, cycle


@pytest.mark.parametrize("ignore", [False, True])
def test_ignoring_user_priorities_lifts_the_submitter_limit(ignore):
    """Equal priorities split 4 slots 2/2 in the pie; with NEGOTIATOR_IGNORE_USER_PRIORITIES every
    submitter's limit is DBL_MAX, so the first one served takes all it can."""
    slots = [static_slot(f"s{n}") for n in range(4)]
    result = cycle(slots, jobs("alice", 4) + jobs("bob", 4, cluster=2), settings(ignore_user_priorities=ignore))
    counts = sorted(Counter(match.submitter for match in result.matches).values())
    assert counts == ([4] if ignore else [2, 2])


def test_ignoring_user_priorities_keeps_the_group_quota():
    """calculateSubmitterLimit still caps a grouped submitter at the group's quota less its usage."""
    slots = [static_slot(f"s{n}") for n in range(4)]
    config = settings(groups=(group("g", quota=1),), ignore_user_priorities=True)
    result = cycle(slots, jobs("alice", 4, group="g"), config)
    assert [m.submitter for m in result.matches if m.group == "g"] == ["g.alice@site"]


def test_ignoring_job_ranks_ranks_every_slot_alike():
    """calculateRanks with NEGOTIATOR_IGNORE_JOB_RANKS takes the job's Rank as 1.0 for every slot
    (its rankSorter fills the cache before any job asks): the job that prefers the bigger slot
    gets the one a job without a Rank would get."""
    slots = [static_slot("small", cpus=1), static_slot("big", cpus=4)]
    prefers_big = jobs("alice", 1, Rank=expr("TARGET.Cpus"))
    assert [m.slot for m in cycle(slots, prefers_big, settings()).matches] == ["big"]
    unranked = cycle(slots, jobs("alice", 1), settings()).matches
    assert [m.slot for m in cycle(slots, prefers_big, settings(ignore_job_ranks=True)).matches] == [
        m.slot for m in unranked]


def _over_quota_pool() -> list:
    """group P (quota 10, refusing surplus) holds 8 through P.c1 (quota 5); 12 slots are free."""
    held = [claimed(f"r{n}", "P.c1.alice@site", AccountingGroup="P.c1.alice@site") for n in range(8)]
    return held + [static_slot(f"s{n}") for n in range(12)]


@pytest.mark.parametrize("strict, matches", [(True, 2), (False, 5)])
def test_strict_quota_enforcement_holds_a_subtree_to_its_quota_at_match_time(strict, matches):
    """GroupEntry::strict_enforce_quota: P.c2 is allocated its quota of 5, but P, which does not
    accept surplus, has only 10 - 8 = 2 left, so P.c2 negotiates for 2; with
    NEGOTIATOR_STRICT_ENFORCE_QUOTA = False it negotiates for its allocation."""
    groups = (group("P", quota=10), group("P.c1", quota=5, surplus=True), group("P.c2", quota=5, surplus=True))
    config = settings(groups=groups, strict_enforce_quota=strict)
    result = cycle(_over_quota_pool(), jobs("bob", 5, group="P.c2"), config)
    assert len(result.matches) == matches


GLIDEIN = dict(MyCurrentTime=NOW, GLIDEIN_ToDie=NOW + 100,
               DaemonShutdown=expr("(GLIDEIN_ToDie =!= undefined) && (CurrentTime > GLIDEIN_ToDie)"))


@pytest.mark.parametrize("threshold, trimmed", [(0, False), (60, False), (600, True)])
def test_slots_about_to_shut_down_are_not_matched(threshold, trimmed):
    """trimStartdAds_ShutdownLogic: CurrentTime set threshold seconds past the ad's MyCurrentTime;
    a glidein dying in 100 s is trimmed with a threshold of 600, not of 60 (0: no trimming). It
    is trimmed after the pool is sized: it still counts in the pool size."""
    slots = [static_slot("dying", **GLIDEIN), static_slot("other", cpus=2)]
    result = cycle(slots, jobs("alice", 2), settings(trim_shutdown_threshold=threshold))
    assert sorted(m.slot for m in result.matches) == (["other"] if trimmed else ["dying", "other"])
    assert result.stats.pool_size == 3.0


def test_the_clock_is_not_moved_for_time():
    """Only the CurrentTime attribute is moved ahead; time() is the cycle's (the OSPool's
    DaemonShutdownFast reads time())."""
    fast = dict(MyCurrentTime=NOW, GLIDEIN_ToDie=NOW + 100, DaemonShutdownFast=expr("time() > GLIDEIN_ToDie"))
    result = cycle([static_slot("dying", **fast)], jobs("alice", 1), settings(trim_shutdown_threshold=600))
    assert [m.slot for m in result.matches] == ["dying"]


def test_a_claimed_slot_about_to_shut_down_is_not_preempted():
    """The trimmed ad is gone from matchmaking altogether, claimed or not; its claim still counts."""
    victim = claimed("dying", "bob@site", Rank=1.0, CurrentRank=0.0, **GLIDEIN)
    config = settings(trim_shutdown_threshold=600)
    assert cycle([victim], jobs("alice", 1), settings()).preemptions != ()
    result = cycle([victim], jobs("alice", 1), config)
    assert result.preemptions == () and result.usage["bob@site"] == 1.0


def test_match_exprs_go_with_every_match():
    """matchmaker.cpp's insertNegotiatorMatchExprs puts each NEGOTIATOR_MATCH_EXPRS macro into every
    matched slot ad as NegotiatorMatchExpr<NAME>, for the schedd to copy into the job's ad."""
    from negotiatord.publish.report import cycle_document

    exprs = {"NegotiatorMatchExprSite": '"CHTC"'}
    result = cycle([static_slot("s0"), static_slot("s1")], jobs("alice", 2), settings(match_exprs=exprs))
    assert [m["match_exprs"] for m in cycle_document(result)["matches"]] == [exprs, exprs]
    assert "match_exprs" not in cycle_document(cycle([static_slot("s0")], jobs("alice", 1), settings()))["matches"][0]
