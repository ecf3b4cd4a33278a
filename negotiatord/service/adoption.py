"""A daemon that HTCondor's high availability starts on another central manager takes over the
replica the leader before it left (:mod:`.replica`), before its state is checked and used.

``condor_had`` has the master start the NEGOTIATOR once this central manager's HAD is the leader
(``HADStateMachine::step`` sends the master ``CHILD_ON``); by then ``condor_replication`` has
copied here the last replica the previous leader wrote. The daemon adopts it when it is newer than
its own state: when its last cycle was committed later than this accountant's last one (the central
managers' clocks agree, as HTCondor's high availability asks). An older replica, or the daemon's
own, is left with a log line, and the daemon goes on with its own state.

Adopting is a step of its own, which the start-up checks (:mod:`.state_check`) then verify like any
other start: the accountant becomes the replica's, the match log takes in the replica's rows that
hold jobs and slots, and cycle ids and sequence numbers go on after the highest either side ever
gave here, so none this daemon gave is given again. What the previous leader did after its last
replica (cycles, charges, matches) is not known here: that is what a failover loses.
"""

from __future__ import annotations

from dataclasses import dataclass

from negotiatord.accountant import AccountantStore
from negotiatord.publish.matchlog import MatchLog
from negotiatord.service.replica import FOREIGN_TABLES, MATCHES, Replica


@dataclass(frozen=True)
class Adoption:
    """What start-up did with a replica, for the log: ``adopted``, and the figures of both sides."""

    adopted: bool
    reason: str
    replica_cycle: int
    replica_cycle_time: float | None
    local_cycle: int
    local_cycle_time: float | None
    next_cycle: int = 0
    matches_taken: int = 0
    unpublished_dropped: int = 0

    def fields(self) -> dict[str, object]:
        return {key: value for key, value in self.__dict__.items() if key not in ("adopted", "reason")}


def adopt_replica(replica: Replica, accountant: AccountantStore, matchlog: MatchLog, now: float) -> Adoption:
    """Make ``replica`` this daemon's state if it is newer than it; say what was done."""
    local_time = accountant.last_cycle_time()
    local_cycle = max(accountant.last_cycle_id(), matchlog.highest_published_cycle())
    figures = (replica.cycle_id, replica.cycle_time, local_cycle, local_time)
    if replica.cycle_time is None:
        return Adoption(False, "the replica holds no committed cycle", *figures)
    if local_time is not None and replica.cycle_time <= local_time:
        return Adoption(False, "the replica is not newer than this daemon's own state", *figures)
    with replica.opened() as source:
        accountant.adopt(source, FOREIGN_TABLES)
        dropped, taken = matchlog.adopt(source, MATCHES, replica.match_seq)
    # cycle ids go on after those this daemon gave before as well as the replica's
    accountant.continue_after(max(local_cycle, replica.cycle_id), matchlog.sequence(), now)
    return Adoption(True, "the replica is newer than this daemon's own state", *figures,
                    next_cycle=accountant.last_cycle_id() + 1, matches_taken=taken, unpublished_dropped=dropped)
