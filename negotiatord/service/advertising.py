"""negotiatord's ads at the pool's collectors: sent, kept current, taken back.

With ``COLLECTOR_HOST`` set, the daemon advertises its Negotiator ad after every cycle and every
``NEGOTIATOR_UPDATE_INTERVAL`` in between (``Matchmaker::updateCollector``'s timer), and, with
``NEGOTIATOR_ADVERTISE_ACCOUNTING`` (on by default), its Accounting ads after every cycle
(``forwardAccountingData``); to each collector ``COLLECTOR_HOST`` lists, as DaemonCore's
``sendUpdates`` does. When it stops it invalidates them. The ads are
:mod:`~negotiatord.service.collector_ads`'; the wire, :mod:`negotiatord.cedar.updates`.

The collector takes these commands at the NEGOTIATOR level (collector.cpp registers
``UPDATE_NEGOTIATOR_AD``, ``UPDATE_ACCOUNTING_AD`` and their invalidations so): the identity that
queries its private ads may send them. A collector that cannot be reached or refuses costs
nothing but its ads: the failure is logged once with its cause (again only when the cause
changes, and once when the ads get through again) and shown in ``/v1/status``.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import classad2
import structlog

from negotiatord.cedar.commands import (
    INVALIDATE_ACCOUNTING_ADS,
    INVALIDATE_NEGOTIATOR_ADS,
    UPDATE_ACCOUNTING_AD,
    UPDATE_NEGOTIATOR_AD,
)
from negotiatord.cedar.errors import CedarError
from negotiatord.cedar.handshake import SessionCache
from negotiatord.cedar.policy import ClientSecurity
from negotiatord.cedar.sinful import collector_addresses
from negotiatord.cedar.updates import CollectorUpdates, Update
from negotiatord.service.collector_ads import invalidate_accounting, invalidate_negotiator


class Advertiser:
    """The updates to the collectors of one ``COLLECTOR_HOST`` and one set of credentials."""

    def __init__(self) -> None:
        self.log = structlog.get_logger("negotiatord.advertising")
        self.sessions = SessionCache()
        self._collectors: dict[str, CollectorUpdates] = {}
        self._security: ClientSecurity | None = None
        self._failures: dict[str, tuple[str, str]] = {}     # collector -> the (reason, detail) logged
        self.state: dict[str, Any] = {"time": None, "ads": 0, "failed": []}

    def _targets(self, collector_host: str, security: ClientSecurity) -> list[CollectorUpdates]:
        """Each collector's updates; new connections and sessions when the list or the
        credentials changed."""
        addresses = collector_addresses(collector_host)
        if security != self._security or list(self._collectors) != addresses:
            self.close()
            self.sessions = SessionCache()
            self._collectors = {address: CollectorUpdates(address, security, self.sessions) for address in addresses}
            self._security = security
        return list(self._collectors.values())

    async def advertise(self, collector_host: str, security: ClientSecurity, negotiator: dict[str, Any],
                        accounting: Sequence[dict[str, Any]] = ()) -> int:
        """Send the Negotiator ad and the Accounting ads; how many collectors took them."""
        batch = _updates(UPDATE_NEGOTIATOR_AD, [negotiator]) + _updates(UPDATE_ACCOUNTING_AD, accounting)
        what = "the Negotiator and Accounting ads" if accounting else "the Negotiator ad"
        return await self._send(collector_host, security, batch, what)

    async def take_back(self, collector_host: str, security: ClientSecurity, negotiator_name: str) -> int:
        """Invalidate the Negotiator ad and the Accounting ads of ``negotiator_name``, on new
        connections: an update cut short by the stop may have left half a message on a kept one."""
        self.close()
        batch = _updates(INVALIDATE_NEGOTIATOR_ADS, [invalidate_negotiator(negotiator_name)])
        batch += _updates(INVALIDATE_ACCOUNTING_ADS, [invalidate_accounting(negotiator_name)])
        return await self._send(collector_host, security, batch, "the invalidations")

    async def _send(self, collector_host: str, security: ClientSecurity, updates: Sequence[Update], what: str) -> int:
        """Send ``updates`` (``what`` they are, for the log) to every collector; how many
        collectors took them."""
        took, failed = 0, []
        for collector in self._targets(collector_host, security):
            try:
                await collector.send(updates)
            except Exception as error:  # whatever a collector does costs only its ads
                reason, detail = (error.reason, error.detail) if isinstance(error, CedarError) else (
                    "protocol error", f"{type(error).__name__}: {error}")
                collector.close()
                failed.append({"collector": collector.address, "reason": reason, "detail": detail})
                self._failed(collector.address, reason, detail, what)
            else:
                took += 1
                if self._failures.pop(collector.address, None) is not None:
                    self.log.info("advertising to the collector again", collector=collector.address)
        self.state = {"time": time.time(), "ads": len(updates), "failed": failed}
        return took

    def _failed(self, address: str, reason: str, detail: str, what: str) -> None:
        """Log a failure, unless it is the one logged last for ``address``."""
        if self._failures.get(address) == (reason, detail):
            return
        self._failures[address] = (reason, detail)
        self.log.error("advertising to the collector failed; its ads are not current", collector=address,
                       ads=what, reason=reason, detail=detail)

    def status(self) -> dict[str, Any]:
        return {"collectors": list(self._collectors), **self.state}

    def close(self) -> None:
        for collector in self._collectors.values():
            collector.close()


def _updates(command: int, ads: Sequence[dict[str, Any] | classad2.ClassAd]) -> list[Update]:
    """``ads`` (plain attribute values, or ClassAds) as updates of ``command``."""
    return [(command, ad if isinstance(ad, classad2.ClassAd) else classad2.ClassAd(ad)) for ad in ads]
