"""A cycle's result with the matches no schedd took taken back.

The cycle decides every match; only those handed to a schedd (or, with no schedd in the loop,
published) are real. A match its schedd never received (the schedd failed mid-session, or its slot
had no claim id left) is taken back whole: its cost leaves the submitter's and its groups' usage and
charges, its resources leave what the submitter holds, and it leaves the matches. HTCondor's
accountant charges a match only once ``matchmakingProtocol`` has sent it, likewise.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import replace

from negotiatord.cycle.claimed import match_resources
from negotiatord.cycle.result import CycleResult
from negotiatord.settings.groups import GroupTree


def only_accepted(result: CycleResult, refused: Collection[int], tree: GroupTree) -> CycleResult:
    """``result`` without the matches at the indices ``refused``."""
    if not refused:
        return result
    taken_back: dict[str, float] = {}
    held = {submitter: dict(resources) for submitter, resources in result.held.items()}
    for index in refused:
        match = result.matches[index]
        taken_back[match.submitter] = taken_back.get(match.submitter, 0.0) + match.cost
        if match.submitter in held:
            for resource, amount in match_resources(match).items():
                held[match.submitter][resource] = held[match.submitter].get(resource, 0.0) - amount
    rolled = tree.roll_up(taken_back)
    matches = tuple(match for index, match in enumerate(result.matches) if index not in refused)
    return replace(
        result,
        matches=matches,
        usage={customer: value - rolled.get(customer, 0.0) for customer, value in result.usage.items()},
        # a charge taken back to exactly nothing may come out a rounding error below it
        charges={customer: max(0.0, value - rolled.get(customer, 0.0)) for customer, value in result.charges.items()},
        held=held,
        stats=replace(result.stats, matches=len(matches)),
    )
