"""Enforcing a lowered group maximum: preemptable amounts, guaranteed caps, the split among child
groups, victim selection and the reasons preemption cannot help.

References: YuniKorn's design document "Quota Enforcement through Preemption" (the design document
in ``../shared/seeds/004_80c197c24f78214e.txt``, cited as seed 004) and the test tables of
apache/yunikorn-core ``pkg/scheduler/objects/quota_preemptor_test.go``, re-expressed in groups and
running jobs. A YuniKorn queue is a group, an allocation a running job, the "first" resource cpus,
memory in GiB. ``createVictim``'s age adjustment (minutes) becomes the job's start time.
"""

from __future__ import annotations

import pytest

from negotiatord.accountant.quota_timers import group_resources
from negotiatord.cycle.claimed import RunningJob
from negotiatord.cycle.quota_enforcement import (
    BEST_EFFORT,
    NO_VICTIM_FITS,
    ONLY_GUARANTEED_LEFT,
    enforce,
    excess,
    group_usage,
    preemptable,
    split,
)
from negotiatord.settings import GroupSettings, GroupTree

NOW = 1_700_000_000.0


def tree(*groups: tuple[str, dict | None]) -> GroupTree:
    return GroupTree(GroupSettings(name, None, None, False, False, None, guaranteed=guaranteed)
                     for name, guaranteed in groups)


def job(name: str, group: str, minutes_old: float = 0.0, submitter: str = "app1", priority: int = 0,
        **resources: float) -> RunningJob:
    return RunningJob(name, f"{group}.{submitter}@site", group, resources, priority, NOW - 60 * minutes_old,
                      f"slot-{name}")


def victims(enforcement) -> list[str]:
    return sorted(v.job_id for v in enforcement.victims)


# --- seed 004, "Preemptable Resource calculation" table (root.a.b) ---------------------------

@pytest.mark.parametrize(("new_max", "usage", "expected"), [
    ({"memory": 50}, {"memory": 80}, {"memory": 30}),
    ({"memory": 50, "cpus": 50}, {"memory": 80, "cpus": 80}, {"memory": 30, "cpus": 30}),
    ({"memory": 200, "cpus": 50}, {"memory": 100, "cpus": 80}, {"cpus": 30}),
    ({"memory": 100, "cpus": 100}, {"memory": 50, "cpus": 500}, {"cpus": 400}),
    ({"memory": 50}, {"memory": 80, "cpus": 100}, {"memory": 30}),
    ({"cpus": 100}, {"memory": 100, "cpus": 500}, {"cpus": 400}),
])
def test_seed_preemptable_resource_table(new_max, usage, expected):
    assert excess(new_max, usage) == expected


# --- TestQuotaChangeGetPreemptableResource: leaf under a parent with a guaranteed floor --------

@pytest.mark.parametrize(("parent_guaranteed", "maximum", "used", "expected"), [
    (None, {"memory": 1000}, {}, {}),                                                    # nil used
    (None, {"memory": 1000}, {"memory": 500}, {}),                                       # used below max
    (None, {"memory": 1000}, {"memory": 1500}, {"memory": 500}),                         # used above max
    (None, {"memory": 1000, "cpus": 10, "gpus": 10}, {"memory": 1500, "cpus": 10, "gpus": 9}, {"memory": 500}),
    (None, {"memory": 1000}, {"cpus": 150}, {}),                                         # max undefined for cpus
    ({"memory": 1200}, {"memory": 1000}, {"memory": 1500}, {"memory": 300}),             # parent floor lower
    ({"memory": 1200}, {"memory": 1000}, {"memory": 1500, "cpus": 10, "gpus": 9}, {"memory": 300}),
    ({"memory": 900}, {"memory": 1000}, {"memory": 1500}, {"memory": 500}),              # parent floor higher
    ({"memory": 900}, {"memory": 1000}, {"memory": 1500, "cpus": 10, "gpus": 9}, {"memory": 500}),
])
def test_yunikorn_get_preemptable_resource_table(parent_guaranteed, maximum, used, expected):
    groups = tree(("parent", parent_guaranteed), ("parent.leaf", None))
    usage, _ = group_usage(groups, [job("a", "parent.leaf", **used)] if used else [])
    assert preemptable(groups, "parent.leaf", maximum, usage) == expected


# --- seed 004, "Preemption does not help" and the best-effort cases -----------------------------

