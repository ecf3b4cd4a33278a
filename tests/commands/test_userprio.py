"""``negotiatord userprio``'s table, checked against condor_userprio's layout.

The reference is HTCondor's ``src/condor_tools/user_prio.cpp`` (``PrintInfo``, ``FormatFloat``,
``format_time_nosecs``) and the manual's condor_userprio page: groups first with their users
indented below them, users by effective priority, only customers active in the last day unless
``-allusers``, and a footer with the number of users and their totals.
"""

from __future__ import annotations

from typing import Any

from negotiatord.commands.userprio import render

NOW = 1_750_000_000.0


def _customer(name: str, group: str, *, is_group: bool = False, priority: float = 500.0, factor: float = 1000.0,
              in_use: float = 0.0, usage_s: float = 0.0, last: float | None = NOW) -> dict[str, Any]:
    return {"name": name, "group": group, "is_group": is_group, "effective_priority": priority,
            "factor": factor, "weighted_in_use": in_use, "accumulated_usage_s": usage_s,
            "last_usage_time": last}


def _document(customers: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "now": NOW,
        "last_update": NOW - 60,
        "groups": [
            {"name": "<none>", "effective_quota": 100.0, "config_quota": None, "surplus": "yes"},
            {"name": "group_physics", "effective_quota": 60.0, "config_quota": 60.0, "surplus": "no"},
        ],
        "customers": customers,
    }


CUSTOMERS = [
    _customer("group_physics", "group_physics", is_group=True, in_use=12, usage_s=7200),
    _customer("group_physics.bob@site", "group_physics", priority=900.5, in_use=4, usage_s=3600),
    _customer("group_physics.alice@site", "group_physics", priority=600.25, in_use=8, usage_s=3600),
    _customer("carol@site", "<none>", priority=1000.0, in_use=0, usage_s=0, last=NOW - 2 * 86400),
]


def _rows(table: str) -> list[str]:
    lines = table.splitlines()
    rules = [i for i, line in enumerate(lines) if set(line) <= {"-", " "} and line]
    return lines[rules[0] + 1: rules[1]]


def test_groups_hold_their_users_by_effective_priority_without_the_group_prefix() -> None:
    rows = _rows(render(_document(CUSTOMERS), all_users=False))
    names = [row.split()[0] if not row.startswith("  ") else "  " + row.split()[0] for row in rows]
    # user_prio.cpp: a group's row, then its users indented by two, lowest effective priority first
    assert names == ["group_physics", "  alice@site", "  bob@site"]


def test_only_customers_active_in_the_last_day_unless_allusers() -> None:
    quiet = render(_document(CUSTOMERS), all_users=False)
    assert "carol@site" not in quiet
    assert quiet.splitlines()[-1].startswith("Number of users: 2 ")
    everyone = render(_document(CUSTOMERS), all_users=True)
    assert "  carol@site" in everyone
    assert everyone.splitlines()[-1].startswith("Number of users: 3 ")


def test_columns_are_condor_userprios_fixed_point_fields() -> None:
    table = render(_document(CUSTOMERS), all_users=False)
    alice = next(row for row in _rows(table) if "alice" in row).split()
    # Effective Priority %12.2f, Priority Factor %9.2f, Wghted In Use %6.0f, Total Usage %12.2f
    # (weighted hours), Time Since Last Usage as days+hh:mm with <now> for none
    assert alice[1:] == ["600.25", "1000.00", "8", "1.00", "<now>"]
    physics = next(row for row in _rows(table) if row.startswith("group_physics")).split()
    # a group row: Effective Quota, Config Quota, Use Surplus, then only its usage columns
    assert physics[1:] == ["60.00", "60.00", "no", "12", "2.00", "<now>"]
    footer = table.splitlines()[-1].split()
    assert footer[4:6] == ["12", "2.00"]            # the users' totals: in use and usage hours
    assert footer[6] == "1+00:00"                   # the active window: one day


def test_without_groups_there_are_no_quota_columns() -> None:
    document = _document([_customer("dave@site", "<none>", priority=750.0, in_use=3, usage_s=1800)])
    document["groups"] = document["groups"][:1]
    lines = render(document, all_users=False).splitlines()
    assert "Quota" not in lines[1] and "Effective" in lines[1]
    assert _rows("\n".join(lines))[1].split() == ["dave@site", "750.00", "1000.00", "3", "0.50", "<now>"]


def test_a_value_too_wide_for_its_column_falls_back_to_g_format() -> None:
    huge = _customer("erin@site", "<none>", priority=1.5e15, in_use=1)
    row = next(r for r in _rows(render(_document([huge]), all_users=False)) if "erin" in r)
    assert row.split()[1] == f"{1.5e15:.6g}"


def test_running_quota_preemption_timers_are_listed_below_the_table():
    """The accountant document's quota_timers (kept by the daemon's accountant) after the users."""
    document = _document(CUSTOMERS)
    document["quota_timers"] = [{"group": "group_physics", "maximum": {"cpus": 8.0, "gpus": 1.0},
                                 "delay_s": 600.0, "started": NOW - 300, "due": NOW + 300, "due_in_s": 300.0},
                                {"group": "group_bio", "maximum": {"memory": 4096.0}, "delay_s": 60.0,
                                 "started": NOW - 120, "due": NOW - 60, "due_in_s": -60.0}]
    lines = render(document, all_users=False).splitlines()
    at = lines.index("Quota preemption timers:")
    assert lines[at + 1].startswith("  group_physics: maximum cpus:8, gpus:1, started ")
    assert lines[at + 1].endswith("due in 0+00:05")
    assert lines[at + 2].endswith("due now")
    assert "Quota preemption timers:" not in render(_document(CUSTOMERS), all_users=False)
