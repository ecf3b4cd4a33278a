"""NEGOTIATORD_SUBMITTER_ORDER = admission_fair_sharing in a cycle.

Reference: Kueue's admission fair sharing (KEP-4136 and its concept page, "Admission Fair
Sharing"): the LocalQueue with the lowest weighted decayed usage plus entry penalties is admitted
first, and each admission charges α(sampling interval)·request as an entry penalty.
"""

from collections import Counter

import pytest

from negotiatord.accountant import AccountantState
from negotiatord.accountant.admission import AdmissionUsage, decay_rate, sample_admission_usage
from negotiatord.pool.builder import build_snapshot
from negotiatord.runtime import run_cycle
from negotiatord.settings import SubmitterOrder
from negotiatord.settings.groups import WEIGHT_UNIT
from tests.builders import expr, jobs, pslot, settings, static_slot
from tests.cycle.test_preemption import claimed

NOW = 1_700_000_000
AFS = dict(consumption_policy=True, submitter_order=SubmitterOrder.ADMISSION_FAIR_SHARING,
           admission_half_life=3600.0, negotiator_interval=60.0)


def history(**cpus):
    return AccountantState(admission={f"{name}@site": AdmissionUsage({"cpus": amount}, NOW - 60)
                                      for name, amount in cpus.items()})


def run(config, accountant, slots, job_ads):
    return run_cycle(build_snapshot(slots, job_ads, config), accountant, config, NOW)


def test_the_submitter_with_less_history_is_served_first_and_takes_all():
    """HTCondor's pie would split 10 cpus 5/5 between equal priorities; admission fair sharing
    gives bob (no history) every match while his entry penalties stay below alice's usage."""
    config = settings(**AFS)
    result = run(config, history(alice=100.0), [pslot("s", cpus=10)],
                 jobs("alice", 10, cluster=1) + jobs("bob", 10, cluster=2))
    assert Counter(m.submitter for m in result.matches) == {"bob@site": 10}


def test_entry_penalties_make_equal_submitters_take_turns():
    config = settings(**AFS)
    result = run(config, AccountantState(), [pslot("s", cpus=10)],
                 jobs("alice", 10, cluster=1) + jobs("bob", 10, cluster=2))
    assert [m.submitter for m in result.matches] == ["alice@site", "bob@site"] * 5


def test_a_burst_counts_at_once_through_the_entry_penalty():
    """alice's history is worth 3.5 one-cpu entry penalties: bob takes 4 matches, the fourth putting
    him past her, and from then on they alternate: b b b b a b a b a b."""
    config = settings(**AFS)
    penalty = decay_rate(60.0, 3600.0)          # one 1-cpu match
    result = run(config, history(alice=3.5 * penalty), [pslot("s", cpus=10)],
                 jobs("alice", 10, cluster=1) + jobs("bob", 10, cluster=2))
    order = [m.submitter.split("@")[0] for m in result.matches]
    assert order[:5] == ["bob", "bob", "bob", "bob", "alice"]
    assert order[4:] == ["alice", "bob"] * 3


def test_gpus_weigh_five_times_cpus():
    """Weights Cpus:1, GPUs:5: alice's 1 decayed GPU outweighs bob's 4 decayed cpus."""
    config = settings(**AFS, admission_resource_weights={"cpus": 1.0, "gpus": 5.0})
    accountant = AccountantState(admission={
        "alice@site": AdmissionUsage({"gpus": 1.0}, NOW - 60),
        "bob@site": AdmissionUsage({"cpus": 4.0}, NOW - 60),
    })
    result = run(config, accountant, [pslot("s", cpus=2)],
                 jobs("alice", 2, cluster=1) + jobs("bob", 2, cluster=2))
    assert Counter(m.submitter for m in result.matches) == {"bob@site": 2}


def test_the_priority_factor_is_the_submitter_weight():
    """alice's history is twice bob's, but bob's factor is three times hers: bob goes last."""
    config = settings(**AFS, accountant_local_domain="site", remote_prio_factor=3000.0)
    accountant = AccountantState(admission={
        "alice@site": AdmissionUsage({"cpus": 2.0}, NOW - 60),
        "bob@remote": AdmissionUsage({"cpus": 1.0}, NOW - 60),
    })
    result = run(config, accountant, [pslot("s", cpus=2)],
                 jobs("alice", 2, cluster=1) + jobs("bob", 2, cluster=2, User="bob@remote"))
    assert Counter(m.submitter for m in result.matches) == {"alice@site": 2}


