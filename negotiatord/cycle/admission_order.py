"""Admission fair sharing within a group: who gets the next match, and what each submitter holds.

As Kueue admits the head of the LocalQueue with the lowest admission fair sharing usage and then
charges it an entry penalty, a group's submitters here take turns one match at a time: the one
with the lowest score (:func:`negotiatord.accountant.admission.score`) is offered the next match,
and the match raises its score by α(NEGOTIATOR_INTERVAL)·weighted resources, so a burst of matches
in one cycle counts before the accountant's next sample folds it into the decayed usage.
"""

from __future__ import annotations

import heapq
import math
from collections import defaultdict
from collections.abc import Iterable, Mapping

from negotiatord.accountant import AccountantState
from negotiatord.accountant.admission import AdmissionUsage, decay_rate, score, weighted
from negotiatord.cycle.claimed import match_resources, slot_resources
from negotiatord.cycle.requests import Submitter
from negotiatord.cycle.result import Match, Preemption
from negotiatord.pool.slots import Slot
from negotiatord.settings import Settings


class AdmissionQueue:
    """A group's submitters by admission score, lowest first; ties by name (Kueue breaks ties by
    the workloads' creation time, which a submitter does not have)."""

    def __init__(self, members: Iterable[Submitter], accountant: AccountantState, settings: Settings,
                 penalties: dict[str, float], now: float | None = None,
                 held: Mapping[str, Mapping[str, float]] | None = None) -> None:
        """``penalties`` holds the entry penalties charged so far this cycle, by submitter; it is
        the cycle's, so that later allocation rounds still count earlier rounds' matches.

        ``held`` is what each submitter holds as the cycle starts, at ``now``: each submitter's
        stored usage is sampled with it first, as Kueue's LocalQueue reconciler samples a queue's
        admitted usage before the scheduler orders queues by it, and as HTCondor's accountant
        updates priorities at the start of a cycle (``UpdatePriorities``). A cycle that runs on its
        own (a dry run) so orders submitters by what they hold, not by a history sampled earlier;
        a half-life of 0 orders them by what they hold now."""
        self._weights = settings.admission_resource_weights
        # Kueue's CalculateEntryPenalty: α over one sampling interval, here one negotiation cycle.
        self._penalty_rate = decay_rate(settings.negotiator_interval, settings.admission_half_life_s)
        self._factor: dict[str, float] = {}
        self._usage: dict[str, float] = {}
        self._penalty = penalties
        self._heap: list[tuple[float, str, Submitter]] = []
        half_life = settings.admission_half_life_s
        for submitter in members:
            history = accountant.admission_usage(submitter.name)
            if now is not None and held is not None:
                history = (history or AdmissionUsage()).sampled(now, held.get(submitter.name, {}), half_life)
            self._usage[submitter.name] = weighted(history.resources, self._weights) if history else 0.0
            self._factor[submitter.name] = accountant.priority_factor(submitter.name, submitter.group, settings)
            self._push(submitter)

    def score_of(self, name: str) -> float:
        return score(self._usage[name], self._penalty.get(name, 0.0), self._factor[name])

    def _push(self, submitter: Submitter) -> None:
        heapq.heappush(self._heap, (self.score_of(submitter.name), submitter.name, submitter))

    def pop(self) -> Submitter | None:
        """The submitter with the lowest score, taken out of the queue; None when it is empty."""
        return heapq.heappop(self._heap)[2] if self._heap else None

    def admitted(self, submitter: Submitter, match: Match) -> None:
        """Charge ``match``'s entry penalty to ``submitter`` and put it back in the queue."""
        penalty = self._penalty_rate * weighted(match_resources(match), self._weights)
        self._penalty[submitter.name] = self._penalty.get(submitter.name, 0.0) + penalty
        self._push(submitter)


def held_resources(slots: Iterable[Slot], weights: Iterable[float], matches: Iterable[Match],
                   preemptions: Iterable[Preemption]) -> dict[str, dict[str, float]]:
    """Per submitter, the resources it holds after the cycle (lower-cased resource -> amount; slot
    weight as :data:`WEIGHT_UNIT`): its claimed slots' and this cycle's matches'. This is the
    ``current`` the accountant folds into the decayed usage and measures quota timers by.

    A claimed slot the cycle preempted (for a job that takes it, or to enforce a quota) no longer
    counts for its victim: the slot is the preemptor's match, or nobody's, as the cycle's usage
    moves it (a slot is held once, as YuniKorn's quota preemptor subtracts the resources it is
    already preempting from a queue's usage)."""
    preempted = {preemption.slot for preemption in preemptions}
    held: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for slot, weight in zip(slots, weights):
        if slot.claim is None or math.isnan(weight) or slot.name in preempted:   # NaN: a slot weight
            continue                                                             # that did not evaluate
        mine = held[slot.claim.customer]
        for resource, amount in slot_resources(slot, weight).items():
            mine[resource] += amount
    for match in matches:
        mine = held[match.submitter]
        for resource, amount in match_resources(match).items():
            mine[resource] += amount
    return {name: dict(resources) for name, resources in held.items()}
