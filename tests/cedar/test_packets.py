"""CEDAR framing and AES-GCM packets between two ends of a socket pair.

The layout checked here is ``ReliSock``'s (reli_sock.cpp) and ``Condor_Crypt_AESGCM``'s: a 5-byte
header (end flag, big-endian length), a 16-byte IV before the first encrypted packet only, a 16-byte
tag after every one, and the clear handshake bound into the first packet's associated data. The
same code talks to real daemons in ``test_real_daemons.py``; this file pins the edge cases.
"""

from __future__ import annotations

import asyncio
import os
import socket

import pytest

from negotiatord.cedar.packets import HEADER, SEND_PACKET_BODY, PacketError, PacketStream


async def _pair() -> tuple[PacketStream, PacketStream]:
    left, right = socket.socketpair()
    a = PacketStream(*await asyncio.open_connection(sock=left))
    b = PacketStream(*await asyncio.open_connection(sock=right))
    return a, b


def test_a_clear_message_is_one_packet_with_its_header():
    async def scenario():
        a, b = await _pair()
        await a.send_message(b"hello")
        raw = await b.reader.readexactly(HEADER.size + 5)
        assert raw == b"\x01\x00\x00\x00\x05hello"
    asyncio.run(scenario())


def test_a_long_message_is_cut_into_packets_and_put_back_together():
    async def scenario():
        a, b = await _pair()
        payload = os.urandom(3 * SEND_PACKET_BODY + 17)
        a.write_message(payload)
        assert await b.receive_message() == payload
    asyncio.run(scenario())


def test_encrypted_packets_round_trip_and_only_the_first_carries_the_iv():
    async def scenario():
        a, b = await _pair()
        await a.send_message(b"clear handshake")
        assert await b.receive_message() == b"clear handshake"
        key = os.urandom(32)
        a.set_session_key(key)
        b.set_session_key(key)
        a.write_message(b"x" * 10)
        a.write_message(b"y" * 10)
        await a.drain()
        first = await b.reader.readexactly(HEADER.size + 16 + 10 + 16)
        assert HEADER.unpack(first[:HEADER.size]) == (1, 42)
        second = await b.reader.readexactly(HEADER.size + 10 + 16)
        assert HEADER.unpack(second[:HEADER.size]) == (1, 26)
    asyncio.run(scenario())


def test_both_ends_agree_in_both_directions():
    async def scenario():
        a, b = await _pair()
        await a.send_message(b"ping")
        await b.receive_message()
        await b.send_message(b"pong")
        await a.receive_message()
        key = os.urandom(32)
        a.set_session_key(key)
        b.set_session_key(key)
        for n in range(5):
            await a.send_message(b"a%d" % n)
            await b.send_message(b"b%d" % n)
            assert await b.receive_message() == b"a%d" % n
            assert await a.receive_message() == b"b%d" % n
    asyncio.run(scenario())


def test_an_altered_handshake_fails_the_first_decryption():
    # the first packet's associated data binds the digests of the clear handshake: a byte the two
    # ends saw differently (a replayed or altered handshake) makes AES-GCM refuse the packet
    async def scenario():
        a, b = await _pair()
        await a.send_message(b"hello")
        await b.receive_message()
        b._received.reset()        # b now believes it saw nothing in clear
        key = os.urandom(32)
        a.set_session_key(key)
        b.set_session_key(key)
        await a.send_message(b"secret")
        with pytest.raises(PacketError, match="authentication"):
            await b.receive_message()
    asyncio.run(scenario())


def test_a_wrong_key_is_refused():
    async def scenario():
        a, b = await _pair()
        a.set_session_key(os.urandom(32))
        b.set_session_key(os.urandom(32))
        await a.send_message(b"secret")
        with pytest.raises(PacketError):
            await b.receive_message()
    asyncio.run(scenario())


def test_a_packet_header_htcondor_would_refuse_is_refused():
    async def scenario():
        a, b = await _pair()
        a.writer.write(b"\x0b\x00\x00\x00\x01x")    # end flag beyond ReliSock's 0..10
        await a.drain()
        with pytest.raises(PacketError, match="not recognised"):
            await b.receive_message()
    asyncio.run(scenario())
