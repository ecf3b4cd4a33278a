"""The preemption questions' answers remembered across a cycle's calls are the answers asked afresh.

``PreemptionQuestions`` (evaluation/preemption.py) remembers the rank conditions
(``MY.Rank > MY.CurrentRank``, ``MY.Rank >= MY.CurrentRank``) by what they read: the slot, the
figures inserted into it that its Rank and CurrentRank read (HTCondor's ``addRemoteUserPrios``
inserts ``RemoteUserPrio``, ``RemoteUserResourcesInUse``, ...; matchmaker.cpp's
``matchmakingAlgorithm`` asks both rank conditions), and the job attributes they read. Calls made
in sequence, with jobs of different requests and inserted figures that change between calls as
in a cycle, must be answered as an object that remembers nothing answers each call.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Iterator

import classad2
import numpy as np

from negotiatord.classad.conversion import as_number
from negotiatord.classad.cycle_time import frozen_expr, private_frozen_ad
from negotiatord.evaluation.preemption import PreemptionQuestions
from negotiatord.evaluation.protocol import UNRANKED, PreemptionAssessment, PreemptionInserts
from negotiatord.pool.autoclusters import Autocluster
from negotiatord.pool.snapshot import Snapshot, SlotTable
from negotiatord.settings import Settings
from negotiatord.pool.builder import build_snapshot
from tests.builders import expr, jobs, settings
from tests.cycle.test_preemption import NOW, UWCS, claimed

RANKS = [
    expr("TARGET.RequestMemory"),                       # the job alone
    expr("RemoteUserPrio > 10"),                        # an inserted figure, not in the ad
    expr("MY.Memory - TARGET.RequestMemory + Bonus"),   # the slot's own attribute, through another
    expr('eval(strcat("RemoteUser", "Prio")) > 10'),    # a name no reading of the text finds
    0.0,
]


def test_remembered_answers_are_the_fresh_ones():
    config = settings(consider_preemption=True, preemption_requirements=UWCS)
    rng = random.Random(7)
    slot_ads = [claimed(f"s{i}", "carol@site", Memory=1024 * (1 + i % 3), Bonus=expr("Cpus * 10"),
                        Rank=RANKS[i % len(RANKS)], CurrentRank=float(i % 2 * 500))
                for i in range(12)]
    job_ads = [*jobs("alice", 1, memory=512), *jobs("bob", 1, cluster=2, memory=2048),
               *jobs("dave", 1, cluster=3, memory=512, NiceUser=True)]
    snapshot = build_snapshot(slot_ads, job_ads, config)
    rows = np.arange(len(snapshot.table))
    remembering = PreemptionQuestions(snapshot.table, config, NOW)
    calls = asked_afresh = 0
    for autocluster, step in itertools.product(snapshot.autoclusters * 3, range(2)):
        submitter = {"SubmitterUserPrio": rng.choice([1.0, 50.0]), "SubmitterGroup": "<none>"}
        remote = [{"RemoteUserPrio": rng.choice([5.0, 100.0]), "RemoteGroup": "<none>",
                   "RemoteUserResourcesInUse": float(step + calls),
                   **({"CurrentRank": 2000.0} if rng.random() < 0.2 else {})} for _ in rows]
        other = [rng.random() < 0.8 for _ in rows]
        inserts = PreemptionInserts(submitter, remote, other)
        got = remembering.assess(autocluster, rows, inserts)
        afresh = PreemptionQuestions(snapshot.table, config, NOW)
        fresh = afresh.assess(autocluster, rows, inserts)
        asked_afresh += afresh.evaluations
        for field in ("rank_above", "rank_at_least", "requirements", "preemption_rank"):
            assert np.array_equal(getattr(got, field), getattr(fresh, field)), (calls, field)
        calls += 1
    assert remembering.evaluations < asked_afresh / 2     # answers were remembered, not asked again


# What the questions read of a claimed slot, in the ways a slot ad and a policy can reach it: a
# chain of the slot's own attributes, the clock through one of them (time() and an undefined
# CurrentTime), names only the inserted figures supply, and an attribute the inserts override.
POLICIES = [
    (UWCS, "(RemoteUserPrio * 1000000) - TARGET.ImageSize"),     # condor_config.annotated's UWCS pair
    ("MY.Age > 3600 && Shadowed > 1", "MY.Deep + RemoteUserResourcesInUse"),
    ("RemoteGroupQuota =!= undefined || TARGET.SubmitterUserPrio < RemoteUserPrio", "Stale"),
    ('eval(strcat("Remote", "UserPrio")) > 20', None),
    ("MY.Age > 3600", "TARGET.Weight"),      # a job attribute that reads the slot's Memory
    ("MY.Cpus", "TARGET.ImageSize > 50"),    # a number is no answer; a boolean rank is 0 or 1
]


def policy_slots() -> list[classad2.ClassAd]:
    """Claimed slots whose Ranks read what RANKS read, and attributes the policies read."""
    return [claimed(f"s{i}", "carol@site", Memory=1024 * (1 + i % 3), Rank=RANKS[i % len(RANKS)],
                    CurrentRank=float(i % 2 * 500), Age=expr("CurrentTime - EnteredCurrentState"),
                    Stale=expr("time() - JobStart"), Deep=expr("Bonus * 2"), Bonus=expr("Cpus * 10 + Age"),
                    Shadowed=-1, EnteredCurrentState=NOW - 1800 * (i % 4))
            for i in range(12)]


def policy_jobs() -> list[classad2.ClassAd]:
    """alice's job holds an attribute whose expression reads the slot (Memory); bob's does not."""
    return [*jobs("alice", 1, memory=512, ImageSize=100, Weight=expr("Memory * 2")),
            *jobs("bob", 1, cluster=2, memory=2048)]


def policy_pools() -> Iterator[tuple[str, str | None, Settings, Snapshot]]:
    """Each of POLICIES, its settings and the snapshot of :func:`policy_slots` and :func:`policy_jobs`."""
    slot_ads, job_ads = policy_slots(), policy_jobs()
    for requirements, rank in POLICIES:
        config = settings(consider_preemption=True, preemption_requirements=requirements, preemption_rank=rank)
        yield requirements, rank, config, build_snapshot(slot_ads, job_ads, config)


def test_answers_are_classad2s_on_the_whole_slot_ad_with_the_figures_inserted():
    """Each answer is what classad2 gives with the figures inserted into whole copies of the slot
    and job ads, as HTCondor's matchmaker.cpp (``addRemoteUserPrios``, ``negotiate``) inserts
    them: the questions may read a few of the slot's attributes instead, but not answer otherwise."""
    rng = random.Random(11)
    for requirements, rank, config, snapshot in policy_pools():
        rows = np.arange(len(snapshot.table))
        questions = PreemptionQuestions(snapshot.table, config, NOW)
        for autocluster, _ in itertools.product(snapshot.autoclusters, range(3)):
            submitter = {"SubmitterUserPrio": rng.choice([1.0, 50.0]), "SubmitterGroup": "<none>"}
            remote = [{"RemoteUserPrio": rng.choice([5.0, 100.0]), "RemoteGroup": "<none>",
                       "RemoteUserResourcesInUse": float(rng.randrange(4)),
                       **({"Shadowed": 2} if rng.random() < 0.5 else {}),
                       **({"CurrentRank": 2000.0} if rng.random() < 0.2 else {})} for _ in rows]
            other = [rng.random() < 0.8 for _ in rows]
            got = questions.assess(autocluster, rows, PreemptionInserts(submitter, remote, other))
            assert_asked_of_whole_ads(got, snapshot.table, autocluster, PreemptionInserts(submitter, remote, other),
                                      requirements, rank)


