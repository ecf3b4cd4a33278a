"""Groups, quotas, pie spins, priorities, concurrency limits and p-slot loading order in a cycle."""

from collections import Counter
from dataclasses import replace

import pytest

from negotiatord.accountant import AccountantState, CustomerRecord
from negotiatord.pool.builder import build_snapshot
from negotiatord.runtime import run_cycle
from negotiatord.settings import PslotLoading
from tests.builders import expr, group, jobs, pslot, settings, static_slot

NOW = 1_700_000_000
CPU_POLICY = dict(consumption_policy=True)


def run(slot_ads, job_ads, config, accountant=None):
    return run_cycle(build_snapshot(slot_ads, job_ads, config), accountant or AccountantState(), config, NOW)


def by_group(result):
    return Counter(m.group for m in result.matches)


def priorities(**real):
    return AccountantState([replace(CustomerRecord.fresh(f"{name}@site"), real_priority=value)
                            for name, value in real.items()])


def test_surplus_goes_to_the_sibling_first_not_by_tie_order():
    """100 cpus; group_a 0.7 (x, y at 0.5 each), group_b 0.3; demand x 100, y 10, b 100, surplus on:
    negotiatord gives x 60, y 10, b 30 (HTCondor's default gives b 60, x 40, y 0)."""
    tree = (group("group_a", dynamic=0.7, surplus=True), group("group_a.x", dynamic=0.5, surplus=True),
            group("group_a.y", dynamic=0.5, surplus=True), group("group_b", dynamic=0.3, surplus=True))
    config = settings(groups=tree, accept_surplus=True, **CPU_POLICY)
    slots = [pslot(f"s{i}", cpus=10, memory=10_000) for i in range(10)]
    job_ads = (jobs("xu", 100, group="group_a.x", cluster=1) + jobs("yu", 10, group="group_a.y", cluster=2)
               + jobs("bu", 100, group="group_b", cluster=3))
    result = run(slots, job_ads, config)
    assert by_group(result) == {"group_a.x": 60, "group_a.y": 10, "group_b": 30}
    allocated = {g.name: g.own_allocated for g in result.groups}
    assert allocated["group_a.x"] == pytest.approx(60)
    assert sum(allocated.values()) <= 100 + 1e-9


def test_submitters_share_a_group_in_inverse_proportion_to_priority():
    config = settings(**CPU_POLICY)
    slots = [pslot(f"s{i}", cpus=10) for i in range(3)]
    result = run(slots, jobs("alice", 40, cluster=1) + jobs("bob", 40, cluster=2), config,
                 priorities(alice=1.0, bob=2.0))
    assert Counter(m.submitter for m in result.matches) == {"alice@site": 20, "bob@site": 10}
    limits = {s.name: s.limit for s in result.submitters}
    assert limits == pytest.approx({"alice@site": 20, "bob@site": 10})


def test_running_work_counts_against_the_submitters_share():
    config = settings(**CPU_POLICY)
    running = [static_slot(f"busy{i}", cpus=1, State="Claimed", Activity="Busy", RemoteUser="alice@site")
               for i in range(10)]
    slots = [pslot("free", cpus=10), *running]
    result = run(slots, jobs("alice", 20, cluster=1) + jobs("bob", 20, cluster=2), config)
    # pool 20, equal priorities: 10 each; alice already holds 10 so bob gets the free 10
    assert Counter(m.submitter for m in result.matches) == {"bob@site": 10}
    assert result.usage["alice@site"] == 10


def test_fractional_shares_are_not_stranded():
    """Three equal submitters on 10 cpus: 3.33 each; the remainder round hands out the last cpu."""
    config = settings(**CPU_POLICY)
    job_ads = jobs("a", 5, cluster=1) + jobs("b", 5, cluster=2) + jobs("c", 5, cluster=3)
    result = run([pslot("s", cpus=10)], job_ads, config)
    assert len(result.matches) == 10
    assert sorted(Counter(m.submitter for m in result.matches).values()) == [3, 3, 4]


def test_concurrency_limits_cap_matches_and_count_running_jobs():
    config = settings(concurrency_limits={"license": 3}, **CPU_POLICY)
    running = static_slot("busy", State="Claimed", RemoteUser="bob@site", ConcurrencyLimits="LICENSE")
    result = run([pslot("s", cpus=10), running], jobs("alice", 5, ConcurrencyLimits="license"), config)
    assert len(result.matches) == 2
    assert any(r.reason == "concurrency limit license reached" for r in result.rejections)


def test_concurrency_increments_and_scope_defaults():
    config = settings(concurrency_scope_defaults={"db": 4}, **CPU_POLICY)
    result = run([pslot("s", cpus=10)], jobs("alice", 5, ConcurrencyLimits="db.read:2"), config)
    assert len(result.matches) == 2


