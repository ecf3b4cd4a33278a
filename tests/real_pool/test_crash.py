"""kill -9 of negotiatord in the middle of handing out matches to a real schedd, then a restart: no
job starts twice, and no match the schedd received is charged twice or lost from the accountant.

The daemon kills itself (``tests.real_pool.killed_in_hand_out.py``) as the fourth of six matches is
handed: just before its mark is written, or just after (the one moment at which a match is charged
that its schedd never receives; the match log's docstring names it). The schedd logs each match it
receives (``D_MATCH``: "Handling match for job"), which is how the test counts what arrived.
"""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

import pytest

from negotiatord.accountant import AccountantStore
from tests.minipool import MiniPool, wait_for
from tests.real_pool.conftest import JOB, negotiatord

COST = 1.5     # each JOB's match, SlotWeight before minus after (conftest.POOL_CONFIG)


def _marked(match_log: Path) -> int:
    with sqlite3.connect(f"file:{match_log}?mode=ro", uri=True) as db:
        return db.execute("SELECT COUNT(*) FROM matches WHERE handed = 1 AND published = 0").fetchone()[0]


def _received(pool: MiniPool) -> int:
    log = (pool.directory / "log" / "SchedLog").read_text(errors="replace")
    return len(re.findall(r"Handling match for job", log))


@pytest.mark.parametrize(("kill_at", "charged"), [("4", 3), ("4+", 4)])
def test_a_kill_in_the_middle_of_a_hand_out_loses_and_repeats_nothing(pool, tmp_path, kill_at, charged):
    received_before = _received(pool)
    cluster = pool.submit(6, arguments="3", **JOB)
    pool.wait_until_advertised("minipool@minipool", idle=6)
    home = tmp_path / "negotiatord"
    doomed = negotiatord(pool, home, start=False)
    doomed.module = "tests.real_pool.killed_in_hand_out"
    doomed.environment = {"NEGOTIATORD_TEST_KILL_AT": kill_at}
    doomed.start()
    assert doomed.wait(60) == -9
    assert _marked(doomed.state / "matches.sqlite") == charged
    # what reached the schedd before the kill: the three matches written before the fourth
    wait_for(lambda: _received(pool) - received_before == 3, 30, "the schedd to log three matches received")

    restarted = negotiatord(pool, home)
    try:
        recovered = [e for e in restarted.log_events() if "never committed" in e.get("event", "")]
        assert [(e["cycles"], e["matches"]) for e in recovered] == [([1], charged)]
        with AccountantStore(restarted.state / "accountant.sqlite") as accountant:
            assert accountant.charges(1) == pytest.approx({"<none>": charged * COST,
                                                           "minipool@minipool": charged * COST})
        matches = restarted.get("/v1/matches")["matches"]
        assert len([m for m in matches if m["cycle"] == 1]) == charged
        # the jobs the schedd never heard of are matched by the restarted daemon's cycles
        def done() -> list[dict]:
            finished = [job for job in pool.history() if job["ClusterId"] == cluster]
            if len(finished) < 6:
                restarted.reschedule()
                return []
            return finished
        finished = wait_for(done, 120, "all six jobs to complete", every=2)
        assert all(job["NumJobStarts"] == 1 for job in finished)          # none started twice
        assert _received(pool) - received_before == 6                     # each match received once
        with AccountantStore(restarted.state / "accountant.sqlite") as accountant:
            total = sum(accountant.charges(cycle).get("minipool@minipool", 0.0)
                        for cycle in range(1, accountant.last_cycle_id() + 1))
        # every match the schedd received is charged once; a kill after the mark charges the one
        # match that never left
        assert total == pytest.approx((6 + charged - 3) * COST)
    finally:
        restarted.stop()
        pool.remove_all()
