"""Talking to the parent daemon (``condor_master``) as a DaemonCore child does: keep-alives, over
the family security session the parent handed down (:mod:`~.inherit`).

``DC_CHILDALIVE`` (``DaemonKeepAlive::SendAliveToParent``, ``daemon_keep_alive.cpp``; the message
is ``ChildAliveMsg``, ``dc_message.cpp``): this process's pid, how many seconds the parent may wait
for the next one before it takes the child for hung and kills it, and the fraction of time spent
waiting for the log lock. The master registers it at DAEMON level; the family session carries it
without authenticating anew.
"""

from __future__ import annotations

import os
import time

from negotiatord.cedar.client import open_command
from negotiatord.cedar.commands import DC_CHILDALIVE
from negotiatord.cedar.handshake import Session, SessionCache
from negotiatord.cedar.inherit import FAMILY_METHOD, FAMILY_USER, Inheritance
from negotiatord.cedar.policy import ClientSecurity

TIMEOUT_S = 60.0     # SendAliveToParent waits at least a minute


class ParentDaemon:
    """The parent daemon as this child reaches it."""

    def __init__(self, inherited: Inheritance, security: ClientSecurity) -> None:
        self.pid = inherited.parent_pid
        self.address = inherited.parent_address
        self.security = security
        self.sessions = SessionCache()
        family = inherited.family
        if family is not None:
            self.sessions.store(self.address, [DC_CHILDALIVE], Session(
                id=family.id, key=family.key, crypto_method=family.crypto_method, user=FAMILY_USER,
                method=FAMILY_METHOD, peer_identity="", expires=family.expires(), lease_s=0,
                last_used=time.monotonic()))

    def alive(self) -> bool:
        """Whether the parent process still runs (``Is_Pid_Alive``)."""
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True

    async def send_alive(self, hang_timeout_s: int) -> None:
        """One keep-alive: the parent may kill this process if none follows within ``hang_timeout_s``."""
        stream = await open_command(self.address, DC_CHILDALIVE, self.security, self.sessions, TIMEOUT_S,
                                    name="condor_master")
        try:
            message = stream.message().put_int(os.getpid()).put_int(hang_timeout_s).put_double(0.0)
            await stream.send(message)
        finally:
            stream.close()
