"""systemd integration over sd_notify(3)'s documented datagram protocol.

The protocol is one datagram of newline-separated ``VARIABLE=value`` lines sent to the socket named
by ``$NOTIFY_SOCKET`` (a path, or an abstract socket written with a leading ``@``). It is small and
stable, so it is spoken here directly rather than through a library: the Python ``sdnotify``
package has had no release since 2017 and ``python-systemd`` needs libsystemd to build, for what
is ``socket.sendto``. Outside systemd (no ``$NOTIFY_SOCKET``) every call does nothing.

The watchdog interval comes from ``$WATCHDOG_USEC`` (set by ``WatchdogSec=``), honoured only when
``$WATCHDOG_PID`` is unset or ours, as sd_watchdog_enabled(3) says; keep-alives go out at half the
interval, as systemd.service(5) recommends.
"""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Mapping

import structlog

log = structlog.get_logger("negotiatord.systemd")


class SystemdNotifier:
    def __init__(self, environ: Mapping[str, str] = os.environ) -> None:
        address = environ.get("NOTIFY_SOCKET", "")
        self._address = "\0" + address[1:] if address.startswith("@") else address
        self._socket = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) if self._address else None
        if self._socket is not None:
            # A full receive queue must cost a notification, never block the event loop.
            self._socket.setblocking(False)
        self._failed = False
        self.watchdog_interval = _watchdog_interval(environ)

    @property
    def enabled(self) -> bool:
        return self._socket is not None

    def notify(self, *assignments: str) -> None:
        """Send ``VARIABLE=value`` assignments; a failure is logged once, never raised (systemd
        going away, or not reading, must not take the daemon with it)."""
        if self._socket is None:
            return
        try:
            self._socket.sendto("\n".join(assignments).encode(), self._address)
        except OSError as error:
            if not self._failed:
                log.warning("cannot notify systemd", socket=os.environ.get("NOTIFY_SOCKET"), error=str(error))
            self._failed = True

    def ready(self, status: str) -> None:
        self.notify("READY=1", f"STATUS={status}", f"MAINPID={os.getpid()}")

    def reloading(self) -> None:
        # MONOTONIC_USEC is what Type=notify-reload expects with RELOADING=1 (sd_notify(3)).
        self.notify("RELOADING=1", f"MONOTONIC_USEC={time.clock_gettime_ns(time.CLOCK_MONOTONIC) // 1000}")

    def status(self, status: str) -> None:
        self.notify(f"STATUS={status}")

    def stopping(self) -> None:
        self.notify("STOPPING=1", "STATUS=stopping")

    def watchdog(self) -> None:
        self.notify("WATCHDOG=1")

    def close(self) -> None:
        if self._socket is not None:
            self._socket.close()


def _watchdog_interval(environ: Mapping[str, str]) -> float | None:
    """Seconds between keep-alives (half of WATCHDOG_USEC), or None without a watchdog."""
    pid = environ.get("WATCHDOG_PID")
    if pid and pid != str(os.getpid()):
        return None
    try:
        usec = int(environ.get("WATCHDOG_USEC", ""))
    except ValueError:
        return None
    return usec / 2e6 if usec > 0 else None
