"""ClassAds in a message: HTCondor's own text for each attribute, private attributes as
``classad_oldnew.cpp`` treats them, and values that come back as classad2 reads them."""

from __future__ import annotations

import classad2
from hypothesis import given
from hypothesis import strategies as st

from negotiatord.cedar.classads import SECRET_MARKER, get_classad, is_private, put_classad
from negotiatord.cedar.wire import MessageReader, MessageWriter


def _round_trip(ad: classad2.ClassAd, *, crypto: bool = True, private: bool = True) -> classad2.ClassAd:
    writer = MessageWriter(crypto=crypto)
    put_classad(writer, ad, private=private)
    reader = MessageReader(writer.payload(), crypto=crypto)
    back = get_classad(reader)
    assert reader.at_end()
    return back


def _slot() -> classad2.ClassAd:
    ad = classad2.ClassAd()
    ad["Name"] = "slot1@vm"
    ad["Cpus"] = 8
    ad["ClaimId"] = "<127.0.0.1:9618>#1#1#..."
    ad["ClaimIdList"] = "a b c"
    ad["_condor_privSecret"] = "x"
    ad["Requirements"] = classad2.ExprTree('START && TARGET.RequestCpus <= MY.Cpus')
    return ad


def test_an_ad_is_its_attribute_count_its_lines_then_two_empty_strings():
    ad = classad2.ClassAd({"A": 1, "B": "x"})
    writer = MessageWriter()
    put_classad(writer, ad)
    expected = MessageWriter().put_int(2).put_string("A = 1").put_string('B = "x"').put_string("").put_string("")
    assert writer.payload() == expected.payload()


def test_private_attributes_are_those_htcondor_names():
    # ClassAdPrivateAttrs in compat_classad.cpp, and the _condor_priv prefix (V2)
    for name in ("ClaimId", "claimidlist", "Capability", "ChildClaimIds", "ClaimIds", "TransferKey", "_condor_privX"):
        assert is_private(name)
    for name in ("Name", "PublicClaimId", "Cpus"):
        assert not is_private(name)


def test_a_slot_sent_to_a_schedd_leaves_its_private_attributes_out():
    back = _round_trip(_slot(), private=False)
    assert set(back.keys()) == {"Name", "Cpus", "Requirements"}
    assert back.eval("Cpus") == 8


def test_private_attributes_sent_in_clear_mode_go_as_secrets():
    writer = MessageWriter(crypto=False)
    put_classad(writer, _slot())
    assert (SECRET_MARKER.encode() + b"\0") in writer.payload()
    back = get_classad(MessageReader(writer.payload()))
    assert back.eval("ClaimIdList") == "a b c"


_text = st.text(alphabet=st.characters(blacklist_characters="\0", blacklist_categories=("Cs",)), max_size=40)


# the ClassAd lexer's reserved words (classad's lexer.cpp) are no attribute names an ad prints bare
_RESERVED = {"true", "false", "undefined", "error", "is", "isnt", "parent"}
_names = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,12}", fullmatch=True).filter(
    lambda name: name.lower() not in _RESERVED)


@given(st.dictionaries(_names,
                       st.one_of(_text, st.integers(-2 ** 62, 2 ** 62), st.booleans(),
                                 st.floats(allow_nan=False, allow_infinity=False, width=32)),
                       max_size=8))
def test_values_come_back_as_classad2_reads_htcondors_text_of_them(values):
    # the reference is classad2 reading printOld's text: what HTCondor puts on the wire (reals
    # included, which the old syntax prints with 15 significant digits); classad2's old parser
    # cannot read a string holding a newline, which HTCondor's reads as written
    ad = classad2.ClassAd()
    for name, value in values.items():
        ad[name] = value
    back = _round_trip(ad)
    assert {name.lower(): back.eval(name) for name in back.keys()} == {
        name.lower(): _as_htcondor_reads(ad, name) for name in ad.keys()}


def _as_htcondor_reads(ad: classad2.ClassAd, name: str) -> object:
    text = classad2.ClassAd({name: ad.lookup(name)}).printOld()
    parsed = classad2.parseOne(text, classad2.ParserType.Old)
    if name in parsed:
        return parsed.eval(name)
    assert "\n" in str(ad.eval(name))
    return ad.eval(name)


def test_strings_with_newlines_quotes_and_backslashes_survive():
    # the old syntax writes a newline as it is and escapes only quotes (printOld)
    ad = classad2.ClassAd()
    ad["Reason"] = 'line one\nline "two" back\\slash'
    ad["Next"] = 2
    back = _round_trip(ad)
    assert back.eval("Reason") == 'line one\nline "two" back\\slash'
    assert back.eval("Next") == 2


def test_expressions_keep_their_meaning():
    ad = classad2.ClassAd()
    ad["Requirements"] = classad2.ExprTree('TARGET.Cpus >= MY.RequestCpus && regexp("a.*", Name)')
    ad["List"] = classad2.ExprTree('{1, "a", undefined}')
    ad["Nested"] = classad2.ExprTree('[x = 1; y = "s"]')
    back = _round_trip(ad)
    for name in ("Requirements", "List", "Nested"):
        assert str(back.lookup(name)) == str(ad.lookup(name))
