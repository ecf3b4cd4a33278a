"""Daemon addresses: HTCondor's "sinful strings", ``<host:port?param=value&...>``.

As ``src/condor_utils/condor_sinful.cpp`` reads them: the host and port to connect to; ``sock``,
the daemon's id behind ``condor_shared_port`` when the port is the shared port's; ``addrs``, the
daemon's addresses as ``ip-port`` joined with ``+`` (brackets around IPv6); ``alias``, its host
name. Parameter values are URL-encoded. A bare ``host:port`` is accepted too, as HTCondor's tools
do for ``COLLECTOR_HOST``.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import parse_qsl


class BadAddress(ValueError):
    """Not a daemon address; the message quotes it."""


@dataclass(frozen=True)
class Sinful:
    host: str
    port: int
    shared_port_id: str | None = None
    alias: str | None = None
    text: str = ""

    def __str__(self) -> str:
        return self.text or f"<{self.host}:{self.port}>"


def parse_sinful(text: str) -> Sinful:
    """The address ``text`` names; raises :class:`BadAddress` if it names none."""
    inner = text.strip()
    if inner.startswith("<") and inner.endswith(">"):
        inner = inner[1:-1]
    hostport, _, query = inner.partition("?")
    params = dict(parse_qsl(query, keep_blank_values=True))
    if hostport.startswith("["):
        host, _, rest = hostport[1:].partition("]")
        port_text = rest.removeprefix(":")
    else:
        host, _, port_text = hostport.rpartition(":")
    if not host or not port_text.isdigit() or not 0 < int(port_text) < 65536:
        raise BadAddress(f"{text!r} is not a daemon address (<host:port?...> or host:port)")
    return Sinful(host=host, port=int(port_text), shared_port_id=params.get("sock") or None,
                  alias=params.get("alias") or None, text=text.strip())


# the collector's well-known port (COLLECTOR_PORT's default)
COLLECTOR_PORT = 9618


def collector_addresses(collector_host: str) -> list[str]:
    """The collectors ``COLLECTOR_HOST`` names (a comma or space separated list, as DaemonCore's
    ``CollectorList`` reads it), each ``host:port`` (the port 9618 when it names none) or a sinful
    string; a daemon sends its updates to each."""
    addresses = []
    for entry in collector_host.replace(",", " ").split():
        if entry.startswith("<") or entry.rpartition(":")[2].isdigit():
            addresses.append(entry)
        else:
            addresses.append(f"{entry}:{COLLECTOR_PORT}")
    return addresses
