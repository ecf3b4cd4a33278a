"""How many of a request's jobs its concurrency limits let start, as the demand estimate counts them."""

from negotiatord.cycle.concurrency import ConcurrencyLedger, Headroom
from negotiatord.pool.jobs import parse_concurrency_limits
from tests.builders import settings

CONFIG = settings(concurrency_limits={"license": 5, "db": 4})


def test_room_counts_jobs_one_after_another_as_the_match_time_check_would():
    ledger = ConcurrencyLedger(CONFIG, ["license"])
    assert ledger.room_for(parse_concurrency_limits("license"), 10, {}) == 4
    assert ledger.room_for(parse_concurrency_limits("license:2"), 10, {}) == 2
    assert ledger.room_for(parse_concurrency_limits("license, db:3"), 10, {}) == 1
    # an entry named twice: each entry is checked alone, and the job takes both
    assert ledger.room_for(parse_concurrency_limits("db, db"), 10, {}) == 2
    assert ledger.room_for((), 7, {}) == 7
    assert ledger.room_for(parse_concurrency_limits("license"), 10, {"license": 4}) == 0


def test_room_agrees_with_the_match_time_check():
    for text in ("license", "license:2", "db, db:2", "license:0.5, db"):
        limits = parse_concurrency_limits(text)
        ledger = ConcurrencyLedger(CONFIG, [])
        started = 0
        while ledger.blocking(limits) is None:
            ledger.take(limits)
            started += 1
        assert ConcurrencyLedger(CONFIG, []).room_for(limits, 100, {}) == started, text


def test_headroom_drawn_by_one_request_is_not_counted_again():
    headroom = Headroom(ConcurrencyLedger(CONFIG, []))
    assert headroom.draw(parse_concurrency_limits("license"), 3) == 3
    assert headroom.draw(parse_concurrency_limits("license:2"), 3) == 1
    assert headroom.draw(parse_concurrency_limits("license"), 3) == 0
    assert headroom.draw(parse_concurrency_limits("db"), 3) == 3


def test_an_increment_too_small_to_divide_by_bounds_nothing():
    """``lic:1e-320`` is a positive increment (HTCondor's ParseConcurrencyLimit keeps it); the
    room it leaves overflows a float, so the limit bounds no job count and the estimate goes on."""
    limits = parse_concurrency_limits("license:1e-320")
    assert ConcurrencyLedger(CONFIG, []).room_for(limits, 10, {}) == 10
    assert Headroom(ConcurrencyLedger(CONFIG, [])).draw(limits, 3) == 3