def assert_asked_of_whole_ads(got: PreemptionAssessment, table: SlotTable, autocluster: Autocluster,
                              inserts: PreemptionInserts, requirements: str, rank: str | None) -> None:
    """``got`` holds, row for row, what classad2 answers on whole copies of the ads with the
    figures inserted."""
    job = private_frozen_ad(autocluster.ad, NOW)
    job.update(inserts.submitter)
    for i, row in enumerate(got.rows.tolist()):
        slot = private_frozen_ad(table.slots[row].ad, NOW)
        slot.update(inserts.remote[i])
        expected = _asked_of_whole_ads(slot, job, inserts.other_customer[i], requirements, rank)
        answered = (got.rank_above[i], got.rank_at_least[i], got.requirements[i], got.preemption_rank[i])
        assert tuple(map(float, answered)) == tuple(map(float, expected)), (requirements, rank, row)


def _asked_of_whole_ads(slot: classad2.ClassAd, job: classad2.ClassAd, other_customer: bool,
                        requirements: str, rank: str | None) -> tuple[bool, bool, bool, float]:
    """matchmaker.cpp's questions with classad2, in its order: PREEMPTION_REQUIREMENTS where the
    slot does not prefer the job and ranks it at least as well and its customer is another;
    PREEMPTION_RANK where either rule may preempt."""
    above = classad2.ExprTree("MY.Rank > MY.CurrentRank").eval(slot, job) is True
    at_least = classad2.ExprTree("MY.Rank >= MY.CurrentRank").eval(slot, job) is True
    holds = (other_customer and not above and at_least
             and frozen_expr(classad2.ExprTree(requirements), NOW).eval(slot, job) is True)
    value = UNRANKED
    if (above or holds) and rank is not None:
        # HTCondor's EvalFloat (compat_classad.cpp) takes a boolean as 1.0 or 0.0
        value = frozen_expr(classad2.ExprTree(rank), NOW).eval(slot, job)
        number = float(value) if isinstance(value, bool) else as_number(value)
        value = UNRANKED if number is None else number
    return above, at_least, holds, value


