"""The daemon's part in HTCondor's high availability: adopt the replica at start, write it after
each cycle.

Which central manager negotiates is ``condor_had``'s and the master's business: the master starts
the NEGOTIATOR on the leader only and stops it when its HAD steps down (``CHILD_ON`` and
``CHILD_OFF_FAST``), so a running negotiatord is always the leader's and negotiates as usual. What
it adds is the replica ``condor_replication`` carries (``STATE_FILE``, :mod:`.replica`): read and
adopted once, before the state checks (:mod:`.adoption`); rewritten after each cycle whose
matches are published, so that the next leader starts at most one replication interval behind.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import structlog

from negotiatord.accountant import AccountantStore
from negotiatord.publish.matchlog import MatchLog
from negotiatord.service.adoption import Adoption, adopt_replica
from negotiatord.service.replica import read_replica, write_replica


class ReplicaKeeper:
    """The replica file of one daemon (None: not under HAD with replication), and its last write."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.adoption: Adoption | None = None
        self.written: dict[str, Any] | None = None     # the last replica written
        self.failures = 0
        self.last_error: str | None = None
        self.log = structlog.get_logger("negotiatord.replica")

    def adopt(self, accountant: AccountantStore, matchlog: MatchLog, now: float) -> Adoption | None:
        """Adopt the replica if there is a newer one (ReplicaRefused if it cannot be read); logged."""
        if self.path is None:
            return None
        replica = read_replica(self.path)
        if replica is None:
            self.log.info("no replica to adopt; negotiating with this central manager's own state",
                          file=str(self.path))
            return None
        self.adoption = adopt_replica(replica, accountant, matchlog, now)
        if self.adoption.adopted:
            self.log.warning("replica adopted; cycle ids and sequence numbers go on after the highest either side "
                             "gave", file=str(self.path), written_by=f"{replica.host} pid {replica.pid}",
                             written=replica.taken, reason=self.adoption.reason, **self.adoption.fields())
        else:
            self.log.info("replica ignored; negotiating with this central manager's own state", file=str(self.path),
                          written_by=f"{replica.host} pid {replica.pid}", reason=self.adoption.reason,
                          **self.adoption.fields())
        return self.adoption

    def write(self, path: Path | None, accountant: AccountantStore, matchlog: MatchLog, now: float) -> None:
        """Write the replica to ``path`` (the current config's; None: none) between cycles; a failure
        is logged and counted, and the next cycle tries again."""
        if path is None:
            return
        started = time.perf_counter()
        try:
            replica = write_replica(path, accountant, matchlog, now)
        except Exception as error:  # a full disk must not stop negotiation; the standby just falls behind
            self.failures += 1
            self.last_error = f"{type(error).__name__}: {error}"
            self.log.error("writing the replica failed; the next cycle tries again", file=str(path),
                           error=self.last_error)
            return
        self.last_error = None
        self.written = {"file": str(path), "cycle": replica.cycle_id, "match_seq": replica.match_seq,
                        "held_rows": replica.held_rows, "time": now,
                        "seconds": round(time.perf_counter() - started, 4)}
        self.log.debug("replica written", **self.written)

    def status(self) -> dict[str, Any] | None:
        if self.path is None and self.written is None:
            return None
        adoption = self.adoption
        return {"file": None if self.path is None else str(self.path), "last_written": self.written,
                "failures": self.failures, "last_error": self.last_error,
                "adoption": None if adoption is None else {"adopted": adoption.adopted, "reason": adoption.reason,
                                                           **adoption.fields()}}
