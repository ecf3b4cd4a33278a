"""The daemon's HTTP API (aiohttp): status, statistics, matches out, accountant, metrics.

Reads (GET) are open to whoever can reach the address (loopback unless configured otherwise);
every other method needs ``Authorization: Bearer <token>``: 401 without one, 403 with a wrong one.
Bodies above ``NEGOTIATORD_MAX_BODY_BYTES`` get 413 before any of them is read; a body that has
not arrived within ``NEGOTIATORD_BODY_TIMEOUT`` gets 408 and its connection is closed (headers are
bounded by ``NEGOTIATORD_HEADER_TIMEOUT``, the handler's keep-alive timeout, and connections by
:mod:`~.connections`).
docs/daemon.md lists every endpoint.
"""

from __future__ import annotations

import asyncio
import hmac
import json
from typing import TYPE_CHECKING, Any
from collections.abc import Awaitable, Callable

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST

from negotiatord.accountant import AccountantStoreError, UnknownCustomer
from negotiatord.accountant.records import check_customer_name
from negotiatord.cycle.result import Match
from negotiatord.feed.api import json_error
from negotiatord.publish.matchlog import MatchLog, MatchLogError
from negotiatord.service.waiting import woken

if TYPE_CHECKING:
    from negotiatord.service.daemon import Daemon

_READS = frozenset({"GET", "HEAD", "OPTIONS"})
# POST /v1/accountant/<setting>: the body's key, the accountant's method, what it sets (condor_userprio's option)
ACCOUNTANT_SETTINGS = {
    "factor": ("factor", "set_factor", "priority factor"),                      # -setfactor
    "priority": ("priority", "set_priority", "priority"),                       # -setprio
    "accumulated-usage": ("usage", "set_accumulated_usage", "accumulated usage"),   # -setaccum
    "begin-time": ("time", "set_begin_time", "begin usage time"),               # -setbegin
    "last-time": ("time", "set_last_time", "last usage time"),                  # -setlast
    "ceiling": ("ceiling", "set_ceiling", "ceiling"),                           # -setceiling
    "floor": ("floor", "set_floor", "floor"),                                   # -setfloor
}
MATCH_PAGE = 1000          # default page of GET /v1/matches, and its largest (~300 kB of JSON)
MATCH_PAGE_MAX = 1000
KEEPALIVE_S = 15.0         # SSE comment lines keep proxies and clients from timing out
MAX_SEQUENCE = 2**63 - 1   # SQLite's largest integer: no sequence number or limit is larger

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def build_app(daemon: Daemon) -> web.Application:
    max_body = daemon.settings.service.max_body_bytes
    app = web.Application(client_max_size=max_body, middlewares=[_guard(daemon, max_body)])
    api = _ServiceApi(daemon)
    app.add_routes(daemon.feed_api.routes())
    app.add_routes([
        web.get("/v1/status", api.status),
        web.get("/v1/negotiator", api.negotiator),
        web.get("/v1/cycles/last", api.last_cycle),
        web.post("/v1/reschedule", api.reschedule),
        web.get("/v1/matches", api.matches),
        web.get("/v1/matches/stream", api.stream),
        web.get("/v1/accountant", api.accountant),
        web.post("/v1/accountant/reset-usage", api.reset_usage),
        web.post("/v1/accountant/delete", api.delete),
        web.post("/v1/accountant/{setting}", api.set_setting),
        web.get("/metrics", api.metrics),
    ])
    return app


def _guard(daemon: Daemon, max_body: int) -> Callable:
    @web.middleware
    async def guard(request: web.Request, handler: Handler) -> web.StreamResponse:
        try:
            if request.method not in _READS:
                _check_token(request, daemon.token)
                if request.content_length is not None and request.content_length > max_body:
                    raise _too_large(max_body)
                late = await _whole_body(request, daemon.settings.service.body_timeout)
                if late is not None:
                    return late
            return await handler(request)
        except web.HTTPRequestEntityTooLarge:  # a chunked body that outgrew the limit while read
            raise _too_large(max_body) from None
        except (AccountantStoreError, MatchLogError) as error:   # a database failing under the daemon
            raise json_error(web.HTTPServiceUnavailable, str(error)) from None
    return guard


def _check_token(request: web.Request, token: bytes) -> None:
    scheme, _, presented = request.headers.get("Authorization", "").partition(" ")
    if not presented.isascii():   # a token is ASCII (RFC 6750's b64token); so is ours
        raise json_error(web.HTTPBadRequest, "the Authorization header holds characters that are not ASCII; "
                         "a bearer token is ASCII")
    if scheme.lower() != "bearer" or not presented.strip():
        raise json_error(web.HTTPUnauthorized, "this request needs 'Authorization: Bearer <token>' "
                         "(the token is in the daemon's NEGOTIATORD_TOKEN_FILE)",
                         **{"WWW-Authenticate": 'Bearer realm="negotiatord"'})
    if not hmac.compare_digest(presented.strip().encode(), token):
        raise json_error(web.HTTPForbidden, "wrong bearer token")


