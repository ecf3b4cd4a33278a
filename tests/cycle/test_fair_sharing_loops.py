"""No preemption loops under fair sharing: random group trees, repeated cycles.

Kueue proves (``site/content/en/docs/concepts/fair_sharing.md``, "Proof that two workloads
won't preempt each other") that with a flat cohort a workload never preempts one that
preempted it; it leaves hierarchies open. These properties check the rule here on random
trees of depth 1 to 4, with random quotas, weights and workloads, jobs arriving and finishing:

- within an episode (no arrival or finish in between), no job is preempted by a job that it,
  or a job of its group, reached earlier through a chain of preemptions, everything else fixed
  (no other preemption touching the chain's groups in between), as Kueue's proof states it;
- every episode settles: within a bounded number of cycles a cycle preempts nothing and starts
  nothing, and the next cycle leaves the allocation as it is.

Hypothesis runs derandomized, so CI sees the same examples every time; ``FAIR_SHARING_EXPLORE=N``
explores N fresh examples of each property instead.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings as hsettings, strategies as st, target

from negotiatord.settings import GroupSettings
from tests.fair_sharing_pools import fair_group
from negotiatord.cycle.fair_sharing import choose_victims
from tests.fair_sharing_simulation import STRATEGIES, Preemption, Simulation

MAX_CYCLES = 40


@st.composite
def group_trees(draw: st.DrawFn, resources: tuple[str, ...] = ("cpus",)) -> list[GroupSettings]:
    depth = draw(st.integers(1, 4))
    groups: list[GroupSettings] = []

    def add(parent: str, level: int) -> None:
        for index in range(draw(st.integers(1 if level == 1 else 0, 3 if level == 1 else 2))):
            name = f"{parent}.g{index}" if parent else f"g{index}"
            quota = {r: float(draw(st.integers(0, 4))) for r in resources}
            groups.append(fair_group(name, weight=draw(st.sampled_from([0.0, 0.5, 1.0, 1.0, 2.0])), **quota))
            if level < depth:
                add(name, level + 1)

    add("", 1)
    return groups


@st.composite
def workloads(draw: st.DrawFn, resources: tuple[str, ...] = ("cpus",)) -> tuple:
    groups = draw(group_trees(resources))
    slots = {f"slot{i}@node": {r: float(draw(st.integers(2, 4))) for r in resources}
             for i in range(draw(st.integers(1, 2)))}
    names = [g.name for g in groups] + ["<none>"]
    arrival = st.tuples(st.just("arrive"), st.sampled_from(names),
                        st.fixed_dictionaries({r: st.sampled_from([1.0, 1.0, 2.0]) for r in resources}))
    finish = st.tuples(st.just("finish"), st.integers(0, 50), st.just({}))
    # three arrivals to a finish on average, so the pool fills up and groups contend
    events = draw(st.lists(st.one_of(arrival, arrival, arrival, finish), min_size=2, max_size=16))
    return groups, slots, events


def play(groups: list[GroupSettings], slots: dict, events: list) -> Simulation:
    """Run the events, settling the pool after each; fail on an episode that does not settle."""
    sim = Simulation(groups, slots)
    for kind, what, request in events:
        if kind == "arrive":
            sim.submit(f"j{len(sim.jobs)}", what, request)
        elif sim.running:
            sim.finish(sorted(sim.running)[what % len(sim.running)])
        settled = sim.settle(MAX_CYCLES)
        assert settled is not None, f"no fixed point after {MAX_CYCLES} cycles: {sim.preemptions[-12:]}"
        allocation = sim.allocation()
        assert sim.run_cycle() == 0 and sim.allocation() == allocation
    return sim


def chain_violations(preemptions: list[Preemption], group_of: dict[str, str]) -> list[Preemption]:
    """Preemptions of a job J by a job K that J, or another job of J's group, had reached
    through earlier preemptions in the same episode, everything else fixed, as Kueue's proof
    has it ("two workloads won't preempt each other"): a chain stops counting once a preemption
    outside it, between its first link and the later preemption, takes a job of one of the
    chain's groups or gives one of them a slot, since their shares then moved for a reason of
    their own."""
    bad = []
    for index, later in enumerate(preemptions):
        earlier = [(at, p) for at, p in enumerate(preemptions[:index]) if p.episode == later.episode]
        victim_group = group_of[later.victim]
        starts = {later.victim} | {j for j, g in group_of.items() if g == victim_group}
        if any(_undisturbed(links, earlier, later, group_of) for links in _chains(earlier, starts, later.preemptor)):
            bad.append(later)
    return bad


def _chains(earlier: list[tuple[int, Preemption]], starts: set[str], goal: str) -> Iterator[list[int]]:
    """Each simple chain of preemptions from a job of ``starts`` to ``goal``, as the indices of
    its links (a link goes from the preemptor to its victim)."""
    def walk(here: str, seen: set[str], links: list[int]) -> Iterator[list[int]]:
        for at, p in earlier:
            if p.preemptor == here and p.victim not in seen:
                if p.victim == goal:
                    yield [*links, at]
                else:
                    yield from walk(p.victim, seen | {p.victim}, [*links, at])
    for start in sorted(starts):
        yield from walk(start, {start}, [])


def _undisturbed(links: list[int], earlier: list[tuple[int, Preemption]], later: Preemption,
                 group_of: dict[str, str]) -> bool:
    chain = {job for at, p in earlier if at in links for job in (p.preemptor, p.victim)}
    groups = {group_of[job] for job in chain | {later.preemptor, later.victim}}
    return not any(at >= min(links) and at not in links and {p.preemptor_group, p.victim_group} & groups
                   for at, p in earlier)


def check(groups: list[GroupSettings], slots: dict, events: list) -> None:
    sim = play(groups, slots, events)
    target(float(len(sim.preemptions)), label="preemptions")     # steer towards contended pools
    group_of = {job_id: group for job_id, (group, _) in sim.jobs.items()}
    assert chain_violations(sim.preemptions, group_of) == []


# CI runs 150 fixed examples of each property; FAIR_SHARING_EXPLORE=N explores N fresh ones
# (docs/fair-sharing.md gives what such runs found)
_EXPLORE = int(os.environ.get("FAIR_SHARING_EXPLORE") or 0)
_EXAMPLES = hsettings(max_examples=_EXPLORE or 150, derandomize=not _EXPLORE, deadline=None,
                      suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@_EXAMPLES
@given(workloads())
def test_one_resource_never_loops(case: tuple) -> None:
    check(*case)


@_EXAMPLES
@given(workloads(("cpus", "memory")))
def test_two_resources_never_loop(case: tuple) -> None:
    check(*case)


def test_a_small_job_preempting_a_large_one_would_loop() -> None:
    """The smallest loop hypothesis found with Kueue's rules, flat and with one resource. One
    slot of 3 cpus; g0 (weight 1) and g1 (weight 0.5) have no nominal share.

    j0 (g0, 3 cpus) runs; j1 (g1, 1 cpu) would have g1 at 1/3 of the pool over weight 0.5 = 667
    per mille, below g0's 1000, so Kueue lets it preempt j0 (LessThanInitialShare). The 2 cpus
    left over go to j2 (g1, 2 cpus), which puts g1 at 2000, above g0's 1000 with j0: j0 preempts
    j1 and j2, and round it goes. Here a preemption may not free more than the preemptor takes,
    so j1 and j2 wait and the pool stays as it is."""
    groups = [fair_group("g0", 0), fair_group("g1", 0, weight=0.5)]
    sim = Simulation(groups, {"slot0@node": {"cpus": 3.0}})
    sim.submit("j0", "g0", {"cpus": 3.0})
    sim.settle(MAX_CYCLES)
    sim.usage.admit("g1", {"cpus": 1.0})
    assert sim.usage.share("g1").per_mille < sim.usage.share("g0").per_mille     # Kueue's S2-b holds
    sim.usage.remove("g1", {"cpus": 1.0})
    sim.submit("j1", "g1", {"cpus": 1.0})
    sim.submit("j2", "g1", {"cpus": 2.0})
    assert sim.settle(MAX_CYCLES) == 1
    assert sim.preemptions == [] and set(sim.running) == {"j0"}


def test_reclaim_on_one_resource_while_borrowing_another_would_loop() -> None:
    """A loop hypothesis found with Kueue's nominal-first reclaim, which looks only at the
    contested resources. One slot of 2 cpus and 2 memory; g0 (weight 0.5) has a nominal share
    of 0 cpus and 1 memory, ungrouped users the rest (2 cpus, 1 memory).

    j0 and j1 (g0, 1 cpu + 1 memory each) run; j2 (ungrouped, 1 cpu + 2 memory) preempts both
    (g0 borrows all the cpus). Then j0 asks again: the slot lacks memory only, and g0 would be
    within its memory share, so Kueue reclaims j2; j1 starts beside j0, and j2 preempts both
    again, for ever. Here j2 may not preempt both (they hold 2 cpus, it takes 1), and j0 would
    not reclaim j2 either: that would raise g0's cpu share (1000) above the highest share it
    lowers (the ungrouped users' memory, 500)."""
    groups = [fair_group("g0", 0, weight=0.5, memory=1)]
    slots = {"slot0@node": {"cpus": 2.0, "memory": 2.0}}
    sim = Simulation(groups, slots)
    sim.submit("j0", "g0", {"cpus": 1.0, "memory": 1.0})
    sim.submit("j1", "g0", {"cpus": 1.0, "memory": 1.0})
    assert sim.settle(MAX_CYCLES) == 2 and set(sim.running) == {"j0", "j1"}
    sim.submit("j2", "<none>", {"cpus": 1.0, "memory": 2.0})
    assert sim.settle(MAX_CYCLES) == 1
    assert sim.preemptions == [] and set(sim.running) == {"j0", "j1"}
    # The other way round: j2 running, j0 asking. Nothing is preempted either.
    other = Simulation(groups, slots)
    other.submit("j2", "<none>", {"cpus": 1.0, "memory": 2.0})
    other.settle(MAX_CYCLES)
    other.submit("j0", "g0", {"cpus": 1.0, "memory": 1.0})
    found = choose_victims(other.usage, "g0", {"cpus": 1.0, "memory": 1.0}, other.free,
                           list(other.running.values()), STRATEGIES)
    assert found is None


def test_preemption_inside_a_group_may_not_raise_the_group_above_its_siblings() -> None:
    """A hierarchical loop hypothesis found with Kueue's rules, which compare shares only at
    the two children of the lowest common ancestor. One slot of 2 cpus and 3 memory; g0
    (weight 0.5) has no nominal share; g1 (weight 0) has 1 cpu and 1 memory, all of it for its
    own submitters but the 1 memory of its child g1.g0 (weight 0.5).

    With j0 (g0) and j2 (g1) running, Kueue lets j3 (g1.g0, 1 cpu + 2 memory) preempt j2: inside
    g1, g1's own submitters borrow on a weight of 0. But j3 is larger than j2, so g1 as a whole
    starts borrowing, on a weight of 0: j1 (g0) then preempts j3 from the root's point of view,
    and j2, which fits g1's share again, preempts j1; j3 preempts j2 again, and so on. Here a
    preemption may not raise a share from the lowest common ancestor up (nor free less than
    it takes), so j3 waits."""
    groups = [fair_group("g0", 0, weight=0.5, memory=0), fair_group("g1", 1, weight=0, memory=1),
              fair_group("g1.g0", 0, weight=0.5, memory=1)]
    sim = Simulation(groups, {"slot0@node": {"cpus": 2.0, "memory": 3.0}})
    for job_id, group, memory in (("j0", "g0", 1.0), ("j2", "g1", 1.0)):
        sim.submit(job_id, group, {"cpus": 1.0, "memory": memory})
    sim.settle(MAX_CYCLES)
    sim.submit("j3", "g1.g0", {"cpus": 1.0, "memory": 2.0})
    sim.submit("j1", "g0", {"cpus": 1.0, "memory": 1.0})
    assert sim.settle(MAX_CYCLES) is not None
    assert sim.preemptions == []
    assert set(sim.running) == {"j0", "j2"}


def test_free_room_goes_out_before_anyone_preempts() -> None:
    """Found by hypothesis when the simulated cycle let each job, in turn, take free room or
    preempt. One slot of 5 cpus; g0 (weight 0) has a nominal share of 4, its child g0.g0 none;
    ungrouped users have the 5th cpu. j1, j2 (g0, 1 cpu each) and j4 (ungrouped, 2 cpus) run, 1
    cpu is free; j3 (g0.g0, 2 cpus) and j5 (g0, 1 cpu) wait.

    Asked first, j3 may preempt j4: g0 would hold exactly its share. But j5 then takes the free
    cpu, g0 borrows on a weight of 0, and j4 preempts j3 back: a job preempted by the job it
    preempted, within a few cycles and with no job arriving or leaving. Offering free room to
    every job before any preemption (as HTCondor's default NEGOTIATOR_PRE_JOB_RANK prefers
    unclaimed slots) gives the cpu to j5 first, and then j3 has no claim: nothing is preempted.
    The cycle must therefore match free slots before it looks at claimed ones."""
    groups = [fair_group("g0", 4, weight=0), fair_group("g0.g0", 0, weight=0)]
    sim = Simulation(groups, {"slot0@node": {"cpus": 5.0}})
    for job_id, group, cpus in (("j1", "g0", 1.0), ("j2", "g0", 1.0), ("j4", "<none>", 2.0)):
        sim.submit(job_id, group, {"cpus": cpus})
    sim.settle(MAX_CYCLES)
    # One job at a time, j3 first:
    first = choose_victims(sim.usage, "g0.g0", {"cpus": 2.0}, sim.free, list(sim.running.values()), STRATEGIES)
    assert first is not None and [v.job.job_id for v in first.victims] == ["j4"]
    after = Simulation(groups, {"slot0@node": {"cpus": 5.0}})        # j3 in, j4 out, j5 in the free cpu
    for job_id, group, cpus in (("j1", "g0", 1.0), ("j2", "g0", 1.0), ("j3", "g0.g0", 2.0), ("j5", "g0", 1.0)):
        after.submit(job_id, group, {"cpus": cpus})
    after.settle(MAX_CYCLES)
    back = choose_victims(after.usage, "<none>", {"cpus": 2.0}, after.free, list(after.running.values()), STRATEGIES)
    assert back is not None and [v.job.job_id for v in back.victims] == ["j3"]
    # Free room first: j5 takes the cpu, and j3 has no claim on j4's.
    sim.submit("j3", "g0.g0", {"cpus": 2.0})
    sim.submit("j5", "g0", {"cpus": 1.0})
    assert sim.settle(MAX_CYCLES) == 2
    assert sim.preemptions == [] and set(sim.running) == {"j1", "j2", "j4", "j5"}


def test_a_job_takes_its_slot_back_once_a_third_preemption_lowered_its_groups_share() -> None:
    """Found by hypothesis (two resources, hierarchical, weights 0). In one episode j10 (g0.g0)
    preempts j3 (g0's own submitters), j11 (<none>) preempts j2 (g0's own submitters), and then
    j3 preempts j10: a pair preempting each other, but not with everything else fixed, which is
    all Kueue's proof promises. j2's preemption left g0's own submitters nothing, so j3's return
    lowers the highest share among g0's children (g0.g0's memory, 333 per mille, against 200 for
    g0's own cpus after), as each of the three preemptions lowered the share it was judged by:
    the episode settles (``play``)."""
    groups = [fair_group("g0", 2, weight=0.0, memory=2), fair_group("g0.g0", 0, weight=0.0, memory=0),
              fair_group("g0.g1", 2, weight=0.0, memory=1), fair_group("g1", 1, weight=0.0, memory=4)]
    slots = {"slot0@node": {"cpus": 2.0, "memory": 2.0}, "slot1@node": {"cpus": 3.0, "memory": 4.0}}
    one, two = {"cpus": 1.0, "memory": 1.0}, {"cpus": 1.0, "memory": 2.0}
    events = [("arrive", "g0", one), ("arrive", "g0.g1", one), ("arrive", "g0", one), ("arrive", "g0", two),
              ("arrive", "g0", one), ("arrive", "g0.g0", one), ("finish", 0, {}), ("arrive", "g0", one),
              ("arrive", "g0", one), ("arrive", "g1", one), ("arrive", "g1", one), ("arrive", "g0.g0", two),
              ("arrive", "<none>", one), ("finish", 48, {})]
    sim = play(groups, slots, events)
    pairs = [(p.preemptor, p.victim) for p in sim.preemptions if p.episode == sim.preemptions[-1].episode]
    assert pairs[-3:] == [("j10", "j3"), ("j11", "j2"), ("j3", "j10")]
    group_of = {job_id: group for job_id, (group, _) in sim.jobs.items()}
    assert chain_violations(sim.preemptions, group_of) == []
    # without j11's preemption in between, the same pair would be a chain
    alone = [p for p in sim.preemptions if p.preemptor != "j11"]
    assert [(p.preemptor, p.victim) for p in chain_violations(alone, group_of)] == [("j3", "j10")]


def test_a_reclaim_may_not_free_more_than_it_takes_or_the_room_left_over_makes_a_chain() -> None:
    """Found by hypothesis (one resource, hierarchical) while reclaims within the nominal share
    could take larger victims, as Kueue's can. j3 (g1, 2 cpus) preempted j6 and j2; j4 (g0,
    nominal share 1, holding nothing) reclaimed j3's 2 cpus for its 1; j5 (g0) took the cpu left
    over, so g0 borrowed; and j2 (``<none>``) preempted j5, of the group of j4, which had
    reached j2 through j3. With the first no-loop condition for reclaims too, j4 does not take
    j3's slot: it waits for a job of its size, or for j3 to end."""
    groups = [fair_group("g0", 1, weight=0.0), fair_group("g1", 1, weight=2.0), fair_group("g1.g0", 0, weight=0.0),
              fair_group("g1.g1", 0, weight=0.0)]
    one, two = {"cpus": 1.0}, {"cpus": 2.0}
    events = [("arrive", "g0", one), ("arrive", "g0", one), ("arrive", "<none>", one), ("finish", 0, {}),
              ("arrive", "g1", two), ("arrive", "g0", one), ("arrive", "g0", one), ("arrive", "g1.g0", one),
              ("finish", 0, {})]
    sim = play(groups, {"slot0@node": {"cpus": 2.0}}, events)
    group_of = {job_id: group for job_id, (group, _) in sim.jobs.items()}
    assert chain_violations(sim.preemptions, group_of) == []
    assert [(p.preemptor, p.victim) for p in sim.preemptions if p.victim == "j3"] == []
    assert set(sim.running) == {"j3"}


@pytest.mark.xfail(strict=True, reason="a chain the rule allows, found exploring 30,000 fresh examples; open")
def test_a_job_preempted_by_a_subtree_preemptor_takes_a_slot_from_its_preemptors_preemptors_group() -> None:
    """Found by hypothesis (one resource, hierarchical, weights 0 and 0.5) under the final rule.
    In one episode j7 (g0's own submitters, 2 cpus) preempts j4 and j0 (g0.g0) inside g0; j6 (g1,
    2 cpus) preempts j7; and j0 then preempts j5, of j6's group g1. Each preemption lowers the
    share it is judged by and the episode settles; but j0 takes a slot from the group of the job
    that reached it through j7, which no-chain forbids. Kueue's proof (one pair, everything else
    fixed, a flat cohort) does not cover it."""
    groups = [fair_group("g0", 3, weight=0.0), fair_group("g0.g0", 0, weight=0.0), fair_group("g0.g1", 0, weight=0.0),
              fair_group("g1", 3, weight=0.5), fair_group("g1.g0", 0, weight=0.0), fair_group("g1.g1", 0, weight=0.0)]
    one, two = {"cpus": 1.0}, {"cpus": 2.0}
    events = [("arrive", "g0.g0", one), ("arrive", "g1", one), ("arrive", "g0", one), ("arrive", "g0", one),
              ("arrive", "g0.g0", one), ("arrive", "g1", one), ("arrive", "g1", two), ("finish", 17, {}),
              ("arrive", "g0", two)]
    sim = play(groups, {"slot0@node": {"cpus": 3.0}, "slot1@node": {"cpus": 2.0}}, events)
    group_of = {job_id: group for job_id, (group, _) in sim.jobs.items()}
    assert chain_violations(sim.preemptions, group_of) == []