def test_a_job_its_concurrency_limit_blocks_holds_no_quota():
    """group_chem refuses surplus and has quota for all its 4 jobs, but its licence lets 3 run: the
    fourth must not keep a core from erin, who is in <none> (which takes surplus)."""
    tree = (group("group_chem", quota=4),)
    config = settings(groups=tree, concurrency_limits={"license": 3}, **CPU_POLICY)
    job_ads = jobs("dave", 4, cluster=1, group="group_chem", ConcurrencyLimits="license") + jobs("erin", 10, cluster=2)
    result = run([pslot("s", cpus=10)], job_ads, config)
    assert by_group(result) == {"group_chem": 3, "<none>": 7}
    allocated = {g.name: g.own_allocated for g in result.groups}
    assert allocated == pytest.approx({"<none>": 7, "group_chem": 3})
    assert [(r.job, r.reason) for r in result.rejections if r.job.startswith("dave-")] == [
        ("dave-schedd#1.3#0", "concurrency limit license reached")]


def test_a_blocked_job_does_not_reserve_the_whole_static_slot_it_would_take():
    """The blocked job's best candidate is a 4-core static slot, costing 4: without the fix those 4
    stay in group_chem's quota and the slot, which erin's 4-core job fits, stays idle."""
    tree = (group("group_chem", quota=12),)
    config = settings(groups=tree, concurrency_limits={"license": 8}, **CPU_POLICY)
    job_ads = (jobs("dave", 9, cluster=1, group="group_chem", ConcurrencyLimits="license")
               + jobs("erin", 1, cluster=2, cpus=4))
    result = run([pslot("s", cpus=8), static_slot("big", cpus=4, memory=4096)], job_ads, config)
    assert Counter(m.slot for m in result.matches) == {"s": 8, "big": 1}


def test_submitters_of_one_group_count_shared_headroom_once():
    """dave and fay both wait on a licence with room for one job: group_chem's demand is one job,
    not two, so erin gets the other two cores."""
    tree = (group("group_chem", quota=2),)
    config = settings(groups=tree, concurrency_limits={"license": 1}, **CPU_POLICY)
    job_ads = (jobs("dave", 1, cluster=1, group="group_chem", ConcurrencyLimits="license")
               + jobs("fay", 1, cluster=2, group="group_chem", ConcurrencyLimits="license")
               + jobs("erin", 3, cluster=3))
    result = run([pslot("s", cpus=3)], job_ads, config)
    assert by_group(result) == {"group_chem": 1, "<none>": 2}


def test_quota_a_blocked_job_held_flows_as_surplus_in_the_next_round():
    """group_a and erin (<none>) both count the one licence; group_a negotiates first and takes
    it. Erin's job is then blocked and the core <none> was allocated for it goes, in the next
    allocation round, to group_b (quota 0, takes surplus)."""
    tree = (group("group_a", quota=1), group("group_b", dynamic=0.0, surplus=True))
    config = settings(groups=tree, concurrency_limits={"license": 1}, **CPU_POLICY)
    job_ads = (jobs("alice", 1, cluster=1, group="group_a", ConcurrencyLimits="license")
               + jobs("erin", 1, cluster=2, ConcurrencyLimits="license")
               + jobs("bob", 5, cluster=3, group="group_b"))
    result = run([pslot("s", cpus=3)], job_ads, config)
    assert by_group(result) == {"group_a": 1, "group_b": 2}
    assert [(r.job, r.reason) for r in result.rejections if r.submitter == "erin@site"] == [
        ("erin-schedd#2.0#0", "concurrency limit license reached")]


def test_rejections_are_the_final_outcome_once_per_job_and_reason():
    """Three equal submitters on 10 cpus: spin 1 refuses each one's fourth job for its limit, and
    the remainder round then matches one of them; the fifth jobs are refused in several spins.
    A job matched after all is not listed; a job refused for one reason in several spins once."""
    config = settings(concurrency_limits={"license": 0}, **CPU_POLICY)
    job_ads = (jobs("a", 5, cluster=1) + jobs("b", 5, cluster=2) + jobs("c", 5, cluster=3)
               + jobs("d", 2, cluster=4, ConcurrencyLimits="license"))
    result = run([pslot("s", cpus=10)], job_ads, config)
    matched = {m.job for m in result.matches}
    listed = [(r.job, r.reason) for r in result.rejections]
    assert len(listed) == len(set(listed)) == result.stats.rejections
    assert not matched & {job for job, _ in listed}
    assert ("d-schedd#4.0#0", "concurrency limit license reached") in listed
    assert "a-schedd#1.3#0" in matched    # refused for a's limit in spin 1, matched in the remainder round
    assert listed == [
        ("d-schedd#4.0#0", "concurrency limit license reached"),
        ("b-schedd#2.3#0", "submitter limit exceeded"), ("c-schedd#3.3#0", "submitter limit exceeded"),
        ("b-schedd#2.3#0", "no match found"), ("c-schedd#3.3#0", "no match found"),
        ("a-schedd#1.4#0", "no match found"),
    ]


