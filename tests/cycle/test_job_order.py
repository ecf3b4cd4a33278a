"""The order a submitter's jobs are offered in: the schedd's job order, schedd by schedd.

References: HTCondor 25.14's schedd, ``src/condor_schedd.V6/qmgmt.cpp`` ``prio_compar`` (within
a submitter: higher PreJobPrio1, PreJobPrio2, JobPrio, PostJobPrio1, PostJobPrio2 first, then
ClusterId, ProcId; ``get_job_prio`` reads a missing one as 0), and its negotiator,
``src/condor_negotiator.V6/matchmaker.cpp``: each schedd of a submitter is a submitter ad of its
own, negotiated one after the other (``submitterLessThan``), unless USE_GLOBAL_JOB_PRIOS splits
the ads by JobPrio and puts the highest JobPrio first across schedds
(``consolidate_globaljobprio_submitter_ads``, ``submitterLessThan``'s secondary key).
"""

from __future__ import annotations

from tests.builders import jobs, settings, static_slot
from tests.cycle.test_preemption import cycle


def _matched(result) -> set[str]:
    return {match.job for match in result.matches}


def test_dag_priorities_come_around_job_prio_in_the_schedds_order():
    """Five jobs of one cluster, three slots: prio_compar puts PreJobPrio1, then PreJobPrio2,
    then JobPrio, then PostJobPrio1 first."""
    ads = jobs("alice", 5)
    for ad, (name, value) in zip(ads, [("JobPrio", 10), ("PostJobPrio1", 5), ("PreJobPrio1", 1),
                                       ("PreJobPrio2", 2), ("JobPrio", 0)]):
        ad[name] = value
    result = cycle([static_slot(f"s{n}") for n in range(3)], ads, settings())
    assert _matched(result) == {"alice-schedd#1.2#0", "alice-schedd#1.3#0", "alice-schedd#1.0#0"}


def _two_schedds() -> list:
    """alice's jobs at two schedds: JobPrio 0 at one, 5 at the other."""
    ads = []
    for schedd, prio in (("a.example", 0), ("b.example", 5)):
        for proc, ad in enumerate(jobs("alice", 2, JobPrio=prio)):
            ad["GlobalJobId"] = f"{schedd}#1.{proc}#0"
            ads.append(ad)
    return ads


def test_a_submitters_schedds_are_negotiated_one_after_the_other():
    """Without USE_GLOBAL_JOB_PRIOS (HTCondor's default) two schedds are two submitter ads: the
    first one negotiated fills both slots, whatever the other's JobPrio (which of the two goes
    first is HTCondor's pseudo-random order). Here one schedd has JobPrio 5 and 0, the other 3
    and 3: ordered by JobPrio across schedds, the slots would go to one job of each."""
    ads = _two_schedds()
    ads[0]["JobPrio"], ads[2]["JobPrio"], ads[3]["JobPrio"] = 5, 3, 3
    result = cycle([static_slot("s0"), static_slot("s1")], ads, settings())
    assert len(result.matches) == 2
    assert len({job.split("#")[0] for job in _matched(result)}) == 1
    mixed = cycle([static_slot("s0"), static_slot("s1")], ads, settings(use_global_job_prios=True))
    assert _matched(mixed) == {"a.example#1.0#0", "b.example#1.0#0"}


def test_global_job_prios_put_the_highest_job_prio_first_across_schedds():
    result = cycle([static_slot("s0"), static_slot("s1")], _two_schedds(), settings(use_global_job_prios=True))
    assert _matched(result) == {"b.example#1.0#0", "b.example#1.1#0"}


def test_global_job_prios_still_follow_each_schedds_order_within_one_job_prio():
    """Within one JobPrio the schedd offers its jobs in prio_compar order: PreJobPrio1 first."""
    ads = _two_schedds()
    ads[3]["PreJobPrio1"] = 1             # b.example#1.1, JobPrio 5
    result = cycle([static_slot("s0")], ads, settings(use_global_job_prios=True))
    assert _matched(result) == {"b.example#1.1#0"}
