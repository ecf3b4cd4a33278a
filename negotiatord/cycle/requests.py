"""A submitter's idle work as the schedd presents it: requests in job order.

Consecutive jobs of the same autocluster form one request (HTCondor's resource request with a
count), so skipping an autocluster nothing matches costs one step, not one per job.
"""

from __future__ import annotations

import heapq
from bisect import bisect_left
from collections import deque
from dataclasses import dataclass, field
from operator import attrgetter
from collections.abc import Iterable

from negotiatord.pool.autoclusters import Autocluster
from negotiatord.pool.jobs import Job

_ORDER = attrgetter("order")


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
        runs of consecutive jobs of one autocluster. A submitter's autoclusters interleave (the
        jobs of one cluster differ in their requests) but in long runs, so this merges run by run:
        the autocluster with the first job left gives jobs up to the next autocluster's first
        job left, found by bisection; the cost follows the runs, not the jobs (255k at OSPool
        scale)."""
        autoclusters = list(autoclusters)
        heads = [(ac.jobs[0].order, k, 0) for k, ac in enumerate(autoclusters)]
        heapq.heapify(heads)
        while heads:
            _, k, start = heapq.heappop(heads)
            jobs = autoclusters[k].jobs
            end = bisect_left(jobs, heads[0][0], start + 1, key=_ORDER) if heads else len(jobs)
            self.requests.append(Request(autoclusters[k], deque(jobs[start:end])))
            if end < len(jobs):
                heapq.heappush(heads, (jobs[end].order, k, end))

    def open_requests(self, exhausted: set[int]) -> list[Request]:
        """Requests with jobs left whose autocluster still has candidates."""
        self.requests = [r for r in self.requests if r.jobs]
        return [r for r in self.requests if r.autocluster.id not in exhausted]
