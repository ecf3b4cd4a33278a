"""The encoding of values in a CEDAR message, as ``src/condor_io/stream.cpp`` writes and reads them.

* Every integer, whatever its C type, travels as 8 bytes, big-endian, signed (``Stream::put(long
  long)``).
* A double travels as two such integers: ``frexp``'s mantissa times 2^31 - 1, truncated to an
  int, and its exponent (``Stream::put(double)``); it comes back with ``ldexp``.
* A string travels NUL-terminated. While the stream's crypto mode is on, it is preceded by its
  length, NUL included, as an integer (``Stream::put(char const *)``); a reader in crypto mode
  reads that length first (``Stream::get_string_ptr``). A lone byte 0xFF in place of a string is
  HTCondor's NULL string, read back as empty.
* A secret is a string written with crypto mode on (``Stream::put_secret``). On an AES-GCM session
  every packet is encrypted anyway; the mode only changes the string's encoding.
* Raw bytes (``put_bytes``) travel as they are; their length, where the protocol needs one, is
  sent before them as an integer.

A message is built whole (:class:`MessageWriter`) and read whole (:class:`MessageReader`);
:mod:`~negotiatord.cedar.packets` frames it on the socket.
"""

from __future__ import annotations

import math
import struct

FRACTION_SCALE = 2147483647   # FRAC_CONST in stream.cpp
NULL_STRING = b"\xff"
MAX_STRING_BYTES = 10_000_000  # Stream::get_string_ptr refuses longer encrypted strings
_INT = struct.Struct(">q")


class WireError(ValueError):
    """A message that does not hold what the protocol says it should."""


class MessageWriter:
    """One outgoing message. ``crypto`` is the stream's crypto mode when the message is written."""

    def __init__(self, crypto: bool = False) -> None:
        self.crypto = crypto
        self._parts: list[bytes] = []

    def put_int(self, value: int) -> MessageWriter:
        if not -(1 << 63) <= value < (1 << 63):
            raise WireError(f"integer {value} does not fit in 64 bits")
        self._parts.append(_INT.pack(value))
        return self

    def put_double(self, value: float) -> MessageWriter:
        mantissa, exponent = math.frexp(value)
        return self.put_int(int(mantissa * FRACTION_SCALE)).put_int(exponent)

    def put_string(self, value: str, *, crypto: bool | None = None) -> MessageWriter:
        data = value.encode() + b"\0"
        if b"\0" in data[:-1]:
            raise WireError("a CEDAR string cannot hold a NUL byte")
        if self.crypto if crypto is None else crypto:
            self.put_int(len(data))
        self._parts.append(data)
        return self

    def put_secret(self, value: str) -> MessageWriter:
        """``Stream::put_secret``: the string written with crypto mode on."""
        return self.put_string(value, crypto=True)

    def put_bytes(self, data: bytes) -> MessageWriter:
        self._parts.append(bytes(data))
        return self

    def payload(self) -> bytes:
        return b"".join(self._parts)


class MessageReader:
    """One received message, read front to back. ``crypto`` is the stream's crypto mode."""

    def __init__(self, payload: bytes, crypto: bool = False) -> None:
        self.crypto = crypto
        self._data = memoryview(payload)
        self._at = 0

    @property
    def remaining(self) -> int:
        return len(self._data) - self._at

    def at_end(self) -> bool:
        """Whether the message is consumed (``end_of_message`` succeeds only then)."""
        return self._at == len(self._data)

    def get_bytes(self, count: int) -> bytes:
        if count < 0 or count > self.remaining:
            raise WireError(f"message ends {self.remaining} bytes on; {count} more were expected")
        data = bytes(self._data[self._at:self._at + count])
        self._at += count
        return data

    def get_int(self) -> int:
        return int(_INT.unpack(self.get_bytes(_INT.size))[0])

    def get_int32(self) -> int:
        """An integer the sender holds in a C ``int``: what ``Stream::get(int &)`` keeps of it."""
        value = self.get_int() & 0xFFFFFFFF
        return value - (1 << 32) if value >= 1 << 31 else value

    def get_double(self) -> float:
        mantissa, exponent = self.get_int32(), self.get_int32()
        return math.ldexp(mantissa / FRACTION_SCALE, exponent)

    def get_string(self, *, crypto: bool | None = None) -> str:
        if self.crypto if crypto is None else crypto:
            length = self.get_int32()
            if not 0 <= length <= MAX_STRING_BYTES:
                raise WireError(f"string length {length} out of range")
            data = self.get_bytes(length)
            if data[:1] == NULL_STRING:
                return ""
            return data[:-1].decode(errors="replace") if data.endswith(b"\0") else data.decode(errors="replace")
        if self._data[self._at:self._at + 1] == NULL_STRING:
            self._at += 1
            return ""
        end = bytes(self._data[self._at:]).find(b"\0")
        if end < 0:
            raise WireError("string without its terminating NUL")
        text = bytes(self._data[self._at:self._at + end]).decode(errors="replace")
        self._at += end + 1
        return text

    def get_secret(self) -> str:
        return self.get_string(crypto=True)