async def _whole_body(request: web.Request, timeout: float) -> web.StreamResponse | None:
    """Read the body (the handlers then find it read) within ``timeout`` seconds; else answer
    408 and close the connection at once, without waiting for the rest of the body as aiohttp
    otherwise would (its lingering time): a client cannot hold a handler by sending slowly."""
    try:
        await asyncio.wait_for(request.read(), timeout)
        return None
    except TimeoutError:
        late = json_error(web.HTTPRequestTimeout, f"the body did not arrive within NEGOTIATORD_BODY_TIMEOUT = "
                          f"{timeout:g} s")
    await late.prepare(request)
    await late.write_eof()
    request.protocol.force_close()
    return late


def _too_large(limit: int) -> web.HTTPException:
    message = f"the body is larger than NEGOTIATORD_MAX_BODY_BYTES = {limit} bytes; send the ads in smaller batches"
    return web.HTTPRequestEntityTooLarge(max_size=limit, text=json.dumps({"error": message}),
                                         content_type="application/json")


class _ServiceApi:
    def __init__(self, daemon: Daemon) -> None:
        self.daemon = daemon

    async def status(self, request: web.Request) -> web.Response:
        return web.json_response(self.daemon.status())

    async def negotiator(self, request: web.Request) -> web.Response:
        return web.json_response(self.daemon.negotiator_ad())

    async def last_cycle(self, request: web.Request) -> web.Response:
        if self.daemon.history.last is None:
            raise json_error(web.HTTPNotFound, "no cycle has finished yet")
        body = await self.daemon.reads.read(_client(request), _json, self.daemon.history.last_cycle_document)
        return web.Response(body=body, content_type="application/json")

    async def reschedule(self, request: web.Request) -> web.Response:
        return web.json_response(self.daemon.reschedule(), status=202)

    async def matches(self, request: web.Request) -> web.Response:
        """A page of published matches: at most MATCH_PAGE_MAX, read and written on a reader
        thread (:mod:`~.readers`)."""
        after = _int_query(request, "after", 0)
        limit = min(_int_query(request, "limit", MATCH_PAGE), MATCH_PAGE_MAX)
        body = await self.daemon.reads.read(_client(request), _match_page, self.daemon.matchlog, after, limit)
        return web.Response(body=body, content_type="application/json")

    async def stream(self, request: web.Request) -> web.StreamResponse:
        """Server-sent events, one ``match`` event per match and one ``preemption`` event per
        preemption no job takes the slot for (rule ``quota``), ``id`` = its sequence number.

        Starts after ``?after=N`` or the ``Last-Event-ID`` header (an EventSource reconnecting);
        with neither, after the newest match (live matches only).
        """
        resumed = request.headers.get("Last-Event-ID")
        if "after" in request.query:
            cursor = _int_query(request, "after", 0)
        elif resumed is not None:
            cursor = _int(resumed, "Last-Event-ID")
        else:
            cursor = self.daemon.last_seq
        response = web.StreamResponse(headers={
            "Content-Type": "text/event-stream", "Cache-Control": "no-cache", "X-Accel-Buffering": "no"})
        await response.prepare(request)
        daemon = self.daemon
        try:
            await response.write(b": negotiatord matches\n\n")
            while not daemon.stopping.is_set():
                announced = daemon.new_matches  # taken before reading, so no publication is missed
                events, last = await daemon.reads.wait_for(_match_events, daemon.matchlog, cursor)
                if events:
                    await response.write(events)
                    cursor = last
                    continue
                if not await woken(announced, KEEPALIVE_S):
                    await response.write(b": keep-alive\n\n")
        except ConnectionResetError:
            pass  # the client went away
        return response

    async def accountant(self, request: web.Request) -> web.Response:
        body = await self.daemon.reads.read(_client(request), _json, self.daemon.read_accountant)
        return web.Response(body=body, content_type="application/json")

    async def set_setting(self, request: web.Request) -> web.Response:
        """condor_userprio's setters: ``POST /v1/accountant/<setting>`` with ``{"customer": NAME,
        "<key>": VALUE}``, the settings and keys of :data:`ACCOUNTANT_SETTINGS`."""
        setting = request.match_info["setting"]
        if setting not in ACCOUNTANT_SETTINGS:
            raise json_error(web.HTTPNotFound, f"no accountant setting {setting!r}; there are "
                             f"{', '.join(sorted(ACCOUNTANT_SETTINGS))}, reset-usage and delete")
        key, method, what = ACCOUNTANT_SETTINGS[setting]
        body = await _json_body(request)
        customer, value = _customer(body), body.get(key)
        try:
            await asyncio.to_thread(getattr(self.daemon.accountant, method), customer, value)
        except ValueError as error:
            raise json_error(web.HTTPBadRequest, str(error)) from None
        self.daemon.log.info(f"{what} set", customer=customer, value=value, by="HTTP")
        return web.json_response({"customer": customer, key: value})

    async def reset_usage(self, request: web.Request) -> web.Response:
        """condor_userprio -resetusage NAME (``{"customer": NAME}``) or -resetall (``{"all": true}``)."""
        body = await _json_body(request)
        daemon = self.daemon
        now = daemon.clock.now()
        if body.get("all") is True:
            names = await asyncio.to_thread(daemon.accountant.reset_all_usage, now)
        else:
            names = [_customer(body)]
            try:
                await asyncio.to_thread(daemon.accountant.reset_usage, names[0], now)
            except UnknownCustomer as error:
                raise json_error(web.HTTPNotFound, f"{error}; `negotiatord userprio -allusers` lists them") from None
        daemon.log.info("accumulated usage reset", customers=len(names), by="HTTP")
        return web.json_response({"reset": names, "time": now})

    async def delete(self, request: web.Request) -> web.Response:
        """condor_userprio -delete NAME: ``{"customer": NAME}``."""
        customer = _customer(await _json_body(request))
        try:
            await asyncio.to_thread(self.daemon.accountant.delete_customer, customer)
        except UnknownCustomer as error:
            raise json_error(web.HTTPNotFound, f"{error}; `negotiatord userprio -allusers` lists them") from None
        self.daemon.log.info("accountant record deleted", customer=customer, by="HTTP")
        return web.json_response({"deleted": customer})

    async def metrics(self, request: web.Request) -> web.Response:
        return web.Response(body=self.daemon.metrics.exposition(),
                            headers={"Content-Type": CONTENT_TYPE_LATEST})


