"""What the command server holds at most: connections served at once, and sessions kept."""

from __future__ import annotations

import asyncio
import time

from negotiatord.cedar.authorization import Level
from negotiatord.cedar.packets import HEADER, MAX_PACKET_BODY
from negotiatord.cedar.server import MAX_MESSAGE_BYTES, CommandServer
from negotiatord.cedar.server_handshake import ServerSession, ServerSessions
from negotiatord.cedar.server_policy import ServerSecurity


def session(number: int, last_used: float, expires: float = float("inf"),
            grants: frozenset[Level] = frozenset()) -> ServerSession:
    return ServerSession(f"s{number}", b"k" * 32, "alice@site", "TOKEN", expires=expires, last_used=last_used,
                         grants=grants)


def test_a_full_cache_drops_expired_then_least_recently_used_sessions_but_never_the_parents():
    now = time.monotonic()
    sessions = ServerSessions(capacity=10)
    sessions.add(session(0, now - 100, grants=frozenset({Level.DAEMON})))    # the parent's, least recent
    sessions.add(session(1, now, expires=now - 1))                            # expired
    for number in range(2, 10):
        sessions.add(session(number, now - 50 + number))
    assert len(sessions) == 10
    sessions.add(session(10, now))          # full: the expired one makes room
    assert len(sessions) == 10
    assert sessions.get("s1") is None
    sessions.add(session(11, now))          # full again: the least recently used go, down to nine tenths
    assert len(sessions) == 10
    assert sessions.get("s0") is not None   # the parent's session stays, though the least recent
    assert sessions.get("s2") is None
    assert all(sessions.get(f"s{number}") is not None for number in range(3, 12))


async def _closed_at_once(port: int) -> bool:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        return await asyncio.wait_for(reader.read(1), 5) == b""
    except ConnectionResetError:
        return True
    finally:
        writer.close()


def test_connections_beyond_the_limit_are_closed_at_once_and_counted():
    async def scenario() -> None:
        server = CommandServer(ServerSecurity())
        server.max_connections = 2
        _, port = await server.listen("127.0.0.1", 0)
        held = [await asyncio.open_connection("127.0.0.1", port) for _ in range(2)]
        await asyncio.sleep(0.2)                  # both are being served: each waits for its command
        assert await _closed_at_once(port)
        assert server.refused_connections == 1
        for _, writer in held:
            writer.close()
        await asyncio.sleep(0.2)                  # the held ones end; a new connection is served again
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        try:
            assert await _still_open_after(reader, 0.3)
        finally:
            writer.close()
        assert server.refused_connections == 1
        await server.close()

    asyncio.run(scenario())


async def _still_open_after(reader: asyncio.StreamReader, seconds: float) -> bool:
    try:
        await asyncio.wait_for(reader.read(1), seconds)
    except TimeoutError:
        return True
    return False


def test_a_message_longer_than_a_command_needs_is_dropped_unread():
    """Packets that never end a message: the server stops reading past MAX_MESSAGE_BYTES, not at
    the command's timeout."""
    async def scenario() -> None:
        server = CommandServer(ServerSecurity())
        _, port = await server.listen("127.0.0.1", 0)
        _, writer = await asyncio.open_connection("127.0.0.1", port)
        packet = HEADER.pack(0, MAX_PACKET_BODY) + b"\0" * MAX_PACKET_BODY     # not the last of its message
        sent = 0
        try:
            while sent < 8 * MAX_MESSAGE_BYTES:
                writer.write(packet)
                await asyncio.wait_for(writer.drain(), 5)
                sent += len(packet)
        except ConnectionError:
            pass
        assert sent < 8 * MAX_MESSAGE_BYTES
        writer.close()
        await server.close()

    asyncio.run(scenario())