def test_seed_guaranteed_floor_limits_victims_to_two_of_five():
    """Usage memory 100 in five jobs of 20, guaranteed 50, a maximum lowered to 60: 40 preemptable,
    and two victims release it exactly; a third would take usage below the floor."""
    groups = tree(("a", {"memory": 50}))
    jobs = [job(f"j{k}", "a", minutes_old=k, memory=20) for k in range(5)]
    result = enforce(groups, "a", {"memory": 60}, jobs)
    assert result.preemptable == {"memory": 40}
    assert victims(result) == ["j0", "j1"]          # the youngest two
    assert result.problems() == []


def test_seed_best_effort_when_the_victims_do_not_add_up():
    """Maximum lowered to the guaranteed 50: 50 preemptable, but jobs of 20 release 40 at most."""
    groups = tree(("a", {"memory": 50}))
    jobs = [job(f"j{k}", "a", minutes_old=k, memory=20) for k in range(5)]
    result = enforce(groups, "a", {"memory": 50}, jobs)
    assert victims(result) == ["j0", "j1"]
    assert result.shares[0].claimed == {"memory": 40}
    assert result.shares[0].reason == BEST_EFFORT
    assert "asked memory:50, released memory:40" in result.problems()[0]


def test_seed_unsuccessful_when_the_only_victim_is_too_large():
    groups = tree(("a", {"memory": 50}))
    result = enforce(groups, "a", {"memory": 60}, [job("big", "a", memory=100)])
    assert result.victims == () and result.shares[0].reason == NO_VICTIM_FITS


def test_only_guaranteed_usage_left_cannot_be_preempted():
    groups = tree(("a", {"memory": 80}))
    result = enforce(groups, "a", {"memory": 50}, [job("j", "a", memory=10), job("k", "a", memory=70)])
    assert result.preemptable == {} and result.reason == ONLY_GUARANTEED_LEFT
    assert result.problems() == ["quota of group a: " + ONLY_GUARANTEED_LEFT]


def test_only_jobs_holding_a_preemptable_type_are_victims():
    """TestQuotaChangeFilterVictims "not even single res type in preemptable resource matches"."""
    groups = tree(("a", None))
    result = enforce(groups, "a", {"memory": 5}, [job("cpu-only", "a", cpus=4), job("mem", "a", memory=10)])
    assert victims(result) == []
    assert result.shares[0].reason == NO_VICTIM_FITS
    # 5 preemptable: the cpu-only job is never a victim, though it is the youngest
    result = enforce(groups, "a", {"memory": 3}, [job("cpu-only", "a", 0, cpus=4),
                                                  job("mem1", "a", 1, memory=4), job("mem2", "a", 2, memory=4)])
    assert victims(result) == ["mem1"] and result.shares[0].reason == BEST_EFFORT


# --- TestQuotaChangeTryPreemption: one leaf, victims by age ------------------------------------

@pytest.mark.parametrize(("guaranteed", "jobs", "expected", "claimed", "reason"), [
    # "suitable victims available": usage 18, max 10: the younger ask2 (8) fits exactly
    (None, [("ask1", 5, 10), ("ask2", 4, 8)], ["ask2"], 8, None),
    # "victims available but none is suitable": 1 preemptable, the only job holds 11
    (None, [("ask6", 3, 11)], [], 0, NO_VICTIM_FITS),
    # "skip over sized victims": the younger ask3 (11) overshoots 10, ask21 (9) fits
    (None, [("ask21", 4, 9), ("ask3", 3, 11)], ["ask21"], 9, BEST_EFFORT),
    # "best effort - guaranteed set and equals max": 8 preemptable, youngest first 4 + 3
    ({"cpus": 10}, [("ask5", 4, 5), ("ask51", 3, 6), ("ask52", 2, 3), ("ask53", 1, 4)], ["ask52", "ask53"], 7,
     BEST_EFFORT),
])
def test_yunikorn_try_preemption_table(guaranteed, jobs, expected, claimed, reason):
    groups = tree(("leaf", guaranteed))
    result = enforce(groups, "leaf", {"cpus": 10}, [job(n, "leaf", minutes_old=age, cpus=c) for n, age, c in jobs])
    assert victims(result) == expected
    assert result.shares[0].claimed == {"cpus": claimed}
    assert result.shares[0].reason == reason


@pytest.mark.parametrize("guaranteed", [None, {"cpus": 5}])
def test_yunikorn_guaranteed_not_set_case_follows_the_design_order(guaranteed):
    """"guaranteed not set" / "guaranteed set but lower than max": ask4 (5, 3 min old), ask41 (6, 2),
    ask42 (9, 1), max 10. Youngest first takes ask42 (9). YuniKorn's code takes ask4 (5): its
    SortAllocationsBasedOnAsk compares ages by the hour, then prefers the smaller allocation."""
    groups = tree(("leaf", guaranteed))
    result = enforce(groups, "leaf", {"cpus": 10}, [job("ask4", "leaf", 3, cpus=5), job("ask41", "leaf", 2, cpus=6),
                                                    job("ask42", "leaf", 1, cpus=9)])
    assert victims(result) == ["ask42"] and result.shares[0].claimed == {"cpus": 9}


