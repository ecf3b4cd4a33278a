"""The hand-out journal: a match marked handed is charged and published whatever happens next;
a match never handed is taken back whole."""

from __future__ import annotations

import pytest

from negotiatord.accountant import AccountantStore
from negotiatord.cycle.accepted import only_accepted
from negotiatord.cycle.result import CycleResult, CycleStats, Match
from negotiatord.publish.matchlog import MatchLog
from negotiatord.service.cycles import CycleRunner
from negotiatord.settings import load_settings
from tests.service_harness import ROOT


def _match(job: str, submitter: str = "alice@pool", cost: float = 2.0) -> Match:
    return Match(job, "slot1@vm", submitter, "<none>", cost, {"Cpus": 2})


def test_handed_matches_of_a_cycle_that_never_committed_are_charged_and_published(tmp_path):
    settings = load_settings(ROOT / "config" / "default.conf")
    with AccountantStore(tmp_path / "accountant.sqlite") as accountant:
        log = MatchLog(tmp_path / "matches.sqlite")
        log.stage(1, 1000.0, [_match("a"), _match("b"), _match("c"), _match("http job")],
                  to_hand={"a", "b", "c"})
        log.mark_handed(1, "a")
        log.mark_handed(1, "b")
        # the daemon dies here; the next start recovers
        runner = CycleRunner(accountant, log)
        assert runner.recover_hand_outs(settings) == {1: 2}
        assert accountant.charges(1) == {"<none>": 4.0, "alice@pool": 4.0}
        assert log.recover(accountant.last_cycle_id()) == (3, 0)     # a, b and the match of a pushed job
        assert sorted(m.match.job for m in log.since(0, 10)) == ["a", "b", "http job"]
        # done once: a second start finds nothing left to recover
        assert runner.recover_hand_outs(settings) == {}
        log.close()


def test_a_cycle_without_a_handed_match_recovers_nothing(tmp_path):
    settings = load_settings(ROOT / "config" / "default.conf")
    with AccountantStore(tmp_path / "accountant.sqlite") as accountant:
        log = MatchLog(tmp_path / "matches.sqlite")
        log.stage(1, 1000.0, [_match("a")], to_hand={"a"})
        assert CycleRunner(accountant, log).recover_hand_outs(settings) == {}
        assert log.recover(accountant.last_cycle_id()) == (0, 1)
        log.close()


def test_a_match_no_schedd_received_is_taken_back_from_usage_charges_and_holdings():
    settings = load_settings(ROOT / "config" / "default.conf")
    tree = settings.group_tree
    matches = (_match("a", "group_physics.alice@pool"), _match("b", "group_physics.alice@pool", 3.0))
    charges = tree.roll_up({"group_physics.alice@pool": 5.0})
    result = CycleResult(stats=CycleStats(0.0, 2, 0, 1, 2, 1, 1, 8.0), matches=matches, rejections=(),
                         groups=(), submitters=(), usage=tree.roll_up({"group_physics.alice@pool": 9.0}),
                         charges=charges, problems=(),
                         held={"group_physics.alice@pool": {"cpus": 4.0, "slot_weight": 5.0}})
    kept = only_accepted(result, {1}, tree)
    assert [m.job for m in kept.matches] == ["a"] and kept.stats.matches == 1
    assert kept.charges["group_physics.alice@pool"] == pytest.approx(2.0)
    assert kept.charges["group_physics"] == pytest.approx(2.0) and kept.charges["<none>"] == pytest.approx(2.0)
    assert kept.usage["group_physics.alice@pool"] == pytest.approx(6.0)
    assert kept.held["group_physics.alice@pool"]["cpus"] == pytest.approx(2.0)
    assert only_accepted(result, set(), tree) is result