@pytest.mark.parametrize("loading, expected", [
    (PslotLoading.DEPTH_FIRST, {"first": 4}),
    (PslotLoading.BREADTH_FIRST, {"first": 2, "second": 2}),
])
def test_pslot_loading_order(loading, expected):
    config = settings(pslot_loading=loading, **CPU_POLICY)
    result = run([pslot("first", cpus=4), pslot("second", cpus=4)], jobs("alice", 4), config)
    assert Counter(m.slot for m in result.matches) == expected


def test_one_per_cycle_loading_matches_a_pslot_once_per_cycle():
    """HTCondor's manual (Partitionable slots): without a consumption policy the negotiator
    matches a partitionable slot to one job per cycle, and the startd carves that job's dynamic
    slot; matchmaker.cpp erases the matched slot from the cycle's offers. Under one_per_cycle two
    4-cpu p-slots take one 1-cpu job each, each consuming only what its job requests, where the
    consumption policy's depth-first loading puts all four jobs on the first."""
    config = settings(pslot_loading=PslotLoading.ONE_PER_CYCLE, **CPU_POLICY)
    result = run([pslot("first", cpus=4), pslot("second", cpus=4)], jobs("alice", 4), config)
    assert Counter(m.slot for m in result.matches) == {"first": 1, "second": 1}
    assert [(m.consumed["Cpus"], m.cost) for m in result.matches] == [(1, 1), (1, 1)]
    assert {r.reason for r in result.rejections} == {"no match found"}


def test_autoregroup_lets_a_group_use_what_nobody_else_wants():
    tree = (group("group_a", quota=2, autoregroup=True),)
    slots = [pslot("s", cpus=10)]
    regrouped = run(slots, jobs("alice", 10, group="group_a"), settings(groups=tree, **CPU_POLICY))
    assert len(regrouped.matches) == 10
    held = run(slots, jobs("alice", 10, group="group_a"),
               settings(groups=(group("group_a", quota=2),), **CPU_POLICY))
    assert len(held.matches) == 2
    assert {r.reason for r in held.rejections} <= {"submitter limit exceeded", "group quota exceeded"}


def test_higher_job_priority_goes_first():
    low = jobs("alice", 1, cluster=1, JobPrio=0)
    high = jobs("alice", 1, cluster=2, JobPrio=5)
    result = run([static_slot("only", cpus=1)], low + high, settings())
    assert [m.job for m in result.matches] == ["alice-schedd#2.0#0"]


def test_group_sort_expr_decides_which_group_negotiates_first():
    tree = (group("group_a", dynamic=0.5), group("group_b", dynamic=0.5))
    wanted = dict(Requirements=expr('TARGET.Name == "s1"'))
    slots = [static_slot("s1"), static_slot("s2")]
    job_ads = jobs("au", 1, group="group_a", cluster=1, **wanted) + jobs("bu", 1, group="group_b", cluster=2, **wanted)
    default = run(slots, job_ads, settings(groups=tree))
    assert [m.group for m in default.matches] == ["group_a"]
    b_first = run(slots, job_ads,
                  settings(groups=tree, group_sort_expr='ifThenElse(AccountingGroup =?= "group_b", 0, 1)'))
    assert [m.group for m in b_first.matches] == ["group_b"]


def test_submitter_maps_to_its_deepest_configured_group():
    tree = (group("group_a", dynamic=1.0, surplus=True),)
    result = run([pslot("s", cpus=4)], jobs("alice", 2, group="group_a.undeclared"),
                 settings(groups=tree, **CPU_POLICY))
    assert {m.group for m in result.matches} == {"group_a"}
    assert result.charges["group_a"] == 2 and result.charges["group_a.undeclared.alice@site"] == 2


@pytest.mark.parametrize("tree, contenders, winner", [
    # two top-level groups, listed against alphabetical order
    ((group("group_b", dynamic=0.5), group("group_a", dynamic=0.5)), ("group_b", "group_a"), "group_a"),
    # a subgroup listed first still comes after every top-level group: breadth-first
    ((group("group_a.x", dynamic=1.0), group("group_a", dynamic=0.5), group("group_b", dynamic=0.5)),
     ("group_a.x", "group_b"), "group_b"),
])
def test_groups_tied_in_group_sort_expr_negotiate_in_htcondors_tree_order(tree, contenders, winner):
    """With nothing in use the default GROUP_SORT_EXPR ties every group at 0. HTCondor then
    negotiates in its tree order, not in GROUP_NAMES order: GroupEntry::hgq_construct_tree sorts
    the names (ci_less) and lists the groups breadth-first from <none>, and
    GroupEntry::hgq_negotiate_with_all_groups sorts that list by sort key (htcondor/htcondor,
    src/condor_negotiator.V6/GroupEntry.cpp)."""
    wanted = dict(Requirements=expr('TARGET.Name == "s1"'))
    job_ads = [ad for cluster, name in enumerate(contenders, 1)
               for ad in jobs(f"u{cluster}", 1, group=name, cluster=cluster, **wanted)]
    result = run([static_slot("s1"), static_slot("s2")], job_ads, settings(groups=tree))
    assert [m.group for m in result.matches] == [winner]
