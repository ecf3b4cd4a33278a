"""HTCondor's preemption: claimed slots as candidates under NEGOTIATOR_CONSIDER_PREEMPTION.

References:
- HTCondor manual, "Configuration macros", condor_negotiator section: PREEMPTION_REQUIREMENTS
  ("evaluated within the context of the candidate machine ClassAd and the candidate idle job
  ClassAd ... the default value for this expression is False"), PREEMPTION_REQUIREMENTS_STABLE,
  PREEMPTION_RANK (default: worst RemoteUserPrio first), NEGOTIATOR_CONSIDER_PREEMPTION,
  NEGOTIATOR_CONSIDER_EARLY_PREEMPTION;
- HTCondor manual, "User Priorities and Negotiation": the potential match list takes a claimed
  slot "with a reason of Rank" when the slot's RANK prefers the job, "with a reason of Priority"
  when PREEMPTION_REQUIREMENTS is True and the slot's RANK of the job is not worse; ties after
  the three ranks are broken "by reason for claim (No Preemption, then Rank, then Priority), and
  finally PREEMPTION_RANK";
- the UWCS example policy of condor_config.annotated: ``UWCS_PREEMPTION_REQUIREMENTS =
  ((SubmitterGroup =?= RemoteGroup) && ($(StateTimer) > (1 * $(HOUR))) && (RemoteUserPrio >
  TARGET.SubmitterUserPrio * 1.2)) || (MY.NiceUser == True)``, StateTimer being ``(time() -
  EnteredCurrentState)``;
- matchmaker.cpp ``matchmakingAlgorithm`` (no priority preemption of the submitter's own slot,
  ``rankCondStd``/``rankCondPrioPreempt``), ``addRemoteUserPrios``, ``trimStartdAds_PreemptionLogic``.

Every scenario runs with both evaluators (the fast path and the classad2 reference) and they must
agree. Unscoped job attributes in the manual's expressions are written ``TARGET.`` here: HTCondor
resolves them in the job ad under its old ClassAd semantics, which this process may not be in.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import classad2
import pytest
from hypothesis import HealthCheck, given, seed, settings as hsettings, strategies as st

from negotiatord.accountant import AccountantState
from negotiatord.accountant.records import CustomerRecord
from negotiatord.cycle.result import CycleResult
from negotiatord.evaluation import ClassAdEvaluator
from negotiatord.pool.builder import build_snapshot
from negotiatord.publish.report import cycle_document, cycle_table
from negotiatord.runtime import run_cycle
from negotiatord.settings import Settings, load_settings
from tests.builders import expr, group, jobs, pslot, settings, static_slot

NOW = 1_700_000_000
HOUR = 3600
UWCS = ("((TARGET.SubmitterGroup =?= RemoteGroup) && ((time() - EnteredCurrentState) > (1 * 3600)) "
        "&& (RemoteUserPrio > TARGET.SubmitterUserPrio * 1.2)) || (MY.NiceUser == True)")


def claimed(name: str, user: str, *, running_for: float = 2 * HOUR, **attrs: Any) -> classad2.ClassAd:
    """A static slot running ``user``'s job since ``running_for`` seconds, as a startd shows it."""
    base: dict[str, Any] = dict(
        State="Claimed", Activity="Busy", RemoteUser=user, RemoteOwner=user, Rank=0.0, CurrentRank=0.0,
        JobId=f"{name}.0", GlobalJobId=f"{user}#{name}", JobStart=NOW - running_for,
        EnteredCurrentState=NOW - running_for, JobPrio=0,
    )
    base.update(attrs)
    return static_slot(name, **base)


def accountant(**real_priorities: float) -> AccountantState:
    """Customers ``name@site`` with these real priorities (effective = real x DEFAULT_PRIO_FACTOR)."""
    return AccountantState([CustomerRecord(f"{name}@site", prio, None, 0.0, 0.0, None, None, NOW)
                            for name, prio in real_priorities.items()])


def cycle(slots: list[classad2.ClassAd], job_ads: list[classad2.ClassAd], config: Settings,
          state: AccountantState | None = None) -> CycleResult:
    """The cycle by the fast path, checked against the classad2 reference and against the cycle's
    job-by-job reference loop (requests loaded in one call must make the same preemptions)."""
    state = state or AccountantState()
    snapshot = build_snapshot(slots, job_ads, config)
    fast = run_cycle(snapshot, state, config, NOW)
    reference = run_cycle(snapshot, state, config, NOW, ClassAdEvaluator(snapshot.table, config, NOW))
    job_by_job = run_cycle(snapshot, state, replace(config, job_by_job=True), NOW)
    for other in (reference, job_by_job):
        assert fast.matches == other.matches
        assert fast.preemptions == other.preemptions
        assert fast.usage == other.usage
    return fast