def test_priority_order_is_unchanged_by_default():
    config = settings(consumption_policy=True)
    result = run(config, history(alice=100.0), [pslot("s", cpus=10)],
                 jobs("alice", 10, cluster=1) + jobs("bob", 10, cluster=2))
    assert Counter(m.submitter for m in result.matches) == {"alice@site": 5, "bob@site": 5}
    assert result.held == {}


def test_the_cycle_reports_what_submitters_hold_for_the_accountants_sample():
    """alice holds 4 running cpus and gets 2 more; one half-life after her last sample her usage
    moves half way from 2 to 6."""
    config = settings(**AFS)
    running = [static_slot(f"busy{i}", State="Claimed", Activity="Busy", RemoteUser="alice@site")
               for i in range(4)]
    accountant = AccountantState(admission={"alice@site": AdmissionUsage({"cpus": 2.0}, NOW - 3600)})
    result = run(config, accountant, [pslot("s", cpus=2), *running], jobs("alice", 2, cluster=1))
    assert result.held["alice@site"]["cpus"] == 6.0
    after = sample_admission_usage(accountant, NOW, result.held, config.admission_half_life_s)
    assert after.admission_usage("alice@site").resources["cpus"] == pytest.approx(4.0)


def test_a_slot_preempted_this_cycle_is_held_by_its_preemptor_only():
    """bob's slot, whose startd RANK prefers alice's job (HTCondor manual, "User Priorities and
    Negotiation": a claimed slot is preempted "with a reason of Rank"), goes to alice: after the
    cycle the slot's cpu and weight are hers, not both hers and bob's. (What submitters hold is
    reported for the quota timers as for admission fair sharing.)"""
    config = settings(quota_preemption=True)
    slot = claimed("s1", "bob@site", Rank=expr('TARGET.Owner == "alice" ? 10 : 0'))
    result = run(config, AccountantState(), [slot], jobs("alice", 1))
    (preemption,) = result.preemptions
    assert (preemption.slot, preemption.victim_submitter, preemption.rule) == ("s1", "bob@site", "rank")
    assert result.held["alice@site"]["cpus"] == 1.0 and result.held["alice@site"][WEIGHT_UNIT] == 1.0
    assert "bob@site" not in result.held


def test_a_startd_rank_preempts_in_a_full_pool_under_admission_fair_sharing_too():
    """The pool is full (bob holds its one slot), so the group has no room left; the slot's RANK
    prefers alice's job, which HTCondor lets preempt whatever the submitter's limit (manual, "User
    Priorities and Negotiation": a claimed slot is taken "with a reason of Rank"). The submitter
    order decides who goes first, not whether the startd's preference counts."""
    slot = claimed("s1", "bob@site", Rank=expr('TARGET.Owner == "alice" ? 10 : 0'))
    for order in (settings(), settings(**AFS)):
        result = run(order, AccountantState(), [slot], jobs("alice", 1))
        assert [(p.slot, p.submitter, p.rule) for p in result.preemptions] == [("s1", "alice@site", "rank")]


def _holding(owner: str, count: int) -> list:
    """``count`` claimed one-cpu slots running ``owner``'s jobs."""
    return [claimed(f"{owner}{n}", f"{owner}@site") for n in range(count)]


def test_a_cycle_orders_submitters_by_usage_sampled_with_what_they_hold_now():
    """Kueue's LocalQueue reconciler samples a queue's admitted usage into its decayed usage, and
    the scheduler orders queues by that (HTCondor likewise updates priorities at the start of a
    cycle). A dry run with no history: alice holds 10 cpus, bob none, so bob comes first and
    takes both free cpus (his entry penalties stay far below alice's 10), where an order by the
    empty history would tie them and alternate."""
    config = settings(**AFS)
    result = run(config, AccountantState(), _holding("alice", 10) + [pslot("free", cpus=2)],
                 jobs("alice", 2, cluster=1) + jobs("bob", 2, cluster=2))
    assert [m.submitter for m in result.matches] == ["bob@site", "bob@site"]


def test_with_a_half_life_of_zero_what_they_hold_now_is_all_that_counts():
    """README: a half-life of 0 keeps no history, so submitters are ordered by what they hold
    now: bob's old usage of 100 counts for nothing against the 5 cpus alice holds."""
    config = settings(**{**AFS, "admission_half_life": 0.0})
    result = run(config, history(bob=100.0), _holding("alice", 5) + [pslot("free", cpus=1)],
                 jobs("alice", 1, cluster=1) + jobs("bob", 1, cluster=2))
    assert [m.submitter for m in result.matches] == ["bob@site"]
