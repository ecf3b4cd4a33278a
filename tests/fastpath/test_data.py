"""The shared data set's ads for the fast-path tests, and which ClassAd constructs they use.

Helpers here (read once per session) are imported by the other fast-path test modules.
"""

from __future__ import annotations

import copy
from functools import lru_cache
from pathlib import Path

import classad2

from negotiatord.ads.reader import read_ads

DATA = Path(__file__).resolve().parents[3] / "shared" / "data"
AD_FILES = sorted(
    p for p in DATA.rglob("*")
    if p.is_file() and not p.name.endswith((".txt", ".md", ".swf.gz", ".log"))
)
# the expressions the negotiator evaluates, on each side of a match
SLOT_ROOTS = ("Requirements", "START", "Start", "Rank", "WithinResourceLimits", "IsValidCheckpointPlatform",
              "RoomForCPUOnlyJobs", "SINGULARITY_START_CLAUSE", "START_EXTRA", "SlotWeight")
JOB_ROOTS = ("Requirements", "Rank", "RequestMemory", "RequestDisk", "RequestCpus")


@lru_cache(maxsize=1)
def all_ads() -> tuple[tuple[Path, classad2.ClassAd], ...]:
    return tuple((path, ad) for path in AD_FILES for ad in read_ads(path).ads)


@lru_cache(maxsize=1)
def slot_ads() -> tuple[classad2.ClassAd, ...]:
    """Every Machine ad (OSPool sample, HTCondor's StatusAds)."""
    return tuple(ad for path, ad in all_ads() if ad.get("MyType") == "Machine" or path.parent.name == "StatusAds")


@lru_cache(maxsize=1)
def job_ads() -> tuple[classad2.ClassAd, ...]:
    """Every job ad (history and job_ads), made idle, with an identity."""
    made = []
    for path, ad in all_ads():
        if ad.get("MyType") == "Machine" or path.parent.name == "StatusAds" or "Requirements" not in ad:
            continue
        job = copy.deepcopy(ad)
        job["JobStatus"] = 1
        job["ProcId"] = 0
        job["ClusterId"] = len(made) + 1
        job["GlobalJobId"] = f"data#{len(made)}"
        if "Owner" not in job:
            job["Owner"] = "someone"
        made.append(job)
    return tuple(made)


# -- which constructs the data uses, and how the fast path covers each ---------------------------

def constructs(node: tuple, found: set[str]) -> None:
    """Operators (``op:&&``) and functions (``call:stringlistmember``) used in an AST."""
    kind = node[0]
    if kind == "bin" or kind == "un":
        found.add(f"op:{node[1]}")
    elif kind in ("cond", "elvis", "sub", "sel", "list", "rec"):
        found.add(kind)
    elif kind == "call":
        found.add(f"call:{node[1].lower()}")
    for part in node[1:]:
        if isinstance(part, tuple):
            if part and isinstance(part[0], str) and part[0] in _KINDS:
                constructs(part, found)
            else:
                for item in part:
                    if isinstance(item, tuple) and item and item[0] in _KINDS:
                        constructs(item, found)
                    elif isinstance(item, tuple) and len(item) == 2 and isinstance(item[1], tuple):
                        constructs(item[1], found)


_KINDS = {"lit", "attr", "sel", "sub", "un", "bin", "cond", "elvis", "call", "list", "rec", "paren"}