def preempted(result: CycleResult) -> list[tuple[str, str, str]]:
    return [(p.slot, p.submitter, p.rule) for p in result.preemptions]


# -- PREEMPTION_REQUIREMENTS --------------------------------------------------------------------

def test_uwcs_policy_preempts_a_long_running_job_of_a_much_worse_priority():
    config = settings(preemption_requirements=UWCS)
    result = cycle([claimed("s1", "bob@site")], jobs("alice", 1), config, accountant(alice=1.0, bob=100.0))
    assert preempted(result) == [("s1", "alice@site", "priority")]
    (match,) = result.matches
    assert match.preempts == "bob@site#s1" and match.slot == "s1"
    (preemption,) = result.preemptions
    assert (preemption.victim_job, preemption.victim_submitter, preemption.victim_group) == (
        "bob@site#s1", "bob@site", "<none>")
    assert preemption.strategy is None
    # the slot's usage moves from the victim's customer to the preemptor's within the cycle
    assert result.usage["bob@site"] == 0.0 and result.usage["alice@site"] == 1.0
    assert result.stats.claimed_slots == 1 and result.stats.preemptions == 1


def test_a_cycle_under_other_settings_than_its_snapshots_asks_afresh_which_slots_it_may_preempt():
    """The snapshot carries, per slot, whether an idle job could take it from its claim, as its
    builder asked once per slot ad under the build's settings object; the cycle uses that only
    under the very same settings. Built with NEGOTIATOR_CONSIDER_PREEMPTION off, the snapshot
    says no slot may be preempted; a cycle under settings with it on preempts as one whose
    snapshot was built under them."""
    config = settings(preemption_requirements=UWCS)
    slots, job_ads, state = [claimed("s1", "bob@site")], jobs("alice", 1), accountant(alice=1.0, bob=100.0)
    off = build_snapshot(slots, job_ads, replace(config, consider_preemption=False))
    assert off.preemptable is not None and not off.preemptable.any()
    own = build_snapshot(slots, job_ads, config)
    assert own.preemptable is not None and own.preemptable.tolist() == [True]
    for snapshot in (off, own):
        result = run_cycle(snapshot, state, config, NOW)
        assert preempted(result) == [("s1", "alice@site", "priority")]


@pytest.mark.parametrize("running_for, bob_priority", [
    pytest.param(HOUR / 2, 100.0, id="running less than an hour (StateTimer)"),
    pytest.param(2 * HOUR, 1.1, id="priority not 1.2 times worse"),
])
def test_uwcs_policy_spares_a_young_job_or_a_close_priority(running_for, bob_priority):
    config = settings(preemption_requirements=UWCS)
    result = cycle([claimed("s1", "bob@site", running_for=running_for)], jobs("alice", 1), config,
                   accountant(alice=1.0, bob=bob_priority))
    assert result.preemptions == () and result.matches == ()
    assert result.usage["bob@site"] == 1.0


def test_uwcs_policy_keeps_preemption_within_a_group_unless_the_job_is_nice():
    """SubmitterGroup =?= RemoteGroup: inserted only when accounting groups are configured."""
    config = settings(preemption_requirements=UWCS, groups=(group("physics", quota=1), group("chem", quota=1)))
    victims = [claimed("s1", "group_chem.bob@site", AccountingGroup="chem.bob@site"),
               claimed("s2", "physics.carol@site", AccountingGroup="physics.carol@site", NiceUser=True)]
    state = AccountantState([CustomerRecord(name, prio, None, 0.0, 0.0, None, None, NOW) for name, prio in
                             (("physics.alice@site", 1.0), ("chem.bob@site", 100.0),
                              ("physics.carol@site", 100.0))])
    result = cycle(victims, jobs("alice", 2, group="physics"), config, state)
    # s1 runs for another group: never; s2 runs for the same group with a much worse priority
    assert [p.slot for p in result.preemptions] == ["s2"]
    assert result.preemptions[0].victim_group == "physics"


def test_htcondors_default_preemption_requirements_is_false():
    result = cycle([claimed("s1", "bob@site")], jobs("alice", 1), settings(), accountant(alice=1.0, bob=1e6))
    assert result.preemptions == () and result.matches == ()
    # nothing could preempt a slot whose literal Rank is not above its CurrentRank: not even considered
    assert result.stats.claimed_slots == 0


