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

import numpy as np

from negotiatord.evaluation.preemption import PreemptionQuestions
from negotiatord.evaluation.protocol import PreemptionInserts
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
