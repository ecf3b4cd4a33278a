"""A small pool run cycle after cycle under the fair-sharing rule, for the no-loop properties.

Each cycle offers every idle job, oldest first: a slot with room takes it (if its group's
borrowing limits allow); otherwise :func:`choose_victims` may free one slot for it. Victims go
back to idle and ask again in later cycles. Arrivals and finishes happen between cycles; the
stretch of cycles between two such events is an *episode*, in which the job set is fixed, so
any preemption there is the rule reacting to itself.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from negotiatord.cycle.fair_sharing import GroupUsage, RunningJob, choose_victims, nominal_shares
from negotiatord.cycle.fair_sharing.shares import fits_borrowing_limits
from negotiatord.settings import GroupSettings
from negotiatord.settings.groups import GroupTree

STRATEGIES = ("LessThanOrEqualToFinalShare", "LessThanInitialShare")


@dataclass(frozen=True)
class Preemption:
    cycle: int
    episode: int
    preemptor: str
    victim: str
    preemptor_group: str
    victim_group: str
    strategy: str


@dataclass
class Simulation:
    groups: Sequence[GroupSettings]
    slots: Mapping[str, Mapping[str, float]]
    strategies: Sequence[str] = STRATEGIES
    jobs: dict[str, tuple[str, dict[str, float]]] = field(default_factory=dict)   # id -> group, request
    idle: list[str] = field(default_factory=list)
    running: dict[str, RunningJob] = field(default_factory=dict)
    preemptions: list[Preemption] = field(default_factory=list)
    cycle: int = 0
    episode: int = 0

    def __post_init__(self) -> None:
        self.tree = GroupTree(self.groups)
        capacity: dict[str, float] = {}
        for sizes in self.slots.values():
            for r, amount in sizes.items():
                capacity[r] = capacity.get(r, 0.0) + amount
        self.usage = GroupUsage(self.tree, nominal_shares(self.tree, capacity, {}))
        self.free = {slot: dict(sizes) for slot, sizes in self.slots.items()}

    def submit(self, job_id: str, group: str, request: Mapping[str, float]) -> None:
        self.jobs[job_id] = (group, dict(request))
        self.idle.append(job_id)
        self.episode += 1

    def finish(self, job_id: str) -> None:
        job = self.running.pop(job_id)
        self._release(job)
        self.episode += 1

    def _release(self, job: RunningJob) -> None:
        self.usage.remove(job.group, job.resources)
        for r, amount in job.resources.items():
            self.free[job.slot][r] += amount

    def _start(self, job_id: str, slot: str, tick: float) -> None:
        group, request = self.jobs[job_id]
        job = RunningJob(job_id, f"{group}.u@site", group, request, 0, tick, slot)
        self.usage.admit(group, request)
        for r, amount in request.items():
            self.free[slot][r] -= amount
        self.running[job_id] = job

    def run_cycle(self) -> int:
        """One negotiation cycle; the number of preemptions it made.

        Free room is offered to every idle job before any claimed slot is (HTCondor's default
        ``NEGOTIATOR_PRE_JOB_RANK`` ranks unclaimed slots above claimed ones); then the jobs
        still idle may preempt, taking free room first where a preemption left some."""
        self.cycle += 1
        made = 0
        for preempting in (False, True):
            for order, job_id in enumerate(sorted(self.idle, key=_arrival)):
                made += self._offer(job_id, self.cycle + order / 1000.0, preempting)
        return made

    def _offer(self, job_id: str, tick: float, preempting: bool) -> int:
        """Start ``job_id`` in free room, or (``preempting``) by preemption; the victims' count."""
        group, request = self.jobs[job_id]
        slot = self._room_for(group, request)
        if slot is not None:
            self._start(job_id, slot, tick)
            self.idle.remove(job_id)
            return 0
        if not preempting:
            return 0
        found = choose_victims(self.usage, group, request, self.free, self.running.values(), self.strategies)
        if found is None:
            return 0
        for victim in found.victims:
            self._release(self.running.pop(victim.job.job_id))
            self.idle.append(victim.job.job_id)
            self.preemptions.append(Preemption(self.cycle, self.episode, job_id, victim.job.job_id,
                                               group, victim.job.group, victim.strategy))
        self._start(job_id, found.slot, tick)
        self.idle.remove(job_id)
        return len(found.victims)

    def _room_for(self, group: str, request: Mapping[str, float]) -> str | None:
        for slot in sorted(self.free):
            if all(self.free[slot].get(r, 0.0) >= amount - 1e-9 for r, amount in request.items()):
                self.usage.admit(group, request)
                allowed = fits_borrowing_limits(self.usage.leaf(group))
                self.usage.remove(group, request)
                return slot if allowed else None
        return None

    def settle(self, max_cycles: int) -> int | None:
        """Cycles until one makes no preemption and starts nothing (a fixed point), or None if
        ``max_cycles`` pass first."""
        for done in range(1, max_cycles + 1):
            before = (dict(self.running), list(self.idle))
            made = self.run_cycle()
            if made == 0 and before == (self.running, self.idle):
                return done
        return None

    def allocation(self) -> dict[str, str]:
        return {job_id: job.slot for job_id, job in self.running.items()}


def _arrival(job_id: str) -> int:
    return int(job_id.lstrip("j"))