def test_no_priority_preemption_of_the_submitters_own_slot():
    """matchmaker.cpp: a slot used by the submitting user is not preempted for priority."""
    result = cycle([claimed("s1", "alice@site")], jobs("alice", 1), settings(preemption_requirements="True"))
    assert result.preemptions == ()


def test_priority_preemption_needs_the_slot_to_rank_the_job_at_least_as_well():
    """rankCondPrioPreempt: MY.Rank >= MY.CurrentRank."""
    slot = claimed("s1", "bob@site", Rank=expr('TARGET.Owner == "alice" ? 1 : 0'), CurrentRank=5.0)
    result = cycle([slot], jobs("alice", 1), settings(preemption_requirements="True"), accountant(bob=100.0))
    assert result.preemptions == ()


# -- the startd's RANK --------------------------------------------------------------------------

def test_startd_rank_preempts_whatever_the_priorities():
    """Rank above CurrentRank: preempted even for a submitter of a worse priority, and with
    PREEMPTION_REQUIREMENTS False (it only governs priority preemption)."""
    slot = claimed("s1", "bob@site", Rank=expr('TARGET.Owner == "alice" ? 10 : 0'))
    result = cycle([slot], jobs("alice", 1), settings(), accountant(alice=500.0, bob=1.0))
    assert preempted(result) == [("s1", "alice@site", "rank")]
    assert result.stats.claimed_slots == 1


def test_startd_rank_preempts_even_the_same_users_job():
    slot = claimed("s1", "alice@site", Rank=expr("TARGET.JobPrio"), CurrentRank=1.0)
    result = cycle([slot], jobs("alice", 1, JobPrio=5), settings())
    assert preempted(result) == [("s1", "alice@site", "rank")]


# -- ordering -----------------------------------------------------------------------------------

def test_an_idle_slot_of_equal_rank_comes_before_a_preemption():
    config = settings(preemption_requirements="True")
    slots = [claimed("busy", "bob@site"), static_slot("idle")]
    result = cycle(slots, jobs("alice", 2), config, accountant(bob=100.0))
    # first job: the idle slot; second: the claimed one
    assert [m.slot for m in result.matches] == ["idle", "busy"]
    assert [m.preempts for m in result.matches] == [None, "bob@site#busy"]


def test_a_claimed_slot_the_job_ranks_higher_beats_an_idle_one():
    config = settings(preemption_requirements="True")
    slots = [static_slot("idle", Kflops=1), claimed("busy", "bob@site", Kflops=9)]
    result = cycle(slots, jobs("alice", 1, Rank=expr("TARGET.Kflops")), config, accountant(bob=100.0))
    assert [m.slot for m in result.matches] == ["busy"]


def test_a_claimed_slot_ranked_between_idle_partitionable_slots_is_taken_in_its_turn():
    """Idle p-slots, each taking several jobs, rank above and below a claimed slot by the job's
    Rank: the jobs fill the better p-slot, then preempt, then go to the worse one, as HTCondor's
    order puts them (a request loaded in one call must stop at the claimed slot; cycle() checks
    the job-by-job loop agrees)."""
    config = settings(preemption_requirements="True", consumption_policy=True)
    slots = [pslot("small", cpus=2, Kflops=1), pslot("big", cpus=2, Kflops=9),
             claimed("busy", "bob@site", Kflops=5)]
    result = cycle(slots, jobs("alice", 6, Rank=expr("TARGET.Kflops")), config, accountant(bob=100.0))
    assert [m.slot for m in result.matches] == ["big", "big", "busy", "small", "small"]
    assert [m.preempts for m in result.matches] == [None, None, "bob@site#busy", None, None]


def test_rank_preemption_before_priority_preemption_then_preemption_rank():
    """Equal ranks: Rank before Priority; among priority preemptions the highest PREEMPTION_RANK
    (by default the worst RemoteUserPrio) first."""
    config = settings(preemption_requirements="True")
    slots = [claimed("carol1", "carol@site"), claimed("bob1", "bob@site"),
             claimed("dave1", "dave@site", Rank=expr('TARGET.Owner == "alice" ? 1 : 0'))]
    result = cycle(slots, jobs("alice", 3), config, accountant(alice=1.0, bob=100.0, carol=50.0, dave=1.0))
    assert preempted(result) == [("dave1", "alice@site", "rank"), ("bob1", "alice@site", "priority"),
                                 ("carol1", "alice@site", "priority")]