# --- victim order: other submitters first, lower priority first, youngest first --------------

def test_jobs_of_the_submitter_that_made_the_group_exceed_go_last():
    """alice's two old jobs fit the maximum of 4; bob's later job took the group over it, so
    alice's jobs are preferred as victims even though bob's is younger."""
    groups = tree(("a", None))
    jobs = [job("alice1", "a", 30, "alice", cpus=2), job("alice2", "a", 20, "alice", cpus=2),
            job("bob1", "a", 10, "bob", cpus=2)]
    assert victims(enforce(groups, "a", {"cpus": 4}, jobs)) == ["alice2"]


def test_lower_priority_before_younger():
    groups = tree(("a", None))
    jobs = [job("old-low", "a", 30, priority=-5, cpus=2), job("young", "a", 1, priority=0, cpus=2),
            job("first", "a", 60, cpus=2)]
    assert victims(enforce(groups, "a", {"cpus": 4}, jobs)) == ["old-low"]


# --- TestQuotaChangeGetChildQueuesPreemptableResource: the parent's split -------------------

YUNIKORN_TREE = ("parent", "parent.leaf1", "parent.leaf1.leaf11", "parent.leaf1.leaf11.leaf111",
                 "parent.leaf1.leaf12", "parent.leaf2", "parent.leaf2.leaf21", "parent.leaf2.leaf21.leaf211",
                 "parent.leaf2.leaf22", "parent.leaf3", "parent.leaf4")
GUARANTEED_SIDE = {"parent.leaf1", "parent.leaf1.leaf11", "parent.leaf1.leaf11.leaf111", "parent.leaf1.leaf12",
                   "parent.leaf4"}


def yunikorn_tree(floor: dict | None, parent_floor: dict | None = None) -> GroupTree:
    return tree(*((name, parent_floor if name == "parent" else floor if name in GUARANTEED_SIDE else None)
                  for name in YUNIKORN_TREE))


@pytest.mark.parametrize(("floor", "extra"), [({"cpus": 10}, {}),
                                              ({"cpus": 10, "third": 10}, {"second": 0})])
@pytest.mark.parametrize(("amount", "expected"), [
    (100, (22, 11, 41, 24)),    # "normal distribution"
    (200, (44, 22, 83, 49)),    # "twice the preemptable resources"
    (50, (10, 5, 20, 12)),      # "half the preemptable resources"
])
def test_yunikorn_child_split_table(floor, extra, amount, expected):
    """Usage: leaf111 30, leaf12 20, leaf211 50, leaf22 30, leaf4 10 (at its floor), leaf3 none.
    The "different resource types" variant adds a "second" resource the parent's amount does not
    name and a "fourth" no group uses: neither is split."""
    groups = yunikorn_tree(floor)
    held = {"parent.leaf1.leaf11.leaf111": 30, "parent.leaf1.leaf12": 20, "parent.leaf2.leaf21.leaf211": 50,
            "parent.leaf2.leaf22": 30, "parent.leaf4": 10}
    second = "second" in extra
    jobs = [job(g.rsplit(".", 1)[1], g, cpus=c, **({"second": c} if second and "leaf1" in g else {}))
            for g, c in held.items()]
    usage, own = group_usage(groups, jobs)
    wanted = {"cpus": amount, **({"fourth": 100} if second else {})}
    shares = split(groups, "parent", wanted, usage, own)
    assert {g: s.get("cpus") for g, s in shares.items()} == dict(zip(
        ("parent.leaf1.leaf11.leaf111", "parent.leaf1.leaf12", "parent.leaf2.leaf21.leaf211", "parent.leaf2.leaf22"),
        map(float, expected)))
    assert all(set(s) == {"cpus"} for s in shares.values())


def _parent_case_jobs() -> list[RunningJob]:
    sized = {
        "parent.leaf1.leaf11.leaf111": [("ask1", 5, 9), ("ask2", 4, 10), ("ask3", 4, 11)],
        "parent.leaf1.leaf12": [("ask4", 5, 9), ("ask5", 4, 11)],
        "parent.leaf2.leaf21.leaf211": [("ask6", 5, 8), ("ask7", 4, 9), ("ask8", 5, 10), ("ask9", 4, 11),
                                        ("ask10", 4, 12)],
        "parent.leaf2.leaf22": [("ask11", 5, 9), ("ask12", 4, 10), ("ask13", 4, 11)],
        "parent.leaf4": [("ask14", 5, 10)],
    }
    return [job(name, group, age, cpus=c) for group, jobs in sized.items() for name, age, c in jobs]


