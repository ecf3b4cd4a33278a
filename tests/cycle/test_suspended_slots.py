"""NEGOTIATOR_DISCOUNT_SUSPENDED_RESOURCES: a claimed slot whose job is suspended is not charged.

Reference: the manual's negotiator parameters ("tells the negotiator to not count resources that
are suspended when calculating the number of resources a user is using. Defaults to false") and
Accountant::IsClaimed in htcondor/htcondor src/condor_negotiator.V6/Accountant.cpp, which skips a
slot whose Activity is Suspended when the knob is set.
"""

from collections import Counter
from pathlib import Path

from negotiatord.accountant import AccountantState
from negotiatord.pool.builder import build_snapshot
from negotiatord.runtime import run_cycle
from negotiatord.settings import load_settings
from tests.builders import jobs, pslot, settings, static_slot

NOW = 1_700_000_000


def run(discount: bool, licensed: bool = False):
    config = settings(consumption_policy=True, discount_suspended_resources=discount,
                      concurrency_limits={"lic": 5.0})
    lic = {"ConcurrencyLimits": "lic"} if licensed else {}
    suspended = [static_slot(f"held{i}", State="Claimed", Activity="Suspended", RemoteUser="alice@site", **lic)
                 for i in range(4)]
    job_ads = jobs("alice", 20, cluster=1, **lic) + jobs("bob", 20, cluster=2)
    return run_cycle(build_snapshot([pslot("free", cpus=10), *suspended], job_ads, config), AccountantState(),
                     config, NOW)


def matched(result) -> Counter:
    return Counter(m.submitter.split("@")[0] for m in result.matches)


def test_suspended_slots_count_against_the_share_by_default():
    """Pool 14 (10 free cpus, 4 suspended), equal priorities: 7 each; alice holds 4, so 3 more."""
    result = run(discount=False)
    assert matched(result) == {"alice": 3, "bob": 7}
    assert result.usage["alice@site"] == 7


def test_discounted_suspended_slots_are_not_charged():
    """Discounted, alice holds nothing: her 7 come first (ties go by name), bob gets the last 3."""
    result = run(discount=True)
    assert matched(result) == {"alice": 7, "bob": 3}
    assert result.usage["alice@site"] == 7


def test_the_suspended_jobs_concurrency_limits_still_count():
    """LICENSE lic = 5, held by the 4 suspended jobs: alice's licensed jobs get 1 more either way."""
    assert matched(run(discount=True, licensed=True))["alice"] == 1


def test_the_loader_reads_the_knob(tmp_path: Path):
    path = tmp_path / "negotiator.conf"
    path.write_text("NEGOTIATOR_DISCOUNT_SUSPENDED_RESOURCES = True\n")
    assert load_settings(path).discount_suspended_resources
    path.write_text("")
    assert not load_settings(path).discount_suspended_resources
