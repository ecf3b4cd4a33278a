"""The ingestion API: ads in, like a collector's UPDATE_* and INVALIDATE_* commands, over HTTP.

``POST /v1/ads/{slots,jobs,submitters}`` files the ads of the body (long form, ``[...]`` form or
JSON; one ad or many); ``POST /v1/ads/{kind}/invalidate`` removes the ads the body's ads name
(by the same key attributes). A batch answers 200 with the ads accepted and, for each refused ad,
its position in the body, its line and the reason; the accepted ones are filed either way. Only a
body that cannot be read as ads at all is refused whole (400). Bearer-token checks and the body
size limit (413) are the service's middleware; this module only sees authorised, bounded bodies.
"""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from concurrent.futures import Executor
from dataclasses import dataclass, field
from collections.abc import Callable

import structlog
from aiohttp import web

from negotiatord.ads import AdFormatError, AdProblem
from negotiatord.ads.reader import decode_ads
from negotiatord.feed.intake import Intake, take_in_text
from negotiatord.feed.kinds import AdKind
from negotiatord.feed.parsing import FairParser
from negotiatord.feed.store import AdStore, release

# Below this size a body is parsed on the event loop: the hop to the parser thread costs more than
# the parse (and a few hundred microseconds do not hold up other requests).
INLINE_PARSE_BYTES = 32 * 1024
# Ads filed per turn of the event loop: a 1,000-ad batch is filed in a few milliseconds, but in
# slices, so status requests arriving meanwhile are not kept waiting behind it.
FILING_SLICE = 200
_SHOWN_PROBLEMS = 5  # per request, in the log; the response lists them all

log = structlog.get_logger("negotiatord.feed")


@dataclass
class FeedTotals:
    """Running counts since start-up, by kind (the /metrics counters)."""

    filed: Counter = field(default_factory=Counter)
    refused: Counter = field(default_factory=Counter)
    invalidated: Counter = field(default_factory=Counter)
    expired: Counter = field(default_factory=Counter)


class FeedApi:
    """Request handlers over one :class:`AdStore`.

    ``clock`` gives monotonic seconds (ad deadlines); ``lifetime`` the current CLASSAD_LIFETIME
    (a reload may change it); ``parsing`` reads large bodies off the event loop, clients in turn;
    ``freeing`` frees replaced ads off it.
    """

    def __init__(self, store: AdStore, totals: FeedTotals, clock: Callable[[], float],
                 lifetime: Callable[[], float], parsing: FairParser, freeing: Executor) -> None:
        self.store = store
        self.totals = totals
        self.clock = clock
        self.lifetime = lifetime
        self.parsing = parsing
        self.freeing = freeing

    def routes(self) -> list[web.RouteDef]:
        return [
            web.post("/v1/ads/{kind}", self.post_ads),
            web.post("/v1/ads/{kind}/invalidate", self.invalidate),
        ]

    async def post_ads(self, request: web.Request) -> web.Response:
        kind = _kind(request)
        intake = await self._take_in(kind, request)
        filed = 0
        for start in range(0, len(intake.accepted), FILING_SLICE):
            if start:
                await asyncio.sleep(0)
            filed += self.store.update(kind, intake.accepted[start:start + FILING_SLICE], self.clock(),
                                       self.lifetime())
        self.bury()
        self._count(kind, filed, intake.problems, self.totals.filed)
        return web.json_response({
            "kind": kind.value,
            "accepted": filed,
            "rejected": [_problem(p) for p in intake.problems],
            "filed": len(self.store.table(kind)),
        })

    async def invalidate(self, request: web.Request) -> web.Response:
        kind = _kind(request)
        intake = await self._take_in(kind, request)
        removed, unknown = self.store.invalidate(kind, [key for key, _ in intake.accepted])
        self.bury()
        self._count(kind, removed, intake.problems, self.totals.invalidated)
        return web.json_response({
            "kind": kind.value,
            "removed": removed,
            "unknown": unknown,
            "rejected": [_problem(p) for p in intake.problems],
            "filed": len(self.store.table(kind)),
        })

    def bury(self, *more: object) -> None:
        """Free what the store replaced or removed (and ``more``) on a worker thread, not on the
        event loop."""
        buried = self.store.take_graveyard() + list(more)
        if buried:
            asyncio.get_running_loop().run_in_executor(self.freeing, release, buried)

    async def _take_in(self, kind: AdKind, request: web.Request) -> Intake:
        body = await request.read()
        source = f"{request.method} {request.path}"
        try:
            if len(body) < INLINE_PARSE_BYTES:
                intake = take_in_body(kind, body, source)
            else:
                intake = await self.parsing.take_in(request.remote or "unknown", kind, body, source)
        except AdFormatError as error:
            raise json_error(web.HTTPBadRequest, str(error)) from None
        if not intake.accepted and not intake.problems:
            raise json_error(web.HTTPBadRequest, f"{source}: the body holds no ads")
        return intake

    def _count(self, kind: AdKind, done: int, problems: list[AdProblem], done_counter: Counter) -> None:
        done_counter[kind.value] += done
        self.totals.refused[kind.value] += len(problems)
        if problems:
            log.warning("ads refused", kind=kind.value, refused=len(problems), accepted=done,
                        first=[str(p) for p in problems[:_SHOWN_PROBLEMS]])


def take_in_body(kind: AdKind, body: bytes, source: str) -> Intake:
    """Decode and parse a request body; AdFormatError if it cannot be read as ads at all. An ad
    holding bytes that are not UTF-8 is refused alone, as the reader does for files."""
    return take_in_text(kind, decode_ads(body), source)


def _kind(request: web.Request) -> AdKind:
    try:
        return AdKind(request.match_info["kind"])
    except ValueError:
        choices = ", ".join(k.value for k in AdKind)
        raise json_error(web.HTTPNotFound, f"no such kind of ad; use one of {choices}") from None


def _problem(problem: AdProblem) -> dict:
    entry = {"position": problem.position, "line": problem.line, "reason": problem.reason}
    if problem.key is not None:
        entry["key"] = problem.key
    return entry


def json_error(kind: type[web.HTTPException], message: str, **headers: str) -> web.HTTPException:
    """An HTTP error whose body is ``{"error": message}``, for clients that parse every answer."""
    return kind(text=json.dumps({"error": message}), content_type="application/json", headers=headers)
