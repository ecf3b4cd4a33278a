"""The plain-text message channel an authentication method's handshake runs on."""

from __future__ import annotations

from negotiatord.cedar.packets import PacketStream
from negotiatord.cedar.wire import MessageReader, MessageWriter


class MethodFailed(Exception):
    """This method did not authenticate; the message says why. Another method may still."""


class OutOfStep(MethodFailed):
    """The method failed on this side after the peer took it to have succeeded: the two sides no
    longer agree on what comes next, and the connection cannot go on."""


class Channel:
    """Messages to and from one daemon before the session is encrypted."""

    def __init__(self, stream: PacketStream, peer: str, connect_address: str, server_address: tuple[str, int]) -> None:
        self.stream = stream
        self.peer = peer
        self.connect_address = connect_address   # the sinful string we connected to
        self.server_address = server_address     # the daemon's end of the TCP connection

    async def send(self, writer: MessageWriter) -> None:
        await self.stream.send_message(writer.payload())

    async def receive(self) -> MessageReader:
        return MessageReader(await self.stream.receive_message(), crypto=self.stream.crypto)
