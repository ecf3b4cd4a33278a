"""The value encoding of a CEDAR message, checked against the byte layouts ``stream.cpp`` writes."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from negotiatord.cedar.wire import MessageReader, MessageWriter, WireError


def test_every_integer_travels_as_eight_big_endian_bytes():
    # Stream::put(int) widens to long long and writes it in network order
    assert MessageWriter().put_int(12345).payload() == bytes.fromhex("0000000000003039")
    assert MessageWriter().put_int(-1).payload() == b"\xff" * 8


def test_a_double_is_frexp_mantissa_times_two_to_the_31_minus_1_then_the_exponent():
    # Stream::put(double): frac = (int)(frexp(d, &exp) * FRAC_CONST), then exp
    payload = MessageWriter().put_double(1.0).payload()
    mantissa, exponent = math.frexp(1.0)
    assert payload == MessageWriter().put_int(int(mantissa * 2147483647)).put_int(exponent).payload()


@given(st.floats(allow_nan=False, allow_infinity=False, min_value=-1e300, max_value=1e300))
def test_a_double_comes_back_within_the_encodings_precision(value):
    back = MessageReader(MessageWriter().put_double(value).payload()).get_double()
    assert abs(back - value) <= abs(value) * 2 ** -30 + 1e-300


def test_a_string_is_nul_terminated_and_length_prefixed_only_in_crypto_mode():
    # Stream::put(char const*): the length (NUL included) goes first only while get_encryption()
    assert MessageWriter().put_string("ab").payload() == b"ab\0"
    assert MessageWriter(crypto=True).put_string("ab").payload() == bytes.fromhex("0000000000000003") + b"ab\0"
    assert MessageWriter().put_secret("ab").payload() == bytes.fromhex("0000000000000003") + b"ab\0"


@given(st.text(alphabet=st.characters(blacklist_characters="\0", blacklist_categories=("Cs",))), st.booleans())
def test_strings_round_trip_in_either_mode(text, crypto):
    reader = MessageReader(MessageWriter(crypto=crypto).put_string(text).put_int(7).payload(), crypto=crypto)
    assert reader.get_string() == text
    assert reader.get_int() == 7
    assert reader.at_end()


def test_htcondors_null_string_reads_as_empty():
    # a lone 0xFF byte is how put_nullstr sends NULL (stream.cpp, get_string_ptr)
    reader = MessageReader(b"\xff" + b"x\0")
    assert reader.get_string() == ""
    assert reader.get_string() == "x"


def test_a_short_message_is_a_wire_error_not_a_crash():
    with pytest.raises(WireError):
        MessageReader(b"\0\0\0").get_int()
    with pytest.raises(WireError):
        MessageReader(b"no terminator").get_string()
    with pytest.raises(WireError):
        MessageReader(bytes.fromhex("7fffffffffffffff"), crypto=True).get_string()


def test_an_int_field_keeps_what_a_c_int_would():
    # Stream::get(int &) reads a long long and narrows it
    assert MessageReader(MessageWriter().put_int(-2).payload()).get_int32() == -2
    assert MessageReader(MessageWriter().put_int(2 ** 32 + 5).payload()).get_int32() == 5
