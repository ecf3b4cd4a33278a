"""Child-process entry: ask a collector for slot and submitter ads, and its schedds for idle
jobs, and print them all in the long form (blank line between ads) on stdout.

Run as ``CONDOR_CONFIG=<file> python -m negotiatord.feed.collector_query HOST``. It runs in a child
process for the reason the config is read in one (see ``negotiatord.settings.param_dump``):
HTCondor's library exits the whole process on a bad config, and the daemon must outlive that.
What it asks for follows ``Matchmaker::obtainAdsFromCollector``: startd and submitter ads from the
collector; the jobs come from each schedd, as the negotiator gets them during a cycle.
"""

from __future__ import annotations

import sys
from typing import Iterable, TextIO

IDLE_JOBS = "JobStatus == 1"


def _write(ads: Iterable, my_type: str, out: TextIO) -> None:
    for ad in ads:
        if "MyType" not in ad:
            ad["MyType"] = my_type  # schedds leave MyType out of job ads
        out.write(ad.printOld())
        out.write("\n")


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: python -m negotiatord.feed.collector_query HOST", file=sys.stderr)
        return 2
    host = argv[1]
    import htcondor2  # reads CONDOR_CONFIG on import

    collector = htcondor2.Collector(host)
    try:
        slots = collector.query(htcondor2.AdTypes.Startd)
        submitters = collector.query(htcondor2.AdTypes.Submitter)
        schedds = collector.locateAll(htcondor2.DaemonType.Schedd)
    except Exception as error:  # the bindings raise HTCondorException and plain OSError/ValueError
        print(f"collector {host}: {error}", file=sys.stderr)
        return 1
    _write(slots, "Machine", sys.stdout)
    _write(submitters, "Submitter", sys.stdout)
    for schedd in schedds:
        try:
            jobs = htcondor2.Schedd(schedd).query(constraint=IDLE_JOBS)
        except Exception as error:  # one unreachable schedd must not hide the others' jobs
            print(f"schedd {schedd.get('Name')}: {error}", file=sys.stderr)
            continue
        _write(jobs, "Job", sys.stdout)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
