"""What can go wrong talking to an HTCondor daemon, said so that an administrator can act on it.

Every error names the daemon (its address, and its name where the caller knows it) and the
cause in words; :attr:`CedarError.reason` is the cause alone, for status pages and metrics.
"""

from __future__ import annotations


class CedarError(Exception):
    """A command to ``peer`` failed: ``reason`` is a short cause, ``detail`` what to check."""

    reason = "protocol error"

    def __init__(self, peer: str, detail: str, reason: str | None = None) -> None:
        self.peer = peer
        self.detail = detail
        if reason is not None:
            self.reason = reason
        super().__init__(f"{peer}: {self.reason}: {detail}")


class ConnectionFailed(CedarError):
    """No connection: refused, unreachable, unknown host, or closed by the daemon."""

    reason = "connection failed"


class TimedOut(CedarError):
    """The daemon took longer than the command's timeout to answer."""

    reason = "no answer in time"


class AuthenticationFailed(CedarError):
    """No authentication method both sides support succeeded."""

    reason = "authentication failed"


class NotAuthorized(CedarError):
    """The daemon authenticated us but refused the command (its ``ALLOW_*`` settings)."""

    reason = "not authorized"


class ProtocolError(CedarError):
    """The daemon said something this implementation does not understand."""

    reason = "protocol error"
