"""Messages on a TCP stream: CEDAR's packet framing and its AES-GCM encryption.

Framing follows ``ReliSock`` (``src/condor_io/reli_sock.cpp``). A message travels as one or more
packets, each a 5-byte header (an end flag, 1 on a message's last packet and 0 before it; the
body's length as a 4-byte big-endian integer) and the body. A receiver refuses a packet body over
1 MiB, so a long message is cut into packets well below that.

Encryption follows ``Condor_Crypt_AESGCM`` (``condor_crypt_aesgcm.cpp``) as ReliSock applies it,
per packet, once a session key is set and crypto mode is on:

* AES-256-GCM with a 16-byte IV. Each direction draws a random base IV; the IV of the n-th packet
  (from 0) is the base IV with its first 4 bytes, read as a big-endian integer, increased by n.
  The first packet in each direction carries the base IV in clear before the ciphertext; every
  packet ends with the 16-byte tag.
* The header's length counts IV, ciphertext and tag. The header is the associated data of every
  packet; the first packet in each direction also binds the handshake: its associated data is
  SHA-256 over every byte this side sent in clear before encryption began, SHA-256 over every byte
  it received in clear, then the header (32 zero bytes stand for a direction that carried
  nothing). A replayed or altered handshake therefore fails the first decryption.

The digests start after the shared-port preamble (``SharedPortClient::sendSharedPortID`` resets
them, since ``condor_shared_port`` swallows that message).
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import struct

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

HEADER = struct.Struct(">BI")
MAX_PACKET_BODY = 1 << 20          # ReliSock's max_packet_size
SEND_PACKET_BODY = 1 << 16         # what this side puts in one packet
IV_BYTES = 16
TAG_BYTES = 16
DIGEST_BYTES = 32
HANDSHAKE_DIGEST_LIMIT = 1 << 20   # ReliSock stops digesting after 1 MiB


class PacketError(ValueError):
    """A packet that breaks the framing or fails decryption."""


class _Digest:
    """SHA-256 over the clear bytes of one direction, until encryption freezes it."""

    def __init__(self) -> None:
        self._hash: hashlib._Hash | None = None
        self._bytes = 0
        self.final: bytes | None = None

    def add(self, data: bytes) -> None:
        if self.final is not None or self._bytes >= HANDSHAKE_DIGEST_LIMIT:
            return
        if self._hash is None:
            self._hash = hashlib.sha256()
        self._hash.update(data)
        self._bytes += len(data)

    def freeze(self) -> bytes:
        if self.final is None:
            self.final = self._hash.digest() if self._hash is not None else bytes(DIGEST_BYTES)
        return self.final

    def reset(self) -> None:
        self._hash, self._bytes, self.final = None, 0, None


class _Cipher:
    """One session key's AES-GCM state: this side's base IV and the packet counts both ways."""

    def __init__(self, key: bytes) -> None:
        if len(key) != 32:
            raise ValueError(f"an AES-256-GCM session key has 32 bytes, not {len(key)}")
        self.aead = AESGCM(key)
        self.send_iv = os.urandom(IV_BYTES)
        self.receive_iv: bytes | None = None
        self.sent = 0
        self.received = 0

    @staticmethod
    def _nth(base: bytes, count: int) -> bytes:
        counter = (int.from_bytes(base[:4], "big") + count) & 0xFFFFFFFF
        return counter.to_bytes(4, "big") + base[4:]

    def body_size(self, clear: int) -> int:
        return clear + TAG_BYTES + (IV_BYTES if self.sent == 0 else 0)

    def seal(self, clear: bytes, associated: bytes) -> bytes:
        if self.sent == 0xFFFFFFFF:
            raise PacketError("the session's packet counter is exhausted; open a new connection")
        sealed = self.aead.encrypt(self._nth(self.send_iv, self.sent), clear, associated)
        body = (self.send_iv + sealed) if self.sent == 0 else sealed
        self.sent += 1
        return body

    def open(self, body: bytes, associated: bytes) -> bytes:
        if self.receive_iv is None:
            if len(body) < IV_BYTES + TAG_BYTES:
                raise PacketError("first encrypted packet too short to hold its IV and tag")
            self.receive_iv, body = body[:IV_BYTES], body[IV_BYTES:]
        if len(body) < TAG_BYTES:
            raise PacketError("encrypted packet too short to hold its tag")
        try:
            clear = self.aead.decrypt(self._nth(self.receive_iv, self.received), body, associated)
        except InvalidTag:
            raise PacketError("a packet failed AES-GCM authentication (wrong session key, or the "
                              "handshake was altered)") from None
        self.received += 1
        return clear


class PacketStream:
    """Whole messages in and out over an asyncio stream pair."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                 max_message: int | None = None) -> None:
        self.reader = reader
        self.writer = writer
        self.max_message = max_message    # the largest message received (None: any)
        self._sent = _Digest()
        self._received = _Digest()
        self._cipher: _Cipher | None = None
        self.crypto = False      # crypto mode: packets encrypted, strings length-prefixed

    @property
    def can_encrypt(self) -> bool:
        return self._cipher is not None

    def set_session_key(self, key: bytes) -> None:
        """Encrypt with ``key`` from now on. With an AES-GCM key crypto mode is on whatever the
        session's ``Encryption`` says (``Sock::set_crypto_key``: "encryption be enabled
        unilaterally if an AES-GCM key is available"). The handshake digests freeze at the first
        encrypted packet."""
        self._cipher = _Cipher(key)
        self.crypto = True

    def restart_handshake_digest(self) -> None:
        """Forget what was sent so far (the shared-port preamble)."""
        self._sent.reset()

    def _associated(self, header: bytes, *, sending: bool) -> bytes:
        sent, received = self._sent.freeze(), self._received.freeze()
        cipher = self._cipher
        assert cipher is not None
        first = cipher.sent == 0 if sending else cipher.received == 0
        if not first:
            return header
        return (sent + received if sending else received + sent) + header

    def write_message(self, payload: bytes) -> None:
        """Frame ``payload`` and hand it to the transport (drain it with :meth:`drain`). An empty
        message sends nothing, as ``ReliSock::end_of_message`` with nothing buffered."""
        chunks = [payload[at:at + SEND_PACKET_BODY] for at in range(0, len(payload), SEND_PACKET_BODY)]
        for index, chunk in enumerate(chunks):
            end = 1 if index == len(chunks) - 1 else 0
            if self.crypto and self._cipher is not None:
                header = HEADER.pack(end, self._cipher.body_size(len(chunk)))
                body = self._cipher.seal(chunk, self._associated(header, sending=True))
            else:
                header, body = HEADER.pack(end, len(chunk)), chunk
                self._sent.add(header)
                self._sent.add(chunk)
            self.writer.write(header + body)

    async def drain(self) -> None:
        await self.writer.drain()

    async def send_message(self, payload: bytes) -> None:
        self.write_message(payload)
        await self.drain()

    async def receive_message(self) -> bytes:
        """The next whole message; raises ``asyncio.IncompleteReadError`` when the peer closes."""
        parts = []
        received = 0
        while True:
            header = await self.reader.readexactly(HEADER.size)
            end, length = HEADER.unpack(header)
            if end > 10 or not 0 < length <= MAX_PACKET_BODY + IV_BYTES + TAG_BYTES:
                raise PacketError(f"packet header not recognised (end flag {end}, length {length})")
            received += length
            if self.max_message is not None and received > self.max_message:
                raise PacketError(f"a message longer than {self.max_message:,} bytes")
            body = await self.reader.readexactly(length)
            if self.crypto and self._cipher is not None:
                body = self._cipher.open(body, self._associated(header, sending=False))
            else:
                self._received.add(header)
                self._received.add(body)
            parts.append(body)
            if end:
                return b"".join(parts)

    def close(self) -> None:
        self.writer.close()

    async def wait_closed(self) -> None:
        try:
            await self.writer.wait_closed()
        except (ConnectionError, OSError):
            pass
