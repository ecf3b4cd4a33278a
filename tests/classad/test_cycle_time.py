"""mentions_current_time: whether an ad's text names CurrentTime, which HTCondor's ClassAd library
resolves to the clock in an ad that lacks it (classad/cycle_time.py)."""

import re

from hypothesis import given
from hypothesis import strategies as st

from negotiatord.classad.cycle_time import mentions_current_time

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