# -- which claimed slots are considered ---------------------------------------------------------

def test_consider_preemption_false_never_offers_a_claimed_slot():
    """NEGOTIATOR_CONSIDER_PREEMPTION = False: claimed slots are counted as usage, never offered,
    as before preemption existed: the same cycle as with no claimed slot to take."""
    slots = [claimed("s1", "bob@site", Rank=expr("10")), static_slot("idle")]
    config = settings(consider_preemption=False, preemption_requirements="True")
    result = cycle(slots, jobs("alice", 2), config, accountant(bob=100.0))
    assert [m.slot for m in result.matches] == ["idle"]
    assert result.preemptions == () and result.stats.claimed_slots == 0
    assert result.usage["bob@site"] == 1.0
    assert [r.reason for r in result.rejections] == ["no match found"]


def test_a_retiring_slot_waits_unless_early_preemption():
    slot = claimed("s1", "bob@site", RetirementTimeRemaining=600)
    config = settings(preemption_requirements="True")
    assert cycle([slot], jobs("alice", 1), config, accountant(bob=100.0)).preemptions == ()
    early = cycle([slot], jobs("alice", 1), settings(preemption_requirements="True", consider_early_preemption=True),
                  accountant(bob=100.0))
    assert [p.slot for p in early.preemptions] == ["s1"]


def test_preempting_rank_and_user_stand_for_the_claim_waiting_to_start():
    """addRemoteUserPrios: PreemptingRank replaces CurrentRank; a preempting user is the one whose
    priority counts."""
    slot = claimed("s1", "bob@site", Rank=expr('TARGET.Owner == "alice" ? 3 : 0'), PreemptingRank=5.0)
    assert cycle([slot], jobs("alice", 1), settings()).preemptions == ()
    waiting = claimed("s2", "bob@site", PreemptingUser="alice@site")
    assert cycle([waiting], jobs("alice", 1), settings(preemption_requirements="True"),
                 accountant(bob=100.0)).preemptions == ()


# -- PREEMPTION_REQUIREMENTS_STABLE -------------------------------------------------------------

@pytest.mark.parametrize("stable, expected", [(True, 3), (False, 1)])
def test_unstable_requirements_are_asked_again_with_the_usage_of_the_moment(stable, expected):
    """RemoteUserResourcesInUse changes as the cycle preempts bob: with
    PREEMPTION_REQUIREMENTS_STABLE (the default) the answers of the first question stand for the
    cycle; with False each slot is asked again, and bob keeps two slots."""
    config = settings(preemption_requirements="RemoteUserResourcesInUse > 2",
                      preemption_requirements_stable=stable)
    slots = [claimed(f"s{i}", "bob@site") for i in range(3)]
    result = cycle(slots, jobs("alice", 3), config, accountant(bob=100.0))
    assert len(result.preemptions) == expected


# -- outputs ------------------------------------------------------------------------------------

def test_the_dry_run_shows_preemptions():
    result = cycle([claimed("s1", "bob@site")], jobs("alice", 1), settings(preemption_requirements="True"),
                   accountant(bob=100.0))
    document = cycle_document(result)
    assert document["preemptions"] == [{
        "victim_job": "bob@site#s1", "slot": "s1", "victim_submitter": "bob@site", "victim_group": "<none>",
        "job": "alice-schedd#1.0#0", "submitter": "alice@site", "group": "<none>", "rule": "priority",
        "strategy": None}]
    assert document["matches"][0]["preempts"] == "bob@site#s1"
    assert document["cycle"]["claimed_slots"] == 1 and document["cycle"]["preemptions"] == 1
    table = cycle_table(result)
    assert "preempted job" in table and "bob@site#s1" in table and "priority" in table
    assert result.preemptions_by_rule() == {"priority": 1, "rank": 0, "fair_sharing": 0, "quota": 0}


def test_no_rank_preemption_without_a_current_rank():
    """MY.Rank > MY.CurrentRank is undefined when the ad has no CurrentRank: never true."""
    slot = claimed("s1", "bob@site", Rank=expr("10"))
    del slot["CurrentRank"]
    result = cycle([slot], jobs("alice", 1), settings())
    assert result.preemptions == () and result.stats.claimed_slots == 0