def test_yunikorn_parent_case_guaranteed_on_one_side():
    """TestQuotaChangeTryPreemptionForParentQueue, "Guaranteed set on one side of queue hierarchy":
    parent max and floor lowered to 10 over 140 in use. The same 11 victims as YuniKorn, 108 cpus."""
    result = enforce(yunikorn_tree({"cpus": 10}, parent_floor={"cpus": 10}), "parent", {"cpus": 10},
                     _parent_case_jobs())
    assert result.preemptable == {"cpus": 130}
    assert victims(result) == sorted(["ask1", "ask2", "ask4", "ask6", "ask7", "ask8", "ask9", "ask10", "ask11",
                                      "ask12", "ask13"])
    assert sum(v.resources["cpus"] for v in result.victims) == 108
    # leaf4 sits at its floor and is left out; leaf111's share of 28 is held to its own floor (20)
    targets = {s.group: s.target["cpus"] for s in result.shares}
    assert "parent.leaf4" not in targets and targets["parent.leaf1.leaf11.leaf111"] == 20


def test_yunikorn_parent_case_no_guaranteed_below_the_parent():
    """"Guaranteed not set on any queue": the split gives leaf111 27, leaf12 18, leaf211 46,
    leaf22 27, leaf4 9. Youngest first (ties by job id) releases 93 cpus; YuniKorn's code, which
    prefers smaller jobs among those started in the same hour, releases 85."""
    result = enforce(yunikorn_tree(None, parent_floor={"cpus": 10}), "parent", {"cpus": 10}, _parent_case_jobs())
    targets = {s.group.rsplit(".", 1)[1]: s.target["cpus"] for s in result.shares}
    assert targets == {"leaf111": 27, "leaf12": 18, "leaf211": 46, "leaf22": 27, "leaf4": 9}
    assert victims(result) == sorted(["ask2", "ask3", "ask5", "ask10", "ask7", "ask9", "ask6", "ask12", "ask13"])
    assert sum(v.resources["cpus"] for v in result.victims) == 93
    leaf4 = next(s for s in result.shares if s.group == "parent.leaf4")
    assert leaf4.reason == NO_VICTIM_FITS


def test_a_parent_groups_own_submitters_take_a_share_like_a_child():
    groups = tree(("a", None), ("a.b", None))
    jobs = [job("own", "a", cpus=4), job("child", "a.b", cpus=4)]
    usage, own = group_usage(groups, jobs)
    assert split(groups, "a", {"cpus": 4}, usage, own) == {"a": {"cpus": 2.0}, "a.b": {"cpus": 2.0}}


def test_group_usage_is_the_group_trees_roll_up_the_timers_measure_too():
    """A group's usage is its subtree's, ``<none>`` the pool's (GroupTree.roll_up's rule): the
    enforcement's figures from running jobs, the timers' from what each submitter holds, and the
    tree's own roll-up of customers' usage agree."""
    groups = GroupTree((GroupSettings("group_a", None, None, False, False, None),
                        GroupSettings("group_a.x", None, None, False, False, None),
                        GroupSettings("group_b", None, None, False, False, None)))
    running = [RunningJob("1", "group_a.x.alice@site", "group_a.x", {"cpus": 2.0, "gpus": 1.0}, 0, NOW, "s1"),
               RunningJob("2", "group_a.bob@site", "group_a", {"cpus": 3.0}, 0, NOW, "s2"),
               RunningJob("3", "carol@site", "<none>", {"cpus": 1.0}, 0, NOW, "s3")]
    usage, own = group_usage(groups, running)
    assert usage == {"group_a.x": {"cpus": 2.0, "gpus": 1.0}, "group_a": {"cpus": 5.0, "gpus": 1.0},
                     "<none>": {"cpus": 6.0, "gpus": 1.0}}
    assert own["group_a"] == {"cpus": 3.0}
    held = {job.submitter: dict(job.resources) for job in running}
    assert group_resources(groups, held) == usage
    cpus = groups.roll_up({job.submitter: job.resources["cpus"] for job in running})
    assert groups.subtree_totals({group: amounts["cpus"] for group, amounts in own.items()}) == {
        group: cpus[group] for group in usage}
