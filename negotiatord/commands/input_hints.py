"""Hints for a dry run whose input is probably not what was meant.

A cycle over the wrong files is not an error to the cycle: slot ads in the jobs file are simply
not jobs, a ``condor_history`` dump holds no idle job, and glideins whose ``START`` has expired
match nothing. Each gives an empty cycle and exit status 0, which looks like a negotiator that
found nothing to do. These hints say what the files held instead. They are worked out here, at
the command's edge, from counts taken as the ads stream by and from the slot ads the dry run
holds anyway; the cycle itself knows nothing of them.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence

import classad2

from negotiatord.classad.conversion import evaluate_number
from negotiatord.cycle.result import CycleStats
from negotiatord.pool.jobs import IDLE

# JobStatus values (HTCondor manual, "Job ClassAd Attributes": JobStatus).
_JOB_STATUS = {1: "idle", 2: "running", 3: "removed", 4: "completed", 5: "held",
               6: "transferring output", 7: "suspended"}
# A slot's START reads the clock: time(), or CurrentTime (HTCondor's name for time() in an ad).
_READS_CLOCK = re.compile(r"\btime\s*\(\s*\)|\bCurrentTime\b", re.I)
# When a glidein stops starting jobs: the OSPool's glidein START holds only while
# time() < GLIDEIN_ToRetire; GLIDEIN_ToDie is when the glidein is gone.
_END_OF_LIFE = ("GLIDEIN_ToRetire", "GLIDEIN_ToDie")
# When a slot ad was written: the collector's LastHeardFrom, else the daemon's MyCurrentTime.
_AD_TIME = ("LastHeardFrom", "MyCurrentTime")


class AdTally:
    """What one file's ads are, counted as they stream by: ``MyType`` and, for job ads,
    ``JobStatus``. An ad without ``MyType`` counts as what the file should hold, as the cycle
    reads it."""

    def __init__(self, wanted: str) -> None:
        self.wanted = wanted
        self.types: Counter[str] = Counter()   # MyType as the ads spell it; `wanted` for none
        self.job_status: Counter[int | None] = Counter()
        self._last: tuple[classad2.ClassAd, str, int | None] | None = None   # an ad, its MyType and JobStatus

    def count(self, ad: classad2.ClassAd) -> None:
        """Count ``ad``. The ad counted last is not asked again: the jobs of a cluster that repeat
        one ad but for their identity come as that ad (a RepeatedAd's)."""
        if self._last is None or self._last[0] is not ad:
            my_type = ad.get("MyType")
            my_type = my_type if isinstance(my_type, str) else self.wanted
            status = evaluate_number(ad, "JobStatus") if my_type.lower() == "job" else None
            self._last = (ad, my_type, int(status) if status is not None else None)
        _, my_type, status = self._last
        self.types[my_type] += 1
        if my_type.lower() == "job":
            self.job_status[status] += 1

    def of_kind(self, my_type: str) -> int:
        return sum(n for name, n in self.types.items() if name.lower() == my_type.lower())


def input_hints(slots: AdTally, jobs: AdTally, slot_ads: Sequence[classad2.ClassAd], stats: CycleStats,
                now: int, now_given: bool) -> list[str]:
    """What the dry run should say about its input beside the cycle's own problems."""
    hints = [hint for hint in (kind_hint("slots", slots, "Machine", "--slots and --jobs", "Job"),
                               kind_hint("jobs", jobs, "Job", "--slots and --jobs", "Machine")) if hint]
    if jobs.of_kind("Job") and not stats.jobs and not jobs.job_status[IDLE]:
        hints.append(f"the jobs file holds 0 idle jobs ({_statuses(jobs.job_status)})")
    if stats.jobs and not stats.matches:
        hint = _clock_hint(slot_ads, now, now_given)
        if hint:
            hints.append(hint)
    return hints


def kind_hint(name: str, tally: AdTally, wanted: str, options: str | None, other: str | None) -> str | None:
    """What to say of a file (``name``) holding ads but none of the ``wanted`` MyType; when it
    holds the ``other`` file's kind, asks whether the two ``options`` were swapped."""
    if not tally.types or tally.of_kind(wanted):
        return None
    seen = ", ".join(f"{count:,} {my_type}" for my_type, count in tally.types.most_common())
    swapped = f": are {options} swapped?" if other is not None and tally.of_kind(other) else ""
    return f"the {name} file holds no {wanted} ads (MyType: {seen}){swapped}"


def _statuses(counts: Counter[int | None]) -> str:
    words = [f"{count:,} " + (_JOB_STATUS.get(status, f"with JobStatus {status}") if status is not None
                              else "without JobStatus")
             for status, count in counts.most_common()]
    return ", ".join(words)


def _clock_hint(slot_ads: Sequence[classad2.ClassAd], now: int, now_given: bool) -> str | None:
    """A hint naming ``--now`` when every slot's START reads the clock and most slots' end of
    life (GLIDEIN_ToRetire, else GLIDEIN_ToDie) is already past: ads taken from a pool earlier are
    then negotiated at a time() their glideins no longer start jobs."""
    machines = [ad for ad in slot_ads if str(ad.get("MyType", "Machine")).lower() == "machine"]
    if not machines or not all("START" in ad and _READS_CLOCK.search(str(ad.get("START"))) for ad in machines):
        return None
    ends = [end for end in map(_end_of_life, machines) if end is not None]
    expired = sum(end <= now for end in ends)
    if expired * 2 <= len(machines):
        return None
    clock = f"--now {now}" if now_given else f"now ({now})"
    hint = (f"no job matched, and every slot's START reads the clock (time()): {expired:,} of "
            f"{len(machines):,} slots' end of life ({', else '.join(_END_OF_LIFE)}) is before {clock}")
    written = [t for t in map(_ad_time, machines) if t is not None]
    if written:
        hint += f"; to negotiate when the ads were written, give --now {int(max(written))}"
    else:
        hint += "; to negotiate when the ads were written, give --now with that time"
    return hint


def _end_of_life(ad: classad2.ClassAd) -> float | None:
    return next((t for t in (evaluate_number(ad, name) for name in _END_OF_LIFE) if t is not None), None)


def _ad_time(ad: classad2.ClassAd) -> float | None:
    return next((t for t in (evaluate_number(ad, name) for name in _AD_TIME) if t is not None), None)
