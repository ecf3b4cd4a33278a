"""Resource requests as the cycle's idle jobs, and the way back from a match to its request.

A request ad is one job of an autocluster with ``_condor_RESOURCE_COUNT``, the number of identical
jobs it stands for (``ScheddNegotiate::sendJobInfo``). The cycle negotiates jobs, so a request of
count n becomes n jobs: its own ad, and n - 1 copies that differ only in ``GlobalJobId``
(``<GlobalJobId>/<i>``), kept as records sharing one ad as the feed keeps the jobs of a cluster.
HTCondor's negotiator likewise offers one request up to n times (``ResourceRequestList::getRequest``).

Each job carries what the cycle needs and the request may lack: ``JobStatus`` idle, and ``User``
(and, for a submitter the ``GROUP_PREFIX`` map renamed, ``AccountingGroup``) set to the
submitter's name, which the cycle charges (the session is the submitter's, as
``Matchmaker::negotiate`` is per submitter). The schedd picks which of its jobs each match starts,
from the request's job id in the offer (``schedd_negotiate.cpp``, ``FindRunnableJob``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import classad2

from negotiatord.classad.conversion import evaluate_number, evaluate_string
from negotiatord.pool.job_ads import ClusterAd, ProcAd, expressions_read_identity
from negotiatord.schedds.submitters import Submitter

IDLE = 1
COUNT = "_condor_RESOURCE_COUNT"


@dataclass(frozen=True)
class Request:
    """One request of one submitter, as the schedd sent it."""

    submitter: Submitter
    cluster: int
    proc: int
    autocluster: int
    diagnostics: int          # WantMatchDiagnostics: 0 none, 1 reason, 2 and 3 with job and autocluster
    count: int


@dataclass
class RequestJobs:
    """The cycle's jobs from every request fetched, and each job's request."""

    records: dict[str, classad2.ClassAd | ProcAd] = field(default_factory=dict)
    request_of: dict[str, Request] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)

    def add(self, submitter: Submitter, ad: classad2.ClassAd, max_count: int) -> None:
        """File the jobs ``ad`` stands for (at most ``max_count``)."""
        cluster, proc = evaluate_number(ad, "ClusterId"), evaluate_number(ad, "ProcId")
        global_id = evaluate_string(ad, "GlobalJobId")
        if cluster is None or proc is None or not global_id:
            self.problems.append(f"submitter {submitter.name} at {submitter.schedd_name}: a request without "
                                 "ClusterId, ProcId and GlobalJobId was left out")
            return
        count = int(evaluate_number(ad, COUNT) or 1)
        request = Request(submitter, int(cluster), int(proc), int(evaluate_number(ad, "AutoClusterId") or -1),
                          int(evaluate_number(ad, "WantMatchDiagnostics") or 0), count)
        ad["JobStatus"] = IDLE
        ad["User"] = submitter.name
        if submitter.owner != submitter.name and "AccountingGroup" in ad:
            # a submitter GROUP_PREFIX renamed is charged under its new name, which the job's own
            # AccountingGroup would otherwise decide (pool.jobs.submitter_of)
            ad["AccountingGroup"] = submitter.name
        keys = [global_id] + [f"{global_id}/{copy}" for copy in range(1, min(count, max_count))]
        shared = ClusterAd(ad) if len(keys) > 1 and not expressions_read_identity(ad) else None
        for key in keys:
            if key in self.records:
                continue
            if shared is not None:
                self.records[key] = ProcAd(shared, request.proc, key)
            else:
                copy = classad2.ClassAd({name: ad.lookup(name) for name in ad.keys()}) if key != global_id else ad
                copy["GlobalJobId"] = key
                self.records[key] = copy
            self.request_of[key] = request
