"""A chain of slot attributes, each within the ad limits, can inline to a tree deeper than classad2
evaluates (~400 levels: it raises "failed to evaluate expression"). HTCondor's negotiator takes a
failed evaluation as ERROR, so that slot matches nothing; the cycle goes on for the rest of the
pool, with the fast path (which hands such a tree to classad2) and with the classad2 reference.
"""

from __future__ import annotations

import classad2
import pytest

from negotiatord.accountant import AccountantState
from negotiatord.classad.conversion import evaluated, requirements_hold
from negotiatord.evaluation import ClassAdEvaluator
from negotiatord.pool.builder import build_snapshot
from negotiatord.runtime import run_cycle
from tests.builders import expr, jobs, settings, static_slot

NOW = 1_700_000_000
LINKS = 3          # attributes chained: 3 x 200 operators inline to 600 levels
TERMS = 200        # operators an attribute holds, within the 320 an expression may have


def _chained_slot(name: str, links: int = LINKS, terms: int = TERMS) -> classad2.ClassAd:
    attrs = {f"Link{i}": expr(" && ".join([f"Link{i + 1}"] + ["(Cpus >= 1)"] * terms)) for i in range(links)}
    attrs[f"Link{links}"] = True
    return static_slot(name, **attrs, Start=expr("Link0"), Requirements=expr("Link0 && TARGET.RequestCpus <= Cpus"))


def test_classad2_refuses_the_chain_and_the_conversion_calls_it_error() -> None:
    slot = _chained_slot("deep")
    with pytest.raises(classad2.ClassAdException):
        classad2.ExprTree("Link0").eval(slot)
    assert evaluated(classad2.ExprTree("Link0"), slot) == classad2.Value.Error
    assert requirements_hold(jobs("ann", 1)[0], slot) is False


@pytest.mark.parametrize("reference", [False, True], ids=["fast path", "classad2 reference"])
def test_the_deep_slot_matches_nothing_and_the_rest_of_the_pool_negotiates(reference: bool) -> None:
    config = settings()
    slot_ads = [_chained_slot("deep"), static_slot("plain1"), static_slot("plain2")]
    snapshot = build_snapshot(slot_ads, jobs("ann", 3), config)
    evaluator = ClassAdEvaluator(snapshot.table, config, NOW) if reference else None
    result = run_cycle(snapshot, AccountantState(), config, NOW, evaluator)
    assert sorted(m.slot for m in result.matches) == ["plain1", "plain2"]


@pytest.mark.parametrize("reference", [False, True], ids=["fast path", "classad2 reference"])
def test_a_chain_classad2_still_evaluates_matches_with_both_evaluators(reference: bool) -> None:
    """One link of 300 operators: deeper than the fast path compiles (MAX_HEIGHT, 256), within
    what classad2 evaluates, so the fast path hands it to classad2 and the slot matches."""
    config = settings()
    snapshot = build_snapshot([_chained_slot("deep", links=1, terms=300)], jobs("ann", 1), config)
    evaluator = ClassAdEvaluator(snapshot.table, config, NOW) if reference else None
    result = run_cycle(snapshot, AccountantState(), config, NOW, evaluator)
    assert [m.slot for m in result.matches] == ["deep"]
    assert (result.stats.classad_fallbacks > 0) is not reference