def test_slots_alike_in_what_a_question_reads_share_its_answer():
    """condor_config.annotated's PREEMPTION_RANK, ``(RemoteUserPrio * 1000000) - TARGET.ImageSize``,
    reads nothing of the slot's own: it is asked once per customer, not once per slot."""
    config = settings(consider_preemption=True, preemption_requirements="True", preemption_rank=POLICIES[0][1])
    slot_ads = [claimed(f"s{i}", "carol@site", EnteredCurrentState=NOW - i) for i in range(20)]
    snapshot = build_snapshot(slot_ads, jobs("alice", 1, ImageSize=100), config)
    rows = np.arange(len(snapshot.table))
    remote = [{"RemoteUserPrio": 5.0 if i % 2 else 100.0} for i in range(len(rows))]
    questions = PreemptionQuestions(snapshot.table, config, NOW)
    got = questions.assess(snapshot.autoclusters[0], rows,
                           PreemptionInserts({"SubmitterUserPrio": 1.0}, remote, [True] * len(rows)))
    assert got.preemption_rank.tolist() == [5e6 - 100 if i % 2 else 1e8 - 100 for i in range(len(rows))]
    # the slots' Rank (0.0) once, the requirements once, the rank once per customer
    assert questions.evaluations == 4


def test_slots_whose_reals_print_alike_do_not_share_answers():
    """classad2 prints a real with 16 digits: 0.3 and 0.1 + 0.2 print alike, and an answer
    remembered by the text would be given to both."""
    config = settings(consider_preemption=True, preemption_requirements="True", preemption_rank="Share * 1e17")
    slot_ads = [claimed("s0", "carol@site", Share=0.3), claimed("s1", "carol@site", Share=0.1 + 0.2)]
    snapshot = build_snapshot(slot_ads, jobs("alice", 1), config)
    rows = np.arange(len(snapshot.table))
    got = PreemptionQuestions(snapshot.table, config, NOW).assess(
        snapshot.autoclusters[0], rows, PreemptionInserts({}, [{}, {}], [True, True]))
    shares = {slot.name: slot.ad["Share"] for slot in snapshot.table.slots}
    assert got.preemption_rank.tolist() == [shares[slot.name] * 1e17 for slot in snapshot.table.slots]
    assert got.preemption_rank[0] != got.preemption_rank[1]
