"""Admission fair sharing: each submitter's decayed multi-resource usage, as Kueue keeps it per
LocalQueue (KEP-4136, ``pkg/util/admissionfairsharing``).

Kueue samples a queue's admitted resources at intervals and folds each sample into an exponential
moving average: with α = 1 − 0.5^(Δt / half-life), usage ← (1 − α)·usage + α·current, per
resource. Queues are then admitted in order of Σ_r weight_r · (usage_r + penalty_r) / queue
weight, where the *entry penalty* α(sampling interval)·request is charged at admission, so a
burst admitted before the next sample already counts. Here a submitter plays the LocalQueue, the
accountant's update after each cycle is the sample, and the priority factor is the queue weight
inverted (HTCondor's factor multiplies a priority where Kueue's weight divides a usage).

Everything here is pure, like :mod:`negotiatord.accountant.priorities`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from types import MappingProxyType
from collections.abc import Mapping

from negotiatord.accountant.records import check_finite, check_non_negative
from negotiatord.accountant.priorities import AccountantState


def decay_rate(elapsed: float, half_life: float) -> float:
    """α = 1 − 0.5^(elapsed / half-life): the weight of the newest sample.

    Kueue's calculateAlphaRate returns 0 for a half-life of 0, and its LocalQueue reconciler then
    empties the history, so admission fair sharing does nothing. Here a half-life of 0 is taken as
    the formula's limit instead: α = 1, no memory, so submitters are ordered by what they hold now
    and what they were admitted this cycle.
    """
    elapsed = check_non_negative("elapsed time", elapsed)
    half_life = check_non_negative("admission fair sharing half-life", half_life)
    if half_life == 0:
        return 1.0
    return 1.0 - 0.5 ** (elapsed / half_life)


@dataclass(frozen=True)
class AdmissionUsage:
    """One submitter's decayed usage per lower-cased resource, and when it was last sampled."""

    resources: Mapping[str, float] = field(default_factory=dict)
    last_update_time: float | None = None

    def __post_init__(self) -> None:
        for resource, amount in self.resources.items():
            check_non_negative(f"admission usage of {resource!r}", amount)
        if self.last_update_time is not None:
            check_finite("admission usage update time", self.last_update_time)
        object.__setattr__(self, "resources", MappingProxyType(dict(self.resources)))

    def sampled(self, now: float, current: Mapping[str, float], half_life: float) -> AdmissionUsage:
        """This usage at ``now`` with ``current`` (the resources held now) folded in.

        A first sample is ``current`` itself, as in Kueue, whose first reconcile decays from the
        zero time, so long ago that α is 1. A clock stepped back folds nothing in (Kueue clamps
        the elapsed time at 0) and keeps the later time."""
        last = self.last_update_time
        elapsed = max(0.0, now - last) if last is not None else math.inf
        alpha = 1.0 if elapsed == math.inf else decay_rate(elapsed, half_life)
        names = set(self.resources) | set(current)
        folded = {
            name: (1.0 - alpha) * self.resources.get(name, 0.0) + alpha * current.get(name, 0.0)
            for name in sorted(names)
        }
        return AdmissionUsage(
            {name: amount for name, amount in folded.items() if amount > 0},
            now if last is None else max(now, last),
        )


def sample_admission_usage(
    state: AccountantState, now: float, current: Mapping[str, Mapping[str, float]], half_life: float
) -> AccountantState:
    """``state`` with every submitter's admission usage sampled at ``now``: ``current`` maps each
    submitter holding resources to them; a known submitter left out holds nothing now."""
    now = check_finite("now", now)
    names = set(state.admission_usages) | set(current)
    return state.with_admission_usage({
        name: (state.admission_usage(name) or AdmissionUsage()).sampled(now, current.get(name, {}), half_life)
        for name in sorted(names)
    })


def weighted(resources: Mapping[str, float], weights: Mapping[str, float]) -> float:
    """Σ weight_r · amount_r over the resources ``weights`` names (lower-cased).

    Kueue weighs a resource its weights leave out at 1; in a condor pool that would add Memory in
    MiB to Cpus, so here only the resources named count."""
    return sum(weight * resources.get(resource, 0.0) for resource, weight in weights.items())


def score(usage: float, penalty: float, factor: float) -> float:
    """A submitter's place in admission order, lowest first: (usage + penalty) × priority factor
    (Kueue's CalculateUsage divides by the queue's weight; a larger factor is a smaller weight)."""
    return (usage + penalty) * factor
