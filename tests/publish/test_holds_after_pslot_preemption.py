"""What the daemon holds after a job took dynamic slots of one partitionable slot
(ALLOW_PSLOT_PREEMPTION).

HTCondor's matchmaker.cpp ``pslotMultiMatch`` gives the p-slot its victims' resources back and
carves the preemptor's dynamic slot from the sum; the startd then advertises the p-slot with those
resources and the victims' dynamic slots gone. Until it does, the daemon's stand-ins must say the
same: the p-slot with the victims' assets added back less what the match consumed (never a
negative amount), and the victims' dynamic slots left out, so no later cycle offers or charges
them twice.
"""

from __future__ import annotations

from negotiatord.feed.kinds import AdKind
from negotiatord.feed.store import JobAds, PoolView
from negotiatord.pool.jobs import job_id
from negotiatord.publish.holds import holds_for
from tests.builders import jobs
from tests.cycle.test_preemption import cycle
from tests.cycle.test_pslot_preemption import NODE, dynamic, fair, node


def test_the_pslot_gets_its_victims_assets_back_and_the_victims_are_left_out():
    """b holds the 8-CPU node as four 2-CPU, 1024 MB dynamic slots; a's 4-CPU job takes slot1_2
    and slot1_4 (the fair-sharing case of test_pslot_preemption); its memory is what the
    consumption policy made of RequestMemory."""
    slot_ads = node([dynamic(1, "b"), dynamic(2, "b", JobPrio=-1), dynamic(3, "b"), dynamic(4, "b")])
    job_ads = jobs("user", 1, group="a", cpus=4)
    result = cycle(slot_ads, job_ads, fair())
    victims = {preemption.slot for preemption in result.preemptions}
    assert victims == {f"slot1_2@{NODE}", f"slot1_4@{NODE}"}
    view = PoolView(slots={str(ad["Name"]): ad for ad in slot_ads}, jobs=JobAds({job_id(ad): ad for ad in job_ads}))

    held = {hold.key: hold for hold in holds_for(view, result.matches, result.preemptions) if hold.kind is AdKind.SLOT}

    pslot, extras = held[f"slot1@{NODE}"].stand_ins()
    assert pslot is not None
    assert pslot["Cpus"] == 0 + 2 + 2 - 4
    assert pslot["Memory"] == 8192 - 4 * 1024 + 2 * 1024 - result.matches[0].consumed["Memory"]
    assert all(held[name].stand_ins() == (None, ()) for name in victims)
    assert {name for name, _ in extras} == {f"slot1@{NODE}#{result.matches[0].job}"}