def _client(request: web.Request) -> str:
    """Who a read is counted against: the peer's address."""
    return request.remote or "unknown"


def _json(document: Callable[[], Any]) -> bytes:
    return json.dumps(document()).encode()


def _match_page(matchlog: MatchLog, after: int, limit: int) -> bytes:
    """A page of GET /v1/matches as JSON (on a reader thread)."""
    rows = matchlog.since(after, limit)
    first, last = matchlog.bounds()
    return json.dumps({
        "matches": [row.document() for row in rows],
        "next": rows[-1].seq if rows else after,
        "first_seq": first,
        "last_seq": last,
    }).encode()


def _match_events(matchlog: MatchLog, cursor: int) -> tuple[bytes, int]:
    """The server-sent events of the next page after ``cursor``, and the last sequence number in
    it (on a reader thread)."""
    events = []
    for row in matchlog.since(cursor, MATCH_PAGE):
        data = json.dumps(row.document(), separators=(",", ":"))
        event = "match" if isinstance(row.match, Match) else "preemption"
        events.append(f"id: {row.seq}\nevent: {event}\ndata: {data}\n\n")
        cursor = row.seq
    return "".join(events).encode(), cursor


def _int_query(request: web.Request, name: str, default: int) -> int:
    text = request.query.get(name)
    return default if text is None else _int(text, name)


def _int(text: str, name: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise json_error(web.HTTPBadRequest, f"{name} must be a whole number, got {text[:40]!r}") from None
    if not 0 <= value <= MAX_SEQUENCE:
        raise json_error(web.HTTPBadRequest, f"{name} must be between 0 and {MAX_SEQUENCE}, got {text[:40]!r}"
                         + ("..." if len(text) > 40 else ""))
    return value


async def _json_body(request: web.Request) -> dict[str, Any]:
    try:
        body = json.loads(await request.read() or b"{}")
    except ValueError as error:
        raise json_error(web.HTTPBadRequest, f"the body is not JSON: {error}") from None
    except RecursionError:
        raise json_error(web.HTTPBadRequest, "the body is JSON nested too deeply to read") from None
    if not isinstance(body, dict):
        raise json_error(web.HTTPBadRequest, "the body must be a JSON object")
    return body


def _customer(body: dict[str, Any]) -> str:
    customer = body.get("customer")
    try:
        return check_customer_name(customer.strip() if isinstance(customer, str) else customer)
    except ValueError as error:
        raise json_error(web.HTTPBadRequest, str(error)) from None
