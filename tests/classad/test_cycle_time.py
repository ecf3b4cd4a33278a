"""mentions_current_time: whether an ad's text names CurrentTime, which HTCondor's ClassAd library
resolves to the clock in an ad that lacks it (classad/cycle_time.py); and the copies of an ad
frozen at the cycle's clock, whose answers classad2 gives against the ad at that clock."""

import re

import classad2
import pytest
from hypothesis import given
from hypothesis import strategies as st

from negotiatord.classad.cycle_time import frozen_ad, mentions_current_time, private_frozen_ad

# The definition: the name as a whole word, in any case. Python's re is the reference here, not
# code of this project: \b and IGNORECASE are its documented semantics for str patterns.
_WORD = re.compile(r"\bCurrentTime\b", re.IGNORECASE)

_PIECES = st.sampled_from(["CurrentTime", "currenttime", "CURRENTTIME", "MyCurrentTime", "CurrentTimeX", "_",
                           " ", "(", "+", "1", "é", "٣", "ß", "K", "\n", "=", '"', "Current", "Time"])


@given(st.lists(_PIECES, max_size=8).map("".join))
def test_agrees_with_the_case_blind_word_search(text: str) -> None:
    assert mentions_current_time(text) == (_WORD.search(text) is not None)


def test_a_name_that_merely_contains_it_is_no_mention() -> None:
    assert not mentions_current_time("Start = MyCurrentTime > 5 && éCurrentTime && CurrentTime_1 && _CurrentTime")
    assert mentions_current_time("Start = MyCurrentTime > 5 && (CurrentTime - EnteredCurrentState) < 60")
    assert mentions_current_time("Start = 1 + currenttime")


NOW = 1_700_000_000
_CLOCK_READERS = {
    "time() call": 'Fresh = time() - Started < 60; Started = 1699999990; Label = "time() in a string"',
    "CurrentTime undefined": "Fresh = CurrentTime - Started < 60; Started = 1699999990",
    "its own CurrentTime": "Fresh = CurrentTime - Started < 60; Started = 1699999990; CurrentTime = 1699999999",
    "no clock": "Fresh = Started > 0; Started = 1699999990",
}


@pytest.mark.parametrize("body", _CLOCK_READERS.values(), ids=_CLOCK_READERS.keys())
def test_a_private_frozen_copy_answers_as_the_frozen_ad_and_leaves_the_ad_alone(body: str) -> None:
    ad = classad2.ClassAd(f"[{body}]")
    before = ad.printOld()
    frozen, private = frozen_ad(ad, NOW), private_frozen_ad(ad, NOW)
    assert private is not ad
    assert {name: str(private.lookup(name)) for name in private} == {name: str(frozen.lookup(name)) for name in frozen}
    assert private.eval("Fresh") == frozen.eval("Fresh")
    assert private.get("Label") == ad.get("Label")          # a string literal is not rewritten
    private["Started"] = 0
    assert ad.printOld() == before and ad.eval("Started") == 1699999990


def test_frozen_copies_read_the_cycles_clock_where_the_ad_would_read_the_wall_clock() -> None:
    """classad2 is the reference: the expression with ``now`` written in for the clock."""
    assert private_frozen_ad(classad2.ClassAd("[Fresh = time() - 1699999990]"), NOW).eval("Fresh") == 10
    assert private_frozen_ad(classad2.ClassAd("[Fresh = CurrentTime - 1699999990]"), NOW).eval("Fresh") == 10
    own = classad2.ClassAd("[Fresh = CurrentTime - 1699999990; CurrentTime = 1699999999]")
    assert private_frozen_ad(own, NOW).eval("Fresh") == 9
