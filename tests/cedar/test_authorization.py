"""HTCondor's authorization levels and ALLOW/DENY lists, as ``IpVerify`` decides
(``src/condor_io/condor_ipverify.cpp``, the level hierarchy of ``src/condor_utils/condor_perms.cpp``).
The same decisions are checked against condor_ping on a real pool in tests/real_pool."""

from __future__ import annotations

import pytest

from negotiatord.cedar.authorization import (
    UNAUTHENTICATED, AuthorizationTable, Entry, Level, LevelRules, implied, parse_list, table_from, wildcard_match,
)

NO_NAMES = list


def table(**lists: str) -> AuthorizationTable:
    """ALLOW_READ="..." style keyword arguments."""
    rows = []
    for level in Level:
        allow, deny = lists.get(f"ALLOW_{level.value}"), lists.get(f"DENY_{level.value}")
        rows.append((level, allow, f"ALLOW_{level.value}", deny, f"DENY_{level.value}"))
    return table_from(rows)


def allowed(rules: AuthorizationTable, level: Level, user: str | None, ip: str = "127.0.0.1",
            names: tuple[str, ...] = ()) -> bool:
    return rules.verify(level, user, ip, lambda: list(names)).allowed


@pytest.mark.parametrize("text, user, host", [
    ("alice@site", "alice@site", "*"),                  # a user: any host
    ("host.example.org", "*", "host.example.org"),      # a host: any user
    ("alice@site/10.0.0.0/8", "alice@site", "10.0.0.0/8"),
    ("*/10.0.0.1", "*", "10.0.0.1"),
    ("10.0.0.0/255.0.0.0", "*", "10.0.0.0/255.0.0.0"),   # net/mask, not user/host
    ("*", "*", "*"),
])
def test_entries_split_as_ipverify_splits_them(text, user, host):
    assert Entry.parse(text) == Entry(user, host)


def test_lists_split_on_commas_and_spaces():
    assert parse_list("a@x, b@y  c@z") == (Entry("a@x", "*"), Entry("b@y", "*"), Entry("c@z", "*"))
    assert parse_list(None) is None


@pytest.mark.parametrize("pattern, text, expected", [
    ("*@minipool", "negotiatord@minipool", True),
    ("*@MINIPOOL", "negotiatord@minipool", True),        # matches_anycase_withwildcard
    ("neg*@minipool", "negotiatord@minipool", True),
    ("neg*", "alice", False),
    ("*.example.org", "cm.example.org", True),
])
def test_wildcards(pattern, text, expected):
    assert wildcard_match(pattern, text) is expected


def test_levels_imply_as_dcpermissionhierarchy_says():
    assert implied(Level.ADMINISTRATOR) == [Level.ADMINISTRATOR, Level.WRITE, Level.READ]
    assert implied(Level.DAEMON) == [Level.DAEMON, Level.WRITE, Level.READ]
    assert implied(Level.NEGOTIATOR) == [Level.NEGOTIATOR, Level.READ]


def test_an_unset_allow_list_denies_every_level_but_read_and_write():
    rules = table(ALLOW_READ="*")
    assert allowed(rules, Level.READ, "alice@site")
    assert not allowed(rules, Level.ADMINISTRATOR, "alice@site")
    decision = rules.verify(Level.ADMINISTRATOR, "alice@site", "127.0.0.1", NO_NAMES)
    assert "ALLOW_ADMINISTRATOR is not set" in decision.reason


def test_a_level_is_granted_by_a_level_that_implies_it():
    """Verify() walks DirectlyImpliedBy: WRITE is granted by ADMINISTRATOR, READ by WRITE."""
    rules = table(ALLOW_ADMINISTRATOR="admin@site")
    assert allowed(rules, Level.WRITE, "admin@site") and allowed(rules, Level.READ, "admin@site")
    assert not allowed(rules, Level.WRITE, "alice@site")
    reason = rules.verify(Level.READ, "admin@site", "127.0.0.1", NO_NAMES).reason
    assert "implied by WRITE" in reason and "ADMINISTRATOR" in reason


def test_deny_wins_over_allow():
    rules = table(ALLOW_WRITE="*@site", DENY_WRITE="bob@site")
    assert allowed(rules, Level.WRITE, "alice@site")
    decision = rules.verify(Level.WRITE, "bob@site", "127.0.0.1", NO_NAMES)
    assert not decision.allowed and "DENY_WRITE denies bob@site" in decision.reason


def test_allow_star_with_a_deny_list_denies_only_whom_it_names():
    rules = table(ALLOW_READ="*", DENY_READ="10.0.0.0/8")
    assert allowed(rules, Level.READ, None, "127.0.0.1")
    assert not allowed(rules, Level.READ, None, "10.1.2.3")


def test_a_deny_star_denies_everyone():
    rules = table(ALLOW_READ="*", DENY_READ="*")
    assert not allowed(rules, Level.READ, "alice@site")


def test_an_unauthenticated_client_is_unauthenticated_at_unmapped():
    rules = table(ALLOW_WRITE="*@site", ALLOW_READ="*")
    assert not allowed(rules, Level.WRITE, None)
    assert allowed(rules, Level.READ, None)
    assert UNAUTHENTICATED in rules.verify(Level.WRITE, None, "127.0.0.1", NO_NAMES).reason


@pytest.mark.parametrize("host, ip, expected", [
    ("127.0.0.1", "127.0.0.1", True), ("127.0.0.0/8", "127.5.0.1", True), ("127.*", "127.0.0.9", True),
    ("10.0.0.0/255.0.0.0", "10.9.9.9", True), ("10.*", "11.0.0.1", False),
])
def test_hosts_as_addresses_and_networks(host, ip, expected):
    rules = table(ALLOW_ADMINISTRATOR=f"alice@site/{host}")
    assert allowed(rules, Level.ADMINISTRATOR, "alice@site", ip) is expected


def test_hosts_by_name_match_the_peers_names():
    rules = table(ALLOW_ADMINISTRATOR="*.example.org")
    assert rules.needs_hostnames()
    assert allowed(rules, Level.ADMINISTRATOR, "x@y", "192.0.2.1", ("cm.example.org",))
    assert not allowed(rules, Level.ADMINISTRATOR, "x@y", "192.0.2.1", ("cm.example.com",))
    assert not table(ALLOW_READ="*").needs_hostnames()


def test_condor_and_condor_pool_stand_for_each_other():
    """fill_table with USE_POOL_USERNAME_EQUIVALENT (on by default)."""
    rules = table(ALLOW_DAEMON="condor@site")
    assert allowed(rules, Level.DAEMON, "condor_pool@site")


def test_an_allow_level_is_open_to_everyone():
    assert allowed(AuthorizationTable({Level.READ: LevelRules()}), Level.ALLOW, None)
