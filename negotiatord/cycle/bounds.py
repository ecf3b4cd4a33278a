"""Submitter floors and ceilings (``condor_userprio -setfloor`` / ``-setceiling``), as
``matchmaker.cpp`` applies them (``src/condor_negotiator.V6/matchmaker.cpp``).

**Ceiling.** A submitter never holds more weighted resources than its ceiling: what it may still
take is its ceiling less what it holds now, running work and this cycle's matches (``negotiateWithGroup``
computes ``submitterCeiling`` less ``GetWeightedResourcesUsed``, which each match raises;
``negotiate()`` stops once what it matched reaches it), whatever else would let it take more: its
share of the pie, a remainder round, a startd's RANK preemption. HTCondor checks the ceiling
before each match, so a last match may cross it by part of a slot's weight; here, as with the
submitter limit, a match must fit under it.

**Floor.** Before a group's pie spins, the submitters that hold less than their floor get a
floor round of their own (``findBelowFloorSubmitters``, then ``negotiateWithGroup`` with
``isFloorRound``: one spin, in priority order, over those submitters only), each limited to its
share of the group's allocation among them and to its floor (``calculateSubmitterLimit``). The
manual says the round "attempts to allocate up to the defined number of cores for their floor
level": here a submitter is brought up to its floor, what it still lacks of it; HTCondor's code
caps the round's limit at the floor itself, on top of what the submitter already holds.
"""

from __future__ import annotations

import math

from negotiatord.accountant import AccountantState

CEILING = "submitter ceiling reached"


def ceiling_left(accountant: AccountantState, submitter: str, held: float) -> float:
    """What ``submitter``, holding ``held``, may still take under its ceiling (inf: none)."""
    ceiling = accountant.record(submitter).ceiling
    return math.inf if ceiling is None else max(0.0, ceiling - held)


def floor_left(accountant: AccountantState, submitter: str, held: float) -> float:
    """What ``submitter``, holding ``held``, lacks of its floor (0: none, or reached)."""
    floor = accountant.record(submitter).floor
    return 0.0 if floor is None else max(0.0, floor - held)