def test_the_bundled_sample_under_the_uwcs_priority_test_agrees_between_evaluators():
    """The sample pool's claimed slots (real HTCondor ads, Rank = 0.0, CurrentRank = 0.0) under the
    UWCS policy's priority test, the running customer far worse than the submitters: the four
    claimed slots are considered, and both evaluators give the same cycle (cycle() checks it;
    here the submitters' limits and group quotas leave no room for a preemption)."""
    from negotiatord.ads.reader import read_ads
    root = Path(__file__).resolve().parents[2]
    slot_ads = list(read_ads(root / "samples" / "slots.ads").ads)
    job_ads = list(read_ads(root / "samples" / "jobs.ads").ads)
    config = replace(load_settings(root / "config" / "default.conf"),
                     preemption_requirements="RemoteUserPrio > TARGET.SubmitterUserPrio * 1.2")
    running = {str(ad.eval("RemoteUser")) for ad in slot_ads if ad.get("State") == "Claimed"}
    state = AccountantState([CustomerRecord(name, 1000.0, None, 0.0, 0.0, None, None, NOW) for name in running])
    result = cycle(slot_ads, job_ads, config, state)
    assert result.stats.claimed_slots == 4


def test_the_group_quota_inserted_is_the_allocation_rounds_own():
    """SubmitterGroupQuota is the group's quota as this round computed it (HTCondor fills it from
    the quotas of the group tree before negotiating), not what the demand estimate saw before
    any quota was computed."""
    config = settings(groups=(group("physics", quota=1),),
                      preemption_requirements=("TARGET.SubmitterGroupQuota >= 1 && "
                                               "RemoteUserPrio > TARGET.SubmitterUserPrio"))
    state = AccountantState([CustomerRecord("physics.alice@site", 1.0, None, 0.0, 0.0, None, None, NOW),
                             CustomerRecord("bob@site", 100.0, None, 0.0, 0.0, None, None, NOW)])
    result = cycle([claimed("s1", "bob@site")], jobs("alice", 1, group="physics"), config, state)
    assert [(p.slot, p.group, p.victim_group) for p in result.preemptions] == [("s1", "physics", "<none>")]



USERS = ("alice", "bob", "carol")
SLOT_RANKS = (None, "0", "5", "TARGET.JobPrio", 'TARGET.Owner == "carol" ? 3 : 0')
POLICIES = ("False", "True", "RemoteUserPrio > TARGET.SubmitterUserPrio * 1.2",
            "RemoteUserResourcesInUse > TARGET.SubmitterUserResourcesInUse")


@hsettings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@seed(12)
@given(slots=st.lists(st.tuples(st.sampled_from((None, *USERS)), st.sampled_from(SLOT_RANKS),
                                st.sampled_from((None, 0.0, 2.0)), st.integers(1, 4)), min_size=1, max_size=8),
       idle=st.lists(st.tuples(st.sampled_from(USERS), st.integers(1, 3), st.integers(0, 6), st.integers(1, 4)),
                     min_size=1, max_size=4),
       policy=st.sampled_from(POLICIES), stable=st.booleans(),
       priorities=st.tuples(*(st.sampled_from((0.5, 10.0, 100.0)) for _ in USERS)))
