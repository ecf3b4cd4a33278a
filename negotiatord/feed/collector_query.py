"""Child-process entry: a worker that asks collectors for slot ads, the slots' private ads and
submitter ads, one query per line it reads, for as long as its parent keeps it.

Run as ``CONDOR_CONFIG=<file> python -m negotiatord.feed.collector_query``. It reads one JSON object
per line on stdin, ``{"host": HOST, "slots": CONSTRAINT, "submitters": CONSTRAINT}`` (the
constraints may be null), and answers each with one JSON line on stdout:
``{"ads": <the slot and submitter ads in the long form, a blank line between ads>, "claims":
[{"name", "address", "ids"}, ...]}``, or ``{"error": <what HTCondor said>}``. The daemon keeps it
from cycle to cycle: starting Python and HTCondor's bindings would cost more than the query.

It runs in a child process for the reason the config is read in one (see
``negotiatord.settings.param_dump``): HTCondor's library exits the whole process on a bad config,
and the daemon must outlive that; a daemon that reloads its config starts a new worker. What it
asks for follows ``Matchmaker::obtainAdsFromCollector``: startd ads, their private ads (the claim
ids; a query at NEGOTIATOR level, answered over an encrypted session only) and submitter ads, the
slot and submitter ads under ``NEGOTIATOR_SLOT_CONSTRAINT`` and ``NEGOTIATOR_SUBMITTER_CONSTRAINT``
as that adds them to its query. Of a
private ad only the slot's ``Name`` and ``MyAddress`` and its claim ids come out, as plain strings:
a consumption-policy p-slot of a thousand cores lists a thousand ids in ``ClaimIdList``, a string
far longer than any expression an ad reader lets through, and the ids are no expression anyway
(``Matchmaker::obtainAdsFromCollector`` reads them the same way). The jobs come from each schedd
through ``NEGOTIATE`` (:mod:`negotiatord.schedds`), as the negotiator gets them.

A failed query raises "Failed communication with collector" whatever went wrong; HTCondor says
what did (connection refused, a read timeout, the security handshake refused) only in its debug
output. That output is captured while each query runs and sent with the error, for
:mod:`negotiatord.feed.pull` to name the cause.
"""

from __future__ import annotations

import json
import os
import re
import sys
import tempfile
from contextlib import contextmanager
from collections.abc import Iterable, Iterator

_TIMESTAMP = re.compile(r"^\d\d/\d\d/\d\d \d\d:\d\d:\d\d ")


def _long_form(ads: Iterable, my_type: str) -> Iterator[str]:
    for ad in ads:
        if "MyType" not in ad:
            ad["MyType"] = my_type
        yield ad.printOld()


def _claims(private_ads: Iterable) -> list[dict[str, str | list[str]]]:
    """Each private ad's slot and claim ids: its ``ClaimIdList``, else its ``ClaimId`` (or the old
    ``Capability``)."""
    claims: list[dict[str, str | list[str]]] = []
    for ad in private_ads:
        listed = str(ad.get("ClaimIdList") or "").split()
        single = ad.get("ClaimId") or ad.get("Capability")
        ids = listed or ([str(single)] if single else [])
        if ids:
            claims.append({"name": str(ad.get("Name", "")), "address": str(ad.get("MyAddress", "")), "ids": ids})
    return claims


@contextmanager
def _htcondor_says() -> Iterator[list[str]]:
    """Collect what HTCondor's library writes to stderr (file descriptor 2) meanwhile; the list
    holds its lines, timestamps removed, once the block is left."""
    said: list[str] = []
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as capture:
        os.dup2(capture.fileno(), 2)
        try:
            yield said
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            capture.seek(0)
            text = capture.read().decode(errors="replace")
            said += [_TIMESTAMP.sub("", line).strip() for line in text.splitlines() if line.strip()]


def _failure(error: Exception, said: list[str]) -> str:
    """The exception's text, then what HTCondor said about it."""
    return "; ".join([str(error), *said])


def query(host: str, slot_constraint: str | None = None, submitter_constraint: str | None = None) -> dict[str, object]:
    """One query's answer (see the module docstring)."""
    import htcondor2

    try:
        with _htcondor_says() as said:
            collector = htcondor2.Collector(host)
            slots = collector.query(htcondor2.AdTypes.Startd, constraint=slot_constraint)
            submitters = collector.query(htcondor2.AdTypes.Submitter, constraint=submitter_constraint)
            private = collector.query(htcondor2.AdTypes.StartdPrivate)
    except Exception as error:  # the bindings raise HTCondorException and plain OSError/ValueError
        return {"error": _failure(error, said)}
    text = "\n".join([*_long_form(slots, "Machine"), *_long_form(submitters, "Submitter")])
    return {"ads": text, "claims": _claims(private)}


def main() -> int:
    import htcondor2

    htcondor2.reload_config()  # negotiatord's import read no config (negotiatord.classad.library)
    htcondor2.enable_debug()   # HTCondor's own account of a failure goes to stderr, captured below
    for line in sys.stdin:
        asked = json.loads(line)
        sys.stdout.write(json.dumps(query(asked["host"], asked.get("slots"), asked.get("submitters"))) + "\n")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
