"""PREEMPTION_REQUIREMENTS and PREEMPTION_RANK compiled over the claimed slots with the figures
HTCondor inserts (fastpath/interpreter/preemption_answers.py).

The fast path's answers, call after call of a cycle, are classad2's on whole copies of the slot
and job ads with the figures inserted (matchmaker.cpp's ``addRemoteUserPrios`` and ``negotiate``),
for policies that read the slot's attributes through others, the clock, names only the inserts
supply, an attribute the inserts override, ``eval()``, a job attribute whose expression reads
the slot, and the usage figures that move with every match (left to classad2). A policy the
compiler covers asks classad2 nothing.
"""

from __future__ import annotations

import itertools
import random

import numpy as np

from negotiatord.evaluation.protocol import PreemptionInserts
from negotiatord.fastpath.interpreter.evaluator import FastEvaluator
from negotiatord.pool.builder import build_snapshot
from tests.builders import jobs, settings
from tests.cycle.test_preemption import NOW, UWCS, claimed
from tests.cycle.test_preemption_answers import assert_asked_of_whole_ads, policy_pools

VARYING = frozenset({"remoteuserresourcesinuse", "submitteruserresourcesinuse"})


def cycle_inserts(rows: int, rng: random.Random):
    """Inserts as a cycle makes them: each slot's figures fixed for the cycle but its customer's
    usage, which moves from call to call."""
    held = [{"RemoteUserPrio": rng.choice([5.0, 100.0]), "RemoteGroup": "<none>",
             **({"Shadowed": 2} if rng.random() < 0.5 else {}),
             **({"CurrentRank": 2000.0} if rng.random() < 0.2 else {})} for _ in range(rows)]
    usage = [0.0]

    def remote_of(row: int) -> dict[str, object]:
        return {**held[row], "RemoteUserResourcesInUse": usage[0] + row % 3}

    def inserts(submitter_prio: float) -> PreemptionInserts:
        usage[0] += 1.0
        submitter = {"SubmitterUserPrio": submitter_prio, "SubmitterGroup": "<none>",
                     "SubmitterUserResourcesInUse": usage[0]}
        return PreemptionInserts(submitter, [remote_of(row) for row in range(rows)],
                                 [rng.random() < 0.8 for _ in range(rows)], remote_of, VARYING)

    return inserts


def test_compiled_answers_are_classad2s_on_the_whole_ads_call_after_call():
    rng = random.Random(5)
    for requirements, rank, config, snapshot in policy_pools():
        rows = np.arange(len(snapshot.table))
        evaluator = FastEvaluator(snapshot.table, config, NOW)
        inserts = cycle_inserts(len(rows), rng)
        for autocluster, prio in itertools.product(snapshot.autoclusters, (1.0, 50.0)):
            asked = inserts(prio)
            got = evaluator.assess_preemption(autocluster, rows, asked)
            assert_asked_of_whole_ads(got, snapshot.table, autocluster, asked, requirements, rank)


def test_a_policy_the_compiler_covers_asks_classad2_nothing():
    """The UWCS policy with condor_config.annotated's PREEMPTION_RANK, over slots whose Rank is a
    literal (the rank conditions are then decided without the slot's ad): classad2 answers only
    the slots' Rank, once."""
    config = settings(consider_preemption=True, preemption_requirements=UWCS,
                      preemption_rank="(RemoteUserPrio * 1000000) - TARGET.ImageSize")
    slot_ads = [claimed(f"s{i}", "carol@site", EnteredCurrentState=NOW - 1800 * (i % 4)) for i in range(16)]
    snapshot = build_snapshot(slot_ads, jobs("alice", 2, ImageSize=100), config)
    rows = np.arange(len(snapshot.table))
    evaluator = FastEvaluator(snapshot.table, config, NOW)
    inserts = cycle_inserts(len(rows), random.Random(3))
    for prio in (1.0, 50.0, 1.0):
        asked = inserts(prio)
        got = evaluator.assess_preemption(snapshot.autoclusters[0], rows, asked)
        assert_asked_of_whole_ads(got, snapshot.table, snapshot.autoclusters[0], asked, UWCS,
                                  "(RemoteUserPrio * 1000000) - TARGET.ImageSize")
        assert got.requirements.any() and not got.requirements.all()
    assert evaluator.stats.fallback_evaluations["preemption"] == 1
