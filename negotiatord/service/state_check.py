"""The accountant and the match log checked against each other before the daemon serves.

Each cycle is committed in the accountant (its id, its charges, and the match log's highest
sequence number once its matches are staged) and published in the match log (its matches, under
its id). A file lost, emptied, or restored from an older copy breaks that agreement silently: a
fresh accountant would commit cycle 1 again while the match log holds the old cycle 1, and a fresh
match log would give again sequence numbers its readers have seen. So the daemon starts only when:

* SQLite's ``PRAGMA quick_check`` finds nothing wrong with either file;
* no match the match log published belongs to a cycle the accountant has not committed;
* the match log has given every sequence number the accountant has seen it give.

Otherwise it refuses, naming the file and what differs. An administrator who starts over on
purpose (a lost accountant, priorities starting afresh) starts once with
``--accept-state-mismatch``: the accountant takes the match log's highest cycle as committed and
the match log goes on after the accountant's highest sequence number, so no cycle id or sequence
number is ever given twice. A damaged file is never accepted: it is restored, or moved aside.
"""

from __future__ import annotations

from negotiatord.accountant import AccountantStore
from negotiatord.publish.matchlog import MatchLog

START_OVER = "--accept-state-mismatch"


class StateMismatch(Exception):
    """The accountant and the match log cannot be used together; the message says why."""


def check_state(accountant: AccountantStore, matchlog: MatchLog, accept_mismatch: bool, now: float) -> list[str]:
    """Refuse (StateMismatch) a damaged file, or files that disagree unless ``accept_mismatch``;
    with it, make them agree again and return what was accepted, for the log."""
    for path, problems in ((accountant.path, accountant.quick_check()), (matchlog.path, matchlog.quick_check())):
        if problems:
            raise StateMismatch(
                f"{path}: the database is damaged (PRAGMA quick_check: {'; '.join(problems)}); restore it from "
                f"a backup, or move it aside with its -wal and -shm files and start with {START_OVER}")
    committed, published = accountant.last_cycle_id(), matchlog.highest_published_cycle()
    seen, given = accountant.last_match_seq(), matchlog.sequence()
    mismatches = []
    if published > committed:
        mismatches.append(
            f"{accountant.path}: the last cycle committed is {committed}, but the match log {matchlog.path} "
            f"published matches of cycle {published}: the accountant was lost or rolled back, and cycle ids "
            "would be given again")
    if seen > given:
        mismatches.append(
            f"{matchlog.path}: the highest sequence number it gave is {given}, but the accountant "
            f"{accountant.path} saw it give sequence number {seen}: the match log was lost or rolled back, "
            "and its readers would be handed numbers they have seen")
    if not mismatches:
        return []
    if not accept_mismatch:
        raise StateMismatch("; ".join(mismatches) + f". To start over on purpose, start once with {START_OVER}: "
                            "cycle ids and sequence numbers then go on after the highest either file holds")
    if published > committed:
        accountant.continue_after(published, given, now)
    if seen > given:
        matchlog.continue_after(seen)
    return mismatches
