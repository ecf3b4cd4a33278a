"""A partitionable slot a real schedd claimed whole, matched again to that schedd's next job.

HTCondor 23 and later (HTCONDOR-1824): a schedd with ``ENABLE_CLAIMABLE_PARTITIONABLE_SLOTS``,
told by its negotiator ``MatchClaimedPslots = true``, claims an unclaimed p-slot whole (schedd.cpp
``scheduler_handleMatch``), and a startd with the same knob keeps the p-slot ``Claimed`` for it,
naming it in ``RemoteScheddName`` (claim.cpp ``Claim::publish``; the startd refuses such a claim
on a p-slot with a consumption policy). matchmaker.cpp keeps the claimed p-slot
(``trimStartdAds_ClaimedPslotLogic``) and offers it to that schedd's jobs
(``matchmakingAlgorithm``), sending the p-slot's own claim id; the schedd carves the job's dynamic
slot with it. HTCondor's own negotiator did exactly this on this pool's configuration (a 2-cpu
p-slot beside 6 cpus no job may use, so that the claimant's share of the pool is not spent by the
claimed p-slot alone): the second job matched the claimed ``slot1@vm`` a cycle later and ran on
``slot1_2@vm``.
"""

from __future__ import annotations

import classad2

from tests.minipool import MiniPool, minipool, wait_for
from tests.real_pool.conftest import negotiatord

CLAIMABLE = """
ENABLE_CLAIMABLE_PARTITIONABLE_SLOTS = True
SLOT_TYPE_1 = cpus=2, memory=25%, disk=25%, swap=25%
NUM_SLOTS_TYPE_1 = 1
SLOT_TYPE_1_PARTITIONABLE = True
SLOT_TYPE_1_CONSUMPTION_POLICY = False
SLOT_TYPE_2 = cpus=6, memory=25%, disk=25%, swap=25%
NUM_SLOTS_TYPE_2 = 1
START = SlotTypeID =!= 2
SCHEDD_INTERVAL = 2
# cycles run when the test asks, not also on the schedd's RESCHEDULE, which finds negotiatord
# through its ad once the first cycle advertised it
SCHEDD_SEND_RESCHEDULE = False
"""


def _slot(pool: MiniPool, name: str) -> classad2.ClassAd | None:
    for ad in classad2.parseAds(pool.condor("condor_status", "-l", name), classad2.ParserType.Old):
        return ad
    return None


def test_a_pslot_the_schedd_claimed_whole_takes_its_next_job(tmp_path):
    with minipool(cpus=8, config=CLAIMABLE) as pool:
        cluster = pool.submit(2, arguments="60")
        pool.wait_until_advertised("minipool@minipool", idle=2)
        daemon = negotiatord(pool, tmp_path / "negotiatord")
        try:
            first = daemon.wait_for_cycle(0)
            # one match on the unclaimed p-slot: without a consumption policy it is taken whole
            [match] = daemon.get("/v1/matches")["matches"]
            assert match["slot"] == "slot1@vm" and first["Matches"] == 1

            def claimed_whole() -> classad2.ClassAd | None:
                slot = _slot(pool, "slot1@vm")
                return slot if slot is not None and slot.get("State") == "Claimed" else None
            slot = wait_for(claimed_whole, 60, "the schedd to claim slot1@vm whole")
            assert slot["RemoteScheddName"] == "vm" and slot.get("WantMatching") is True

            daemon.reschedule()
            matches = daemon.get("/v1/matches")["matches"]
            assert [m["slot"] for m in matches] == ["slot1@vm", "slot1@vm"]
            assert daemon.status()["schedds"]["hand_out"]["handed"] == 1
            running = wait_for(lambda: len(pool.jobs(f"ClusterId == {cluster} && JobStatus == 2")) == 2 and
                               pool.jobs(f"ClusterId == {cluster}"), 60, "both jobs to run")
            assert {job["RemoteHost"] for job in running} == {"slot1_1@vm", "slot1_2@vm"}
        finally:
            daemon.stop()
