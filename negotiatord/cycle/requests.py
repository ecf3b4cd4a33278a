"""A submitter's idle work as its schedds present it: requests in job order.

Consecutive jobs of the same autocluster form one request (HTCondor's resource request with a
count), so skipping an autocluster nothing matches costs one step, not one per job.

A submitter with jobs at several schedds is, to HTCondor's negotiator, one submitter ad per
schedd, negotiated one after the other (matchmaker.cpp ``submitterLessThan``: by priority, then
an order among the schedds), each schedd offering its jobs in its own order (qmgmt.cpp
``prio_compar``). With USE_GLOBAL_JOB_PRIOS the negotiator splits each ad by JobPrio and puts the
higher JobPrio first across schedds (``consolidate_globaljobprio_submitter_ads``). HTCondor orders
the schedds of one submitter pseudo-randomly (``LastHeardFrom % 1009``); here by name.
"""

from __future__ import annotations

import heapq
from bisect import bisect_left
from collections import deque
from dataclasses import dataclass, field
from operator import attrgetter
from collections.abc import Callable, Iterable, Sequence

from negotiatord.pool.autoclusters import Autocluster
from negotiatord.pool.jobs import NO_DAG_PRIOS, Job

_ORDER = attrgetter("order")
_SCHEDD = attrgetter("schedd")


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

    def add_autoclusters(self, autoclusters: Iterable[Autocluster], global_job_prios: bool = False) -> None:
        """Requests in the order the submitter's schedds offer its jobs (module docstring), from
        its autoclusters (each in job order): runs of consecutive jobs of one autocluster. A
        submitter's autoclusters interleave (the jobs of one cluster differ in their requests)
        but in long runs, so this merges run by run: the autocluster with the first job left
        gives jobs up to the next autocluster's first job left, found by bisection; the cost
        follows the runs, not the jobs (255k at OSPool scale). An autocluster with jobs of
        several schedds (or, with ``global_job_prios``, of several JobPrio values and DAG
        priorities) is merged as one stream per schedd (and JobPrio)."""
        streams = [(ac, jobs) for ac in autoclusters for jobs in _streams(ac.jobs, global_job_prios)]
        key = _merge_key(sorted({jobs[0].schedd for _, jobs in streams}), global_job_prios)
        heads = [(key(jobs[0]), k, 0) for k, (_, jobs) in enumerate(streams)]
        heapq.heapify(heads)
        while heads:
            _, k, start = heapq.heappop(heads)
            autocluster, jobs = streams[k]
            end = bisect_left(jobs, heads[0][0], start + 1, key=key) if heads else len(jobs)
            self.requests.append(Request(autocluster, deque(jobs[start:end])))
            if end < len(jobs):
                heapq.heappush(heads, (key(jobs[end]), k, end))

    def open_requests(self, exhausted: set[int]) -> list[Request]:
        """Requests with jobs left whose autocluster still has candidates."""
        self.requests = [r for r in self.requests if r.jobs]
        return [r for r in self.requests if r.autocluster.id not in exhausted]


def _streams(jobs: Sequence[Job], global_job_prios: bool) -> list[Sequence[Job]]:
    """An autocluster's jobs (in job order) as parts each ordered as the merge orders them: one
    per schedd, and with USE_GLOBAL_JOB_PRIOS one per JobPrio too where DAG priorities could put
    a lower JobPrio first within a schedd. Most autoclusters are one part."""
    split_prios = global_job_prios and any(job.dag_prios is not NO_DAG_PRIOS for job in jobs)
    if not split_prios and len(set(map(_SCHEDD, jobs))) == 1:     # a C loop: 255k jobs a cycle at OSPool scale
        return [jobs]
    parts: dict[tuple[str, int], list[Job]] = {}
    for job in jobs:
        parts.setdefault((job.schedd, job.prio if split_prios else 0), []).append(job)
    return list(parts.values())


def _merge_key(schedds: list[str], global_job_prios: bool) -> Callable[[Job], tuple]:
    """The order the submitter's jobs are offered in, across its ``schedds`` (sorted)."""
    if len(schedds) == 1 and not global_job_prios:
        return _ORDER
    rank = {name: place for place, name in enumerate(schedds)}
    if global_job_prios:
        return lambda job: (-job.prio, rank[job.schedd], job.order)
    return lambda job: (rank[job.schedd], job.order)
