"""A cycle in a child process forked for it (:func:`negotiatord.runtime.run_cycle_in_child`): the
very cycle :func:`run_cycle` negotiates in-process, with what the child read of the ads handed back
to the caller's descriptions, as an in-process cycle leaves them."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from negotiatord.accountant import AccountantState
from negotiatord.ads import read_ads
from negotiatord.fastpath.compiler.descriptions import AdDescriptions
from negotiatord.pool.builder import build_snapshot
from negotiatord.runtime import run_cycle, run_cycle_in_child
from negotiatord.settings import load_settings

ROOT = Path(__file__).resolve().parent.parent
NOW = 1790000000


@pytest.fixture(scope="module")
def sample():
    settings = load_settings(ROOT / "config" / "default.conf")
    snapshot = build_snapshot(list(read_ads(ROOT / "samples" / "slots.ads").ads),
                              list(read_ads(ROOT / "samples" / "jobs.ads").ads), settings)
    return snapshot, settings


def _records(snapshot) -> list[object]:
    return [*snapshot.table.slots, *(autocluster.representative for autocluster in snapshot.autoclusters)]


def test_the_child_negotiates_the_cycle_run_cycle_negotiates(sample):
    snapshot, settings = sample
    here = run_cycle(snapshot, AccountantState(), settings, NOW)
    children: list[int] = []
    child = run_cycle_in_child(snapshot, AccountantState(), settings, NOW, started=children.append)
    assert children == [child.pid] and child.pid != os.getpid()
    assert child.result.matches and child.result.matches == here.matches
    assert child.result.charges == here.charges and child.result.usage == here.usage
    assert child.result.problems == here.problems
    assert child.private_bytes is not None and child.private_bytes > 0 and child.overhead_s >= 0


def test_what_the_child_read_of_the_ads_is_filed_with_the_caller(sample):
    # the next cycle must not read every ad again: the caller's descriptions end up as an
    # in-process cycle leaves them, under the caller's own records
    snapshot, settings = sample
    in_process, from_child = AdDescriptions(), AdDescriptions()
    run_cycle(snapshot, AccountantState(), settings, NOW, descriptions=in_process)
    run_cycle_in_child(snapshot, AccountantState(), settings, NOW, from_child)
    read = [record for record in _records(snapshot) if in_process.of(record)]
    assert read, "the cycle reads the slot ads"
    for record in _records(snapshot):
        assert from_child.of(record) == in_process.of(record)
    # a second child starts from them and reads nothing new
    again = run_cycle_in_child(snapshot, AccountantState(), settings, NOW, from_child)
    assert again.result.matches == run_cycle(snapshot, AccountantState(), settings, NOW).matches
    for record in _records(snapshot):
        assert from_child.of(record) == in_process.of(record)
