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

    def add_jobs(self, jobs: Iterable[Job], autocluster_of: dict[str, Autocluster]) -> None:
        """Append jobs (already in schedd order), merging runs of one autocluster into a request."""
        for job in jobs:
            autocluster = autocluster_of[job.id]
            if self.requests and self.requests[-1].autocluster.id == autocluster.id:
                self.requests[-1].jobs.append(job)
            else:
                self.requests.append(Request(autocluster, deque([job])))

    def open_requests(self, exhausted: set[int]) -> list[Request]:
        """Requests with jobs left whose autocluster still has candidates."""
        self.requests = [r for r in self.requests if r.jobs]
        return [r for r in self.requests if r.autocluster.id not in exhausted]
