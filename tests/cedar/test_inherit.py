"""What ``condor_master`` hands a daemon it starts, read as ``DaemonCore::Inherit``
(``src/condor_daemon_core.V6/daemon_core.cpp``) reads ``CONDOR_INHERIT`` and
``CONDOR_PRIVATE_INHERIT``; the strings are built as ``Create_Process`` and ``Sock::serialize`` write them."""

from __future__ import annotations

import pytest

from negotiatord.cedar.inherit import InheritError, parse, session, take
from negotiatord.cedar.keys import hkdf_sha256

MASTER = "<127.0.0.1:9618?addrs=127.0.0.1-9618&alias=cm&noUDP&sock=master_100_abcd>"
SOCK = "{fd}*1*0*0*0*0***0*<127.0.0.1:0>*0*0*0*"


def test_behind_a_shared_port():
    text = f"100 {MASTER} 0 SharedPort:/var/lock/condor/daemon_sock/negotiator_100_abcd*" + SOCK.format(fd=7) + " 0"
    inherited = parse(text)
    assert (inherited.parent_pid, inherited.parent_address) == (100, MASTER)
    assert (inherited.shared_port_socket, inherited.shared_port_id) == (7, "negotiator_100_abcd")
    assert inherited.command_sockets == () and inherited.family is None


def test_with_command_sockets_of_its_own():
    text = f"100 {MASTER} 0 1 {SOCK.format(fd=5)} 2 {SOCK.format(fd=6)} 0"
    inherited = parse(text)
    assert (inherited.command_sockets, inherited.udp_sockets, inherited.shared_port_socket) == ((5,), (6,), None)


def test_sessions_and_aes_chosen_over_the_exported_old_protocol():
    private = (' SessionKey:a1b2#[Integrity="YES";Encryption="YES";ValidCommands="60000,60008";]0123'
               ' FamilySessionKey:family:99#[Integrity="YES";CryptoMethods="BLOWFISH";'
               'CryptoMethodsList="AES.BLOWFISH.3DES";SessionExpires=0;]beef')
    inherited = parse(f"100 {MASTER} 0 0", private)
    assert inherited.family is not None and inherited.parent_session is not None
    family = inherited.family
    assert (family.id, family.key_text, family.crypto_method) == ("family:99", "beef", "AES")
    # CreateNonNegotiatedSecuritySession derives an AES-GCM key from the key text by HKDF
    assert inherited.family.key == hkdf_sha256(b"beef", b"htcondor", b"keygen", 32)
    assert inherited.parent_session.policy["ValidCommands"] == "60000,60008"
    assert inherited.family.expires() == float("inf")


def test_taken_out_of_the_environment():
    environ = {"CONDOR_INHERIT": f"100 {MASTER} 0 0", "CONDOR_PRIVATE_INHERIT": "", "PATH": "/bin"}
    assert take(environ) is not None and environ == {"PATH": "/bin"}
    assert take({"PATH": "/bin"}) is None


@pytest.mark.parametrize("text", ["", "x <a:1>", f"100 {MASTER} 0 SharedPort:name*notanfd 0"])
def test_what_daemoncore_would_not_write_is_refused(text):
    with pytest.raises(InheritError):
        if not text:
            raise InheritError("empty")
        parse(text)


def test_a_session_without_its_hash_is_refused():
    with pytest.raises(InheritError):
        session("no-hash-here")
