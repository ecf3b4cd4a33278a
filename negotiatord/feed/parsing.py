"""Request bodies parsed a few ads at a time, clients in turn, on one thread.

classad2 parses with the GIL held, so more parser threads would only take turns on it; with one
thread parsing each body whole before the next, one client's 10 MB body held every other
client's ads for seconds. Here the parser thread takes the clients (by address) in turn and parses
the oldest body of each for a turn (:data:`TURN_S`, or :data:`TURN_ADS` ads) before moving on: a
body waits at most one turn of each other client with work, whatever the size of their bodies,
and no single ad takes long (:func:`~negotiatord.ads.limits.ad_size_fault`). The ads read in a
turn are keyed for filing (:func:`~negotiatord.feed.intake.take_in`) in the same turn.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Iterator

from negotiatord.ads import AdBatch, parse_in_steps
from negotiatord.ads.reader import decode_ads
from negotiatord.feed.intake import Intake, take_in
from negotiatord.feed.kinds import AdKind

TURN_S = 0.005
TURN_ADS = 200


class _Body:
    """One request body, read in turns; its request awaits ``future`` (on ``loop``)."""

    def __init__(self, kind: AdKind, data: bytes, source: str, loop: asyncio.AbstractEventLoop,
                 future: asyncio.Future[Intake]) -> None:
        self.kind, self.data, self.source = kind, data, source
        self.loop, self.future = loop, future
        self.batch: AdBatch | None = None
        self.steps: Iterator[None] = iter(())
        self.intake = Intake([], [])
        self._keyed = (0, 0)      # ads and problems of the batch keyed so far

    def turn(self) -> bool:
        """Parse for one turn; True once the body is done (read, refused or given up on)."""
        if self.future.cancelled():        # the client went away
            return True
        try:
            if self.batch is None:
                self.batch, self.steps = parse_in_steps(decode_ads(self.data), self.source)
                self.data = b""
            deadline = time.perf_counter() + TURN_S
            for _ in range(TURN_ADS):
                if next(self.steps, StopIteration) is StopIteration:
                    self._key(self.batch)
                    self.intake.problems.sort(key=lambda problem: problem.position)
                    self._settle(self.intake, None)
                    return True
                if time.perf_counter() > deadline:
                    break
            self._key(self.batch)
            return False
        except Exception as error:     # AdFormatError, or a failure the request must answer for
            self._settle(None, error)
            return True

    def _key(self, batch: AdBatch) -> None:
        """Key the ads (and name the problems) read since the last call."""
        ads, problems = self._keyed
        read = take_in(self.kind, AdBatch(batch.ads[ads:], batch.problems[problems:], batch.positions[ads:],
                                          batch.lines[ads:]), self.source)
        self.intake.accepted.extend(read.accepted)
        self.intake.problems.extend(read.problems)
        self._keyed = (len(batch.ads), len(batch.problems))

    def _settle(self, intake: Intake | None, error: Exception | None) -> None:
        def settle() -> None:
            if self.future.done():
                return
            if error is None:
                self.future.set_result(intake)     # type: ignore[arg-type]
            else:
                self.future.set_exception(error)
        try:
            self.loop.call_soon_threadsafe(settle)
        except RuntimeError:
            pass        # the loop is closed: the daemon has stopped


class FairParser:
    """The parser thread and the bodies waiting for it, by client."""

    def __init__(self) -> None:
        self._work = threading.Condition()
        self._clients: OrderedDict[str, deque[_Body]] = OrderedDict()
        self._closed = False
        self._thread: threading.Thread | None = None      # started with the first body

    async def take_in(self, client: str, kind: AdKind, data: bytes, source: str) -> Intake:
        """The ads of ``data`` to file as ``kind``, read in turn with other clients' bodies;
        AdFormatError if it cannot be read as ads at all."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Intake] = loop.create_future()
        with self._work:
            self._clients.setdefault(client, deque()).append(_Body(kind, data, source, loop, future))
            self._work.notify()
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="ad-parser", daemon=True)
                self._thread.start()
        return await future

    def _run(self) -> None:
        while True:
            with self._work:
                while not self._clients and not self._closed:
                    self._work.wait()
                if self._closed:
                    return
                client, bodies = next(iter(self._clients.items()))
                self._clients.move_to_end(client)        # the next turn is the next client's
                body = bodies[0]
            done = body.turn()
            if done:
                with self._work:
                    bodies.popleft()
                    if not bodies:
                        del self._clients[client]

    def close(self) -> None:
        """Stop the thread after its current turn; bodies still waiting are not read."""
        with self._work:
            self._closed = True
            self._work.notify()