def test_random_claimed_pools_agree_and_follow_htcondors_rules(slots, idle, policy, stable, priorities):
    """Random pools of idle and claimed static slots (customers, slot Ranks, CurrentRanks), idle
    jobs and policies: the fast path and classad2 give the same cycle (cycle() checks it), and every
    preemption is one HTCondor's rules allow: a slot preempted at most once and never matched
    otherwise, a priority preemption never of the submitter's own slot, a rank preemption only
    where the slot's Rank for the job exceeds its CurrentRank; the victim's usage moved."""
    slot_ads = []
    for i, (user, rank, current, cpus) in enumerate(slots):
        rank_attr = {} if rank is None else {"Rank": expr(rank)}
        if user is None:
            slot_ads.append(static_slot(f"s{i}", cpus=cpus, **rank_attr))
            continue
        ad = claimed(f"s{i}", f"{user}@site", cpus=cpus, **rank_attr)
        if rank is None:
            del ad["Rank"]
        if current is None:
            del ad["CurrentRank"]
        else:
            ad["CurrentRank"] = current
        slot_ads.append(ad)
    job_ads = [job for k, (user, count, prio, cpus) in enumerate(idle)
               for job in jobs(user, count, cluster=k + 1, cpus=cpus, JobPrio=prio)]
    config = settings(preemption_requirements=policy, preemption_requirements_stable=stable)
    result = cycle(slot_ads, job_ads, config, accountant(**dict(zip(USERS, priorities))))
    by_slot = {m.slot: m for m in result.matches}
    assert len(by_slot) == len(result.matches)
    ads = {str(ad["Name"]): ad for ad in slot_ads}
    jobs_by_id = {str(ad["GlobalJobId"]): ad for ad in job_ads}
    for preemption in result.preemptions:
        slot = ads[preemption.slot]
        assert slot["State"] == "Claimed" and by_slot[preemption.slot].preemption == preemption
        if preemption.rule == "priority":
            assert preemption.victim_submitter != preemption.submitter and policy != "False"
        else:
            assert preemption.rule == "rank"
            rank = classad2.ExprTree("MY.Rank").eval(slot, jobs_by_id[preemption.job])
            assert isinstance(rank, (int, float)) and rank > slot["CurrentRank"]
    for match in result.matches:
        assert (match.preemption is not None) == (ads[match.slot]["State"] == "Claimed")
    moved = {user: sum(1 for p in result.preemptions if p.victim_submitter == f"{user}@site") for user in USERS}
    for user in USERS:
        running = sum(ad["Cpus"] for ad in slot_ads
                      if ad["State"] == "Claimed" and ad["RemoteUser"] == f"{user}@site"
                      and all(p.slot != ad["Name"] for p in result.preemptions))
        gained = sum(m.cost for m in result.matches if m.submitter == f"{user}@site")
        assert result.usage.get(f"{user}@site", 0.0) == pytest.approx(running + gained), moved


@pytest.mark.parametrize("current, considered", [(4.0, 0), (3.0, 1)])
def test_a_constant_rank_not_above_current_rank_is_never_considered(current, considered):
    """The OSPool's startds publish Rank = (1) + (1) + (1) + (1) and CurrentRank = 4.0
    (ospool/pool_sample.ads.gz): with PREEMPTION_REQUIREMENTS False no job can preempt them, so
    they are not asked about at all; with CurrentRank 3 every job rank-preempts."""
    slot = claimed("s1", "bob@site", Rank=expr("(1) + (1) + (1) + (1)"), CurrentRank=current)
    result = cycle([slot], jobs("alice", 1), settings())
    assert result.stats.claimed_slots == considered
    assert [p.rule for p in result.preemptions] == ["rank"] * considered


def test_a_rank_reading_only_the_job_is_asked_once_per_request():
    """The OSPool's startds publish ``Rank = (TARGET.RequestGPUs ?: 0)``: its value is the same
    for every slot, so with priority preemption impossible (PREEMPTION_REQUIREMENTS False) it is
    evaluated once per request and compared with each slot's CurrentRank; a Rank that reads the
    slot is asked slot by slot. The answers are HTCondor's either way (``MY.Rank >
    MY.CurrentRank``): the GPU job preempts the slots whose CurrentRank is below its 1."""
    def pool(rank: str) -> list:
        return [claimed(f"s{n}", "bob@site", Rank=expr(rank), CurrentRank=float(n % 2), cpus=2)
                for n in range(6)]
    by_job = cycle(pool("(TARGET.RequestGPUs ?: 0)"), jobs("alice", 6, RequestGPUs=1), settings())
    by_slot = cycle(pool("(TARGET.RequestGPUs ?: 0) + MY.Cpus - 2"), jobs("alice", 6, RequestGPUs=1), settings())
    assert preempted(by_job) == preempted(by_slot) == [(f"s{n}", "alice@site", "rank") for n in (0, 2, 4)]
    assert by_job.stats.classad_fallbacks < by_slot.stats.classad_fallbacks


@pytest.mark.parametrize("stable", [True, False])
def test_a_rank_reading_an_inserted_figure_sees_it(stable):
    """matchmaker.cpp inserts ``SubmitterUserPrio`` into the job before the slot's Rank is
    compared with its CurrentRank: a Rank reading it (alice's effective priority, 0.5 x 1000)
    prefers alice's job, whether the answers are kept for the cycle or asked again."""
    slot = claimed("s1", "bob@site", Rank=expr("TARGET.SubmitterUserPrio < 1000 ? 10 : 0"))
    config = settings(preemption_requirements_stable=stable, preemption_rank_stable=stable)
    result = cycle([slot], jobs("alice", 1), config, accountant(alice=0.5, bob=1.0))
    assert preempted(result) == [("s1", "alice@site", "rank")]
    assert cycle([slot], jobs("alice", 1), config, accountant(alice=5.0, bob=1.0)).preemptions == ()
