"""Priority factors by kind of submitter: nice users, group members, remote and local submitters.

Reference: Accountant::GetPriorityFactor in htcondor/htcondor src/condor_negotiator.V6/Accountant.cpp
(nice user, then GROUP_PRIO_FACTOR_<assigned group>, then REMOTE_PRIO_FACTOR when
ACCOUNTANT_LOCAL_DOMAIN is set and differs from GetDomain's text after the last '@', else
DEFAULT_PRIO_FACTOR), and the manual's negotiator parameters: "If [ACCOUNTANT_LOCAL_DOMAIN is] not
defined, all users are considered local."
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from pathlib import Path

import pytest

from negotiatord.accountant import AccountantState, CustomerRecord
from negotiatord.pool.builder import build_snapshot
from negotiatord.runtime import run_cycle
from negotiatord.settings import load_settings
from tests.builders import group, jobs, pslot, settings

NOW = 1_700_000_000


def factor(customer: str, **changes: object) -> float:
    config = settings(**changes)
    return AccountantState().priority_factor(customer, config.group_tree.assigned_group(customer), config)


def test_without_a_local_domain_every_submitter_is_local():
    assert factor("bob@remote", remote_prio_factor=3000.0) == 1000.0


def test_a_submitter_of_another_domain_gets_the_remote_factor():
    local = dict(accountant_local_domain="local", remote_prio_factor=3000.0)
    assert factor("bob@remote", **local) == 3000.0
    assert factor("alice@local", **local) == 1000.0
    # GetDomain takes the text after the *last* '@', and compares it case-sensitively
    assert factor("alice@remote@local", **local) == 1000.0
    assert factor("alice@LOCAL", **local) == 3000.0


def test_group_factor_wins_over_remote_and_nice_user_wins_over_both():
    tree = (group("group_a", prio_factor=50.0),)
    local = dict(accountant_local_domain="local", remote_prio_factor=3000.0, groups=tree)
    assert factor("group_a.bob@remote", **local) == 50.0
    assert factor("nice-user.bob@local", **local, nice_user_prio_factor=1e10) == 1e10


def test_an_explicit_factor_wins_over_the_remote_one():
    config = settings(accountant_local_domain="local", remote_prio_factor=3000.0)
    state = AccountantState([replace(CustomerRecord.fresh("bob@remote"), prio_factor=7.0)])
    assert state.priority_factor("bob@remote", "<none>", config) == 7.0


def test_remote_factor_below_one_counts_as_one():
    assert factor("bob@remote", accountant_local_domain="local", remote_prio_factor=0.25) == 1.0


def test_local_and_remote_submitters_split_100_slots_75_25():
    """DEFAULT_PRIO_FACTOR = 1000, REMOTE_PRIO_FACTOR = 3000: fresh submitters (real priority 0.5)
    have effective priorities 500 and 1500, and a pie spin shares inversely to them: 3 to 1."""
    config = settings(consumption_policy=True, accountant_local_domain="local", remote_prio_factor=3000.0)
    slots = [pslot(f"s{i}", cpus=10, memory=100_000) for i in range(10)]
    job_ads = jobs("alice", 100, cluster=1, User="alice@local") + jobs("bob", 100, cluster=2, User="bob@remote")
    result = run_cycle(build_snapshot(slots, job_ads, config), AccountantState(), config, NOW)
    assert Counter(m.submitter for m in result.matches) == {"alice@local": 75, "bob@remote": 25}
    priorities = {s.name: s.effective_priority for s in result.submitters}
    assert priorities == pytest.approx({"alice@local": 500.0, "bob@remote": 1500.0})


def test_the_loader_reads_the_domain_and_the_factors(tmp_path: Path):
    path = tmp_path / "negotiator.conf"
    path.write_text("ACCOUNTANT_LOCAL_DOMAIN = local\nREMOTE_PRIO_FACTOR = 3000\nNICE_USER_PRIO_FACTOR = 1e6\n")
    loaded = load_settings(path)
    assert (loaded.accountant_local_domain, loaded.remote_prio_factor, loaded.nice_user_prio_factor) == (
        "local", 3000.0, 1e6)
    (tmp_path / "empty.conf").write_text("")
    empty = load_settings(tmp_path / "empty.conf")
    # HTCondor's param table: REMOTE_PRIO_FACTOR 1e7, NICE_USER_PRIO_FACTOR 1e10, no local domain
    assert (empty.accountant_local_domain, empty.remote_prio_factor, empty.nice_user_prio_factor) == (
        None, 1e7, 1e10)
