"""FS: proving who we are by making a directory the daemon then inspects, as ``Condor_Auth_FS``
(``src/condor_io/condor_auth_fs.cpp``) does on the client side. It works only on the daemon's own
host, and proves the identity of the user this process runs as.

The daemon sends a path; the client creates that directory, mode 0700, and says whether it could;
the daemon checks the directory's owner and answers 0 if it accepts. With channel binding (the
path ends in ``_``, HTCondor 24.0+), the client appends the daemon's address as it connected to it
(``ip:port``, and ``?sock=id`` behind a shared port) and sends that suffix back, so the directory
names this very connection.
"""

from __future__ import annotations

import os

from negotiatord.cedar.auth.channel import Channel, MethodFailed
from negotiatord.cedar.policy import ClientSecurity
from negotiatord.cedar.sinful import parse_sinful
from negotiatord.cedar.wire import MessageWriter


async def authenticate_fs(channel: Channel, security: ClientSecurity, facts: dict[str, str]) -> str:
    """Run the client's side; returns "" (FS proves nothing of the daemon). Raises :class:`MethodFailed`."""
    reader = await channel.receive()
    directory = reader.get_string()
    suffix, result, failure = "", -1, ""
    if not directory:
        failure = "the daemon could not make its rendezvous file (see its log)"
    else:
        if directory.endswith("_"):
            host, port = channel.server_address
            suffix = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
            shared_port_id = parse_sinful(channel.connect_address).shared_port_id
            if shared_port_id:
                suffix += f"?sock={shared_port_id}"
            directory += suffix
        try:
            os.mkdir(directory, 0o700)
            result = 0
        except OSError as error:
            failure = f"cannot create {directory}: {error.strerror} (FS works only on the daemon's own host)"
    reply = MessageWriter().put_int(result)
    if suffix:
        reply.put_string(suffix)
    await channel.send(reply)
    try:
        accepted = (await channel.receive()).get_int32() == 0
    finally:
        if result == 0:
            os.rmdir(directory)
    if failure:
        raise MethodFailed(failure)
    if not accepted:
        raise MethodFailed(f"the daemon did not accept the directory made as uid {os.getuid()}")
    return ""
