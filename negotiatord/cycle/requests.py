"""A submitter's idle work as the schedd presents it: requests in job order.

Consecutive jobs of the same autocluster form one request (HTCondor's resource request with a
count), so skipping an autocluster nothing matches costs one step, not one per job.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Iterable

from negotiatord.pool.autoclusters import Autocluster
from negotiatord.pool.jobs import Job


@dataclass
class Request:
    autocluster: Autocluster
    jobs: deque[Job]


@dataclass
class Submitter:
    name: str
    group: str
    priority: float                               # effective priority: lower is better
    requests: list[Request] = field(default_factory=list)
    share_limit: float = 0.0                      # its share of the group's allocation

    def add_autoclusters(self, autoclusters: Iterable[Autocluster]) -> None:
        """Requests in schedd job order from the submitter's autoclusters (each in job order):
        runs of consecutive jobs of one autocluster. When the autoclusters' jobs do not
        interleave (the usual case: a cluster's jobs share an autocluster), each is one run,
        found without going through its jobs."""
        ordered = sorted(autoclusters, key=lambda ac: ac.jobs[0].order)
        if all(a.jobs[-1].order < b.jobs[0].order for a, b in zip(ordered, ordered[1:])):
            self.requests.extend(Request(ac, deque(ac.jobs)) for ac in ordered)
            return
        autocluster_of = {job.id: ac for ac in ordered for job in ac.jobs}
        for job in sorted((job for ac in ordered for job in ac.jobs), key=lambda j: j.order):
            autocluster = autocluster_of[job.id]
            if self.requests and self.requests[-1].autocluster.id == autocluster.id:
                self.requests[-1].jobs.append(job)
            else:
                self.requests.append(Request(autocluster, deque([job])))

    def open_requests(self, exhausted: set[int]) -> list[Request]:
        """Requests with jobs left whose autocluster still has candidates."""
        self.requests = [r for r in self.requests if r.jobs]
        return [r for r in self.requests if r.autocluster.id not in exhausted]
