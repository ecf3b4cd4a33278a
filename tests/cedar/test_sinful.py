"""Daemon addresses as ``condor_sinful.cpp`` reads them, on the forms real daemons advertise."""

from __future__ import annotations

import pytest

from negotiatord.cedar.sinful import BadAddress, parse_sinful


def test_a_shared_port_address_names_the_daemon_behind_the_port():
    # a minipool schedd's MyAddress
    sinful = parse_sinful("<127.0.0.1:35150?addrs=127.0.0.1-35150&alias=vm&noUDP&sock=schedd_2626_1c32>")
    assert (sinful.host, sinful.port) == ("127.0.0.1", 35150)
    assert (sinful.shared_port_id, sinful.alias) == ("schedd_2626_1c32", "vm")


def test_a_direct_address_and_a_bare_host_port():
    assert parse_sinful("<10.0.0.5:9618>").shared_port_id is None
    bare = parse_sinful("cm.example.org:9618")
    assert (bare.host, bare.port) == ("cm.example.org", 9618)
    assert parse_sinful("<[::1]:9618?sock=collector>").host == "::1"


def test_url_encoded_parameters_are_decoded():
    assert parse_sinful("<1.2.3.4:9618?sock=a%2Bb>").shared_port_id == "a+b"


@pytest.mark.parametrize("text", ["", "<nohost>", "<1.2.3.4:port>", "1.2.3.4:70000"])
def test_what_is_not_an_address_is_named(text):
    with pytest.raises(BadAddress, match="not a daemon address"):
        parse_sinful(text)
