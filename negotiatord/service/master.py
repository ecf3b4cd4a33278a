"""Life under ``condor_master``: what a DaemonCore daemon owes the master that started it.

* **Keep-alives.** Every ``NOT_RESPONDING_TIMEOUT / 3 - 30`` seconds (at least 1), the first at
  once, a ``DC_CHILDALIVE`` telling the master to kill this process if it hears nothing for
  ``NEGOTIATOR_NOT_RESPONDING_TIMEOUT`` (else ``NOT_RESPONDING_TIMEOUT``, an hour by default)
  seconds (``DaemonKeepAlive::reconfig``, ``daemon_keep_alive.cpp``). They are sent from the event
  loop, so a loop that hangs stops them, and the master then restarts the daemon. The master shows
  a daemon it has heard from as alive (``condor_who``).
* **The parent's end.** After ``PARENT_CHECK_FIRST_INTERVAL`` seconds (15) and then every
  ``PARENT_CHECK_INTERVAL`` (120), if the master is gone the daemon stops, as ``check_parent``
  (``daemon_core_main.cpp``) shuts a daemon down fast.

The master's other commands reach the daemon as signals: SIGTERM to stop gracefully, SIGQUIT to
stop fast, SIGHUP to read the config again (``daemon::Stop``, ``daemon::StopFast``,
``daemon::Reconfig`` in ``masterDaemon.cpp``; ``Send_Signal`` uses ``kill()`` for these).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import structlog

from negotiatord.cedar.errors import CedarError
from negotiatord.cedar.parent import ParentDaemon
from negotiatord.settings.serving import CommandPortSettings

log = structlog.get_logger("negotiatord.master")


def keep_alive_period(hang_timeout_s: int) -> float:
    """``m_child_alive_period``."""
    return float(max(1, hang_timeout_s // 3 - 30))


class UnderMaster:
    """The tasks a daemon started by ``condor_master`` runs."""

    def __init__(self, parent: ParentDaemon, settings: Callable[[], CommandPortSettings],
                 stop: Callable[[], None]) -> None:
        self.parent = parent
        self.settings = settings
        self.stop = stop
        self.alive_sent = 0
        self.last_error: str | None = None
        self._tasks: list[asyncio.Task[None]] = []

    def start(self) -> None:
        self._tasks = [asyncio.ensure_future(self._keep_alive()), asyncio.ensure_future(self._watch_parent())]

    async def close(self) -> None:
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    def status(self) -> dict[str, object]:
        return {"pid": self.parent.pid, "address": self.parent.address, "keep_alives_sent": self.alive_sent,
                "last_error": self.last_error}

    async def _keep_alive(self) -> None:
        while True:
            hang = self.settings().hang_timeout_s
            try:
                await self.parent.send_alive(hang)
            except (CedarError, OSError) as error:
                self.last_error = str(error)
                log.error("keep-alive to condor_master failed; it may take this daemon for hung", error=str(error))
            else:
                self.alive_sent += 1
                self.last_error = None
            await asyncio.sleep(keep_alive_period(hang))

    async def _watch_parent(self) -> None:
        await asyncio.sleep(self.settings().parent_check_first_s)
        while True:
            if not self.parent.alive():
                log.warning("condor_master went away; stopping", pid=self.parent.pid)
                self.stop()
                return
            await asyncio.sleep(self.settings().parent_check_interval_s)
