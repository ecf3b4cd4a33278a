"""The accountant's update after a negotiation cycle, the one step the daemon and a replay share.

HTCondor's negotiator updates priorities once per cycle (``Accountant::UpdatePriorities`` at the
start of ``negotiationTime``); negotiatord does it after the cycle, with the cycle's outcome, and
with the two states Kueue and YuniKorn keep beside priorities: admission fair sharing's decayed
usage per submitter (Kueue samples a LocalQueue's admitted resources) and the quota preemption
timers (YuniKorn's quota preemption delay). Whatever runs cycles, the daemon or a trace replay,
calls :func:`after_cycle`, so both leave the same state behind.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping

from negotiatord.accountant.admission import sample_admission_usage
from negotiatord.accountant.priorities import AccountantState, advance
from negotiatord.accountant.quota_timers import group_resources, updated_timers
from negotiatord.settings import Settings, SubmitterOrder


def after_cycle(state: AccountantState, now: float, usage: Mapping[str, float] | None,
                held: Mapping[str, Mapping[str, float]], settings: Settings,
                enforced: Collection[str] = ()) -> AccountantState:
    """The accountant state after a cycle at ``now``: decayed to ``now``, with ``usage`` (running
    work plus the cycle's matches, per customer and per group as the cycle rolled it up) in force
    from then (None: the usage in force stays); with admission fair sharing, each submitter's
    decayed usage sampled with ``held`` (what each submitter holds after the cycle, per
    lower-cased resource); with quota preemption, each group's timer started, kept or dropped by
    its usage now, and every timer dropped when it is switched off; the timers of the groups
    ``enforced`` (the cycle's quota enforcements) are marked enforced, so they are not enforced
    again."""
    advanced = advance(state, now, usage, settings.priority_halflife)
    if settings.submitter_order is SubmitterOrder.ADMISSION_FAIR_SHARING:
        advanced = sample_admission_usage(advanced, now, held, settings.admission_half_life_s)
    if not settings.quota_preemption:
        return advanced.with_quota_timers({}) if advanced.quota_timers else advanced
    tree = settings.group_tree
    return advanced.with_quota_timers(
        updated_timers(state.quota_timers, tree, group_resources(tree, held), now, enforced))
