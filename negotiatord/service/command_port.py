"""Where the daemon serves HTCondor's commands, and the address it is reached at.

On its own (systemd, a terminal), the daemon listens on ``NEGOTIATORD_COMMAND_PORT`` (or ``-p``;
0: any free port) and names itself by ``NETWORK_INTERFACE`` when that is an address, else by the
address the host's name resolves to (a loopback one only when there is no other).

Under ``condor_master`` it serves on what the master made for it (:mod:`negotiatord.cedar.inherit`):
its TCP command socket (``NEGOTIATOR_ARGS = -p PORT ...``, or ``USE_SHARED_PORT = False``), or,
behind ``condor_shared_port``, its named socket, reached as the shared port's address (read from
``SHARED_PORT_DAEMON_AD_FILE``, as ``SharedPortEndpoint::InitRemoteAddress`` does) with
``sock=<id>``. The UDP socket the master also makes is closed: negotiatord serves TCP only, and
its address says so (``noUDP``), so that a schedd sends it ``RESCHEDULE`` over TCP
(``Daemon::hasUDPCommandPort``; a shared port's address says so already).
The address is written to ``NEGOTIATOR_ADDRESS_FILE`` (``$(LOG)/.negotiator_address``), as
DaemonCore's ``drop_addr_file`` writes it (address, version and platform lines), for the tools that
look for a local daemon there; the file is removed at stop, as ``DC_Exit`` removes it.

The master's family session and the session it made to reach this daemon are served as
DaemonCore serves them: the family's identity holds the DAEMON, ADMINISTRATOR and NEGOTIATOR
levels (``IpVerify::PunchHole`` in ``DaemonCore::Inherit``), the parent's DAEMON and ADMINISTRATOR.
"""

from __future__ import annotations

import ipaddress
import os
import re
import socket
from pathlib import Path

from negotiatord.cedar.authorization import Level
from negotiatord.cedar.endpoint import SharedPortEndpoint
from negotiatord.cedar.inherit import FAMILY_METHOD, FAMILY_USER, PARENT_USER, Inheritance, InheritedSession
from negotiatord.cedar.policy import REMOTE_VERSION
from negotiatord.cedar.server import CommandServer
from negotiatord.cedar.server_handshake import ServerSession
from negotiatord.settings.serving import CommandPortSettings

FAMILY_LEVELS = frozenset({Level.ADMINISTRATOR, Level.DAEMON, Level.NEGOTIATOR, Level.ADVERTISE_MASTER,
                           Level.ADVERTISE_SCHEDD, Level.ADVERTISE_STARTD, Level.CLIENT})
PARENT_LEVELS = frozenset({Level.ADMINISTRATOR, Level.DAEMON, Level.CLIENT})
PLATFORM = "$CondorPlatform: negotiatord $"


def _handed(session: InheritedSession, user: str, grants: frozenset[Level]) -> ServerSession:
    return ServerSession(session.id, session.key, user, FAMILY_METHOD, expires=session.expires(), grants=grants)


def host_address() -> str:
    """The address this host is known by: its name's first address that is not a loopback one."""
    try:
        found = socket.getaddrinfo(socket.gethostname(), None, socket.AF_INET, socket.SOCK_STREAM)
    except OSError:
        found = []
    addresses = [str(info[4][0]) for info in found]
    return next((address for address in addresses if not ipaddress.ip_address(address).is_loopback), "127.0.0.1")


def shared_port_address(ad_file: Path | None, shared_port_id: str) -> str | None:
    """The shared port's address from its ad file, with this daemon's id; None without the file."""
    if ad_file is None:
        return None
    try:
        text = ad_file.read_text(errors="replace")
    except OSError:
        return None
    found = re.search(r'^\s*MyAddress\s*=\s*"(<[^"]*>)"', text, re.MULTILINE | re.IGNORECASE)
    if found is None:
        return None
    inner = re.sub(r"[?&]sock=[^&>]*", "", found.group(1)[1:-1])
    return f"<{inner}{'&' if '?' in inner else '?'}sock={shared_port_id}>"


class CommandPort:
    """The daemon's command sockets: opened at start, closed at stop."""

    def __init__(self, server: CommandServer) -> None:
        self.server = server
        self.address: str | None = None
        self._endpoint: SharedPortEndpoint | None = None
        self._address_file: Path | None = None

    async def open(self, settings: CommandPortSettings, inherited: Inheritance | None, port: int | None) -> str:
        """Start serving; the daemon's address. ``port``: ``-p``, over the config's."""
        if inherited is None:
            host, bound = await self.server.listen(settings.bind_address, settings.port if port is None else port)
            self.address = f"<{self._named(host, settings)}:{bound}?noUDP>"
            return self.address
        for descriptor in inherited.udp_sockets:
            os.close(descriptor)
        for descriptor in inherited.command_sockets:
            host, bound = await self.server.adopt(socket.socket(fileno=descriptor))
            self.address = self.address or f"<{self._named(host, settings)}:{bound}?noUDP>"
        if inherited.shared_port_socket is not None and inherited.shared_port_id:
            shared_port_id = inherited.shared_port_id
            self._endpoint = SharedPortEndpoint(socket.socket(fileno=inherited.shared_port_socket),
                                                lambda connection: self.server.serve_connected(connection,
                                                                                               shared_port_id))
            self._endpoint.start()
            self.address = shared_port_address(settings.shared_port_ad_file, shared_port_id) or self.address
        if inherited.family is not None:
            self.server.add_session(_handed(inherited.family, FAMILY_USER, FAMILY_LEVELS))
        if inherited.parent_session is not None:
            self.server.add_session(_handed(inherited.parent_session, PARENT_USER, PARENT_LEVELS))
        self.address = self.address or ""
        return self.address

    def write_address_file(self, path: Path | None) -> None:
        """``drop_addr_file``: the address, then version and platform lines, written whole."""
        self._address_file = path
        if path is None or not self.address:
            return
        fresh = path.with_name(path.name + ".new")
        fresh.write_text(f"{self.address}\n{REMOTE_VERSION}\n{PLATFORM}\n")
        os.replace(fresh, path)

    def remove_address_file(self) -> None:
        if self._address_file is not None:
            self._address_file.unlink(missing_ok=True)

    @staticmethod
    def _named(host: str, settings: CommandPortSettings) -> str:
        if settings.advertised_host:
            return settings.advertised_host
        if host in ("0.0.0.0", "::"):
            return host_address()
        return host

    async def close(self) -> None:
        self.remove_address_file()
        if self._endpoint is not None:
            await self._endpoint.close()
        await self.server.close()
