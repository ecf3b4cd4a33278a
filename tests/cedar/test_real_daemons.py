"""negotiatord's CEDAR against real HTCondor 25.14 daemons (the minipool): IDTOKENS and FS, ECDH
session keys and AES-GCM, private attributes, reused sessions, shared-port and direct addresses,
and credentials a daemon refuses, each refusal named."""

from __future__ import annotations

import asyncio
import os
import shutil
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from negotiatord.cedar.commands import QUERY_STARTD_ADS, QUERY_STARTD_PVT_ADS
from negotiatord.cedar.errors import AuthenticationFailed, NotAuthorized
from negotiatord.cedar.handshake import SessionCache
from negotiatord.cedar.policy import ClientSecurity, Requirement
from tests.cedar.collector_query import query
from tests.minipool import MiniPool, minipool


@pytest.fixture(scope="module")
def pool() -> Iterator[MiniPool]:
    with minipool(cpus=4, pslots=2) as running:
        yield running


@pytest.fixture(scope="module")
def direct_pool() -> Iterator[MiniPool]:
    with minipool(cpus=2, shared_port=False) as running:
        yield running


def _security(tokens: Path | None, methods: tuple[str, ...] = ("IDTOKENS",)) -> ClientSecurity:
    return ClientSecurity(methods=methods, token_directory=tokens, trust_domain="minipool",
                          authentication=Requirement.REQUIRED, encryption=Requirement.REQUIRED,
                          integrity=Requirement.REQUIRED)


def test_private_slot_ads_come_over_an_idtokens_session_with_aes_gcm(pool):
    # QUERY_STARTD_PVT_ADS is registered at NEGOTIATOR level (collector.cpp); the private ad of a
    # consumption-policy p-slot lists its claim ids (NEGOTIATE_PROTOCOL.md, ClaimIdList)
    sessions = SessionCache()
    stream, ads = asyncio.run(query(pool.collector, QUERY_STARTD_PVT_ADS, _security(pool.token_directory()), sessions))
    assert (stream.session.method, stream.session.user) == ("IDTOKENS", "negotiatord@minipool")
    assert stream.stream.crypto
    assert sorted(ad["Name"] for ad in ads) == ["slot1@vm", "slot2@vm"]
    assert all(len(ad["ClaimIdList"].split()) == 2 for ad in ads)


def test_a_second_command_reuses_the_session(pool):
    sessions = SessionCache()
    security = _security(pool.token_directory())
    first, _ = asyncio.run(query(pool.collector, QUERY_STARTD_ADS, security, sessions))
    second, ads = asyncio.run(query(pool.collector, QUERY_STARTD_ADS, security, sessions))
    assert (first.resumed, second.resumed) == (False, True)
    assert second.session.id == first.session.id
    assert {ad["State"] for ad in ads} == {"Unclaimed"}


def test_direct_addresses_without_a_shared_port(direct_pool):
    assert "sock=" not in direct_pool.condor("condor_status", "-collector", "-af", "MyAddress")
    stream, ads = asyncio.run(query(direct_pool.collector, QUERY_STARTD_PVT_ADS,
                                    _security(direct_pool.token_directory()), SessionCache()))
    assert stream.stream.crypto and [ad["Name"] for ad in ads] == ["slot1@vm"]


def test_fs_proves_the_local_user(pool):
    stream, ads = asyncio.run(query(pool.collector, QUERY_STARTD_ADS, _security(None, ("FS",)), SessionCache()))
    assert stream.session.method == "FS" and len(ads) == 2


def test_a_session_the_daemon_forgot_is_renegotiated(pool):
    sessions = SessionCache()
    security = _security(pool.token_directory())
    first, _ = asyncio.run(query(pool.collector, QUERY_STARTD_ADS, security, sessions))
    # as after a restart of the collector: the cached session names an id it does not know
    sessions.store(pool.collector, [QUERY_STARTD_ADS], replace(first.session, id="vm:1:1:1"))
    second, ads = asyncio.run(query(pool.collector, QUERY_STARTD_ADS, security, sessions))
    assert not second.resumed and second.session.id != "vm:1:1:1" and len(ads) == 2


def test_no_token_is_named_with_where_it_was_looked_for(pool, tmp_path):
    empty = tmp_path / "tokens"
    empty.mkdir(mode=0o700)
    with pytest.raises(AuthenticationFailed) as refused:
        asyncio.run(query(pool.collector, QUERY_STARTD_ADS, _security(empty), SessionCache()))
    assert "no usable token" in str(refused.value) and str(empty) in str(refused.value)
    assert pool.collector in str(refused.value)


def test_a_token_file_others_can_read_is_passed_over_as_htcondor_does(pool, tmp_path):
    loose = tmp_path / "loose"
    shutil.copytree(pool.token_directory(), loose)
    os.chmod(loose / "token", 0o644)
    with pytest.raises(AuthenticationFailed, match="must not be readable by others"):
        asyncio.run(query(pool.collector, QUERY_STARTD_ADS, _security(loose), SessionCache()))


def test_a_damaged_token_is_refused_by_the_proof_of_its_key(pool, tmp_path):
    damaged = tmp_path / "damaged"
    damaged.mkdir(mode=0o700)
    header, payload, signature = (pool.token_directory() / "token").read_text().strip().split(".")
    (damaged / "token").write_text(f"{header}.{payload}.{signature[::-1]}\n")
    os.chmod(damaged / "token", 0o600)
    with pytest.raises(AuthenticationFailed, match="signature"):
        asyncio.run(query(pool.collector, QUERY_STARTD_ADS, _security(damaged), SessionCache()))


def test_an_identity_without_negotiator_rights_is_refused_by_name(pool):
    # minipool grants READ to everyone but NEGOTIATOR only to negotiatord@minipool and the daemons
    outsider = pool.token_directory("someone@minipool")
    with pytest.raises(NotAuthorized) as refused:
        asyncio.run(query(pool.collector, QUERY_STARTD_PVT_ADS, _security(outsider), SessionCache()))
    assert "someone@minipool" in str(refused.value) and "DENIED" in str(refused.value)


def test_the_same_refusal_over_fs_says_it_was_unauthenticated_or_who(pool):
    security = replace(_security(None, ("FS",)), authentication=Requirement.REQUIRED)
    stream, _ = asyncio.run(query(pool.collector, QUERY_STARTD_ADS, security, SessionCache()))
    assert stream.session.user
