"""FS: proving who a local process is by making a directory the daemon then inspects, as
``Condor_Auth_FS`` (``src/condor_io/condor_auth_fs.cpp``) does, both sides. It works only on the
daemon's own host, and proves the identity of the user the client runs as.

The daemon sends a path; the client creates that directory, mode 0700, and says whether it could;
the daemon checks the directory's owner and answers 0 if it accepts. With channel binding (the
path ends in ``_``, HTCondor 24.0+), the client appends the daemon's address as it connected to it
(``ip:port``, and ``?sock=id`` behind a shared port) and sends that suffix back, so the directory
names this very connection.

On the daemon's side (:func:`serve_fs`) the path is a fresh name under ``FS_LOCAL_DIR`` (else
``/tmp``); the directory must be a directory, no link, mode 0700, with one or two links; its
owner's name at ``UID_DOMAIN`` is the client's identity, root standing for the condor user
(``FS_ROOT_TO_CONDOR``, on by default).
"""

from __future__ import annotations

import os
import pwd
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path

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


@dataclass(frozen=True)
class FsSettings:
    """The daemon's side of FS: where rendezvous directories go, the domain of the identities it
    proves, and the name root stands for (None: root stays root)."""

    directory: Path = Path("/tmp")         # FS_LOCAL_DIR
    uid_domain: str = ""                   # UID_DOMAIN
    root_as: str | None = None             # the condor user, with FS_ROOT_TO_CONDOR


async def serve_fs(channel: Channel, settings: FsSettings, local: tuple[str, int], shared_port_id: str | None) -> str:
    """Run the daemon's side over ``channel``, whose daemon end is ``local`` (``ip``, ``port``),
    reached behind a shared port as ``shared_port_id``; returns the client's identity,
    ``user@domain``. Raises :class:`MethodFailed`."""
    directory, failure = "", ""
    try:
        handle, template = tempfile.mkstemp(prefix=f"FS_{local[0]}_{local[1]}_", dir=settings.directory)
        os.close(handle)
        os.unlink(template)
        directory = template + "_"
    except OSError as error:
        failure = f"cannot make a rendezvous name in {settings.directory} (FS_LOCAL_DIR): {error.strerror}"
    await channel.send(MessageWriter().put_string(directory))
    reader = await channel.receive()
    claimed = reader.get_int32()
    suffix = "" if reader.at_end() else reader.get_string()
    result, identity = -1, ""
    if not directory:
        pass
    elif suffix and not _names_us(suffix, local, shared_port_id):
        failure = f"the client bound the directory to {suffix!r}, not to this connection"
    elif claimed != 0:
        failure = "the client could not create the directory"
    else:
        failure, identity = _owner(directory + suffix, settings)
        result = 0 if identity else -1
    await channel.send(MessageWriter().put_int(result))
    if result != 0:
        raise MethodFailed(failure)
    return identity


def _names_us(suffix: str, local: tuple[str, int], shared_port_id: str | None) -> bool:
    """Whether the client's suffix, ``ip:port`` and maybe ``?sock=id``, is this end of the
    connection (and, behind a shared port, this daemon's id there)."""
    if "/" in suffix:
        return False
    address, _, query = suffix.partition("?sock=")
    host, _, port = address.rpartition(":")
    host = host.strip("[]")
    if (host, port) != (local[0], str(local[1])):
        return False
    return not query or query == shared_port_id


def _owner(path: str, settings: FsSettings) -> tuple[str, str]:
    """(why not, "") or ("", identity): the identity the directory at ``path`` proves."""
    try:
        info = os.lstat(path)
    except OSError as error:
        return f"cannot inspect {path}: {error.strerror}", ""
    if not stat.S_ISDIR(info.st_mode) or info.st_nlink not in (1, 2) or stat.S_IMODE(info.st_mode) != 0o700:
        return f"{path} is not a directory of mode 0700 with no other links", ""
    try:
        user = pwd.getpwuid(info.st_uid).pw_name
    except KeyError:
        return f"{path} is owned by uid {info.st_uid}, which has no name", ""
    if user == "root" and settings.root_as:
        user = settings.root_as
    return "", f"{user}@{settings.uid_domain}" if settings.uid_domain else user
