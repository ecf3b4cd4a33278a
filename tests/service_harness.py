"""Running the real daemon as a subprocess on a loopback port, for the service tests; or in the
test's own process (:func:`in_process`), where a test can reach into it at a precise moment.

Each daemon gets its own directory: a copy of the bundled configs (they include each other through
$(CONFIG_ROOT)), a config that includes default.conf and adds the test's settings, and a state
directory. Readiness comes from the daemon itself over the sd_notify protocol (a datagram socket
the test binds), so the tests also prove what systemd would see.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any
from collections.abc import Awaitable, Callable, Iterator

if TYPE_CHECKING:
    from negotiatord.service.daemon import Daemon

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
POOL = DATA / "ospool" / "pool_sample.ads.gz"
NOW = 1783286288  # the OSPool sample's own LastNegotiationCycleTime0: glidein START clauses hold then


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@dataclass
class Answer:
    status: int
    body: Any
    headers: dict[str, str]


@dataclass
class DaemonProcess:
    """One negotiatord, started by :meth:`start` and stopped by :meth:`stop` or :meth:`kill`."""

    home: Path
    settings: dict[str, str] = field(default_factory=dict)
    args: list[str] = field(default_factory=list)
    watchdog_usec: int | None = None
    include: str = "$(CONFIG_ROOT)/default.conf"    # the config the daemon's own builds on
    module: str = "negotiatord"                      # what ``python -m`` runs: negotiatord's command line
    environment: dict[str, str] = field(default_factory=dict)
    preexec: Callable[[], None] | None = None      # run in the daemon's process before it starts

    def __post_init__(self) -> None:
        self.home.mkdir(parents=True, exist_ok=True)
        for conf in (ROOT / "config").glob("*.conf"):
            shutil.copy(conf, self.home / conf.name)
        self.port = free_port()
        self.state = self.home / "state"
        self.config = self.home / "negotiatord.conf"
        self.log_path = self.home / "daemon.log"
        self.notify_path = self.home / "notify.sock"
        self.process: subprocess.Popen | None = None
        self.write_config()

    # -- config -------------------------------------------------------------------------------

    def write_config(self, extra: str = "") -> None:
        lines = [f"include : {self.include}",
                 f"NEGOTIATORD_STATE_DIR = {self.state}",
                 f"NEGOTIATORD_HTTP_PORT = {self.port}",
                 "NEGOTIATORD_TOKEN_FILE = $(NEGOTIATORD_STATE_DIR)/token",
                 *(f"{name} = {value}" for name, value in self.settings.items()), extra]
        self.config.write_text("\n".join(lines) + "\n")

    # -- process ------------------------------------------------------------------------------

    def start(self, timeout: float = 30.0) -> None:
        """Start the daemon and wait until it is ready. A port :func:`free_port` found free may be
        taken before the daemon binds it (an outgoing connection's ephemeral port): then the daemon
        is started again on another."""
        for _ in range(3):
            try:
                return self._start(timeout)
            except AssertionError as failed:
                if "address already in use" not in str(failed) or "NEGOTIATORD_HTTP_PORT" in self.settings:
                    raise
                self.port = free_port()
                self.write_config()

    def _start(self, timeout: float) -> None:
        if self.notify_path.exists():
            self.notify_path.unlink()
        self.notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.notify.bind(str(self.notify_path))
        self.notify.settimeout(0.2)
        self.messages: list[str] = []
        threading.Thread(target=self._listen, args=(self.notify,), daemon=True).start()
        env = dict(os.environ, NOTIFY_SOCKET=str(self.notify_path), **self.environment)
        env.pop("WATCHDOG_PID", None)
        if self.watchdog_usec:
            env["WATCHDOG_USEC"] = str(self.watchdog_usec)
        self.log = self.log_path.open("a")
        self.process = subprocess.Popen(
            [sys.executable, "-m", self.module, "run", "--config", str(self.config), *self.args],
            cwd=ROOT, env=env, stdout=self.log, stderr=self.log, preexec_fn=self.preexec)
        self.wait_for_message("READY=1", timeout)

    def _listen(self, notify: socket.socket) -> None:
        """Read sd_notify datagrams as systemd does: always, so the daemon's queue never fills."""
        while True:
            try:
                self.messages.append(notify.recv(4096).decode())
            except TimeoutError:
                continue
            except OSError:
                return  # closed

    def wait_for_message(self, wanted: str, timeout: float = 15.0, since: int = 0) -> int:
        """Wait for an sd_notify datagram, the ``since``-th or later, holding the line ``wanted``;
        returns its index."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for index in range(since, len(self.messages)):
                if wanted in self.messages[index].splitlines():
                    return index
            if self.process is not None and self.process.poll() is not None:
                code, log = self.process.returncode, self.log_text()
                self._closed()
                raise AssertionError(f"negotiatord exited ({code}):\n{log}")
            time.sleep(0.02)
        raise AssertionError(f"no {wanted} from negotiatord within {timeout} s; got {self.messages[since:]}\n"
                             f"{self.log_text()}")

    def signal(self, number: int) -> None:
        assert self.process is not None
        self.process.send_signal(number)

    @contextmanager
    def running(self) -> Iterator[DaemonProcess]:
        """The daemon started for the block's life (a module's fixture), stopped after it."""
        self.start()
        try:
            yield self
        finally:
            self.stop()

    def stop(self, timeout: float = 15.0) -> int:
        """SIGTERM and wait; returns the exit status."""
        if self.process is None:
            return 0
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        try:
            code = self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            # where it stopped stopping: the daemon logs each step of its stop, then "stopped"
            self.kill()
            raise AssertionError(f"negotiatord did not stop within {timeout} s of SIGTERM:\n"
                                 f"{self.log_text()[-6000:]}") from None
        self._closed()
        return code

    def wait(self, timeout: float = 15.0) -> int:
        """Wait for the daemon to exit by itself; returns the exit status."""
        assert self.process is not None
        code = self.process.wait(timeout)
        self._closed()
        return code

    def kill(self) -> None:
        assert self.process is not None
        self.process.kill()
        self.process.wait(10)
        self._closed()

    def _closed(self) -> None:
        self.process = None
        self.log.close()
        self.notify.close()

    def log_text(self) -> str:
        return self.log_path.read_text() if self.log_path.exists() else ""

    def log_events(self) -> list[dict]:
        return [json.loads(line) for line in self.log_text().splitlines() if line.startswith("{")]

    # -- HTTP ---------------------------------------------------------------------------------

    @property
    def url(self) -> str:
        scheme = "https" if self.tls is not None else "http"
        return f"{scheme}://127.0.0.1:{self.port}"

    @property
    def tls(self) -> ssl.SSLContext | None:
        """With a configured certificate, a client context that trusts exactly it."""
        cert = self.settings.get("NEGOTIATORD_TLS_CERTIFICATE")
        return ssl.create_default_context(cafile=cert) if cert else None

    @property
    def token(self) -> str:
        return (self.state / "token").read_text().strip()

    def request(self, method: str, path: str, body: bytes | str | dict | None = None,
                token: str | None = "default", headers: dict[str, str] | None = None) -> Answer:
        data = json.dumps(body).encode() if isinstance(body, dict) else (
            body.encode() if isinstance(body, str) else body)
        sent = dict(headers or {})
        if token == "default":
            token = self.token
        if token is not None:
            sent["Authorization"] = f"Bearer {token}"
        request = urllib.request.Request(self.url + path, data=data, method=method, headers=sent)
        try:
            with urllib.request.urlopen(request, timeout=60, context=self.tls) as answer:
                return Answer(answer.status, _decode(answer.read()), dict(answer.headers))
        except urllib.error.HTTPError as error:
            return Answer(error.code, _decode(error.read()), dict(error.headers))

    def get(self, path: str) -> Any:
        answer = self.request("GET", path, token=None)
        assert answer.status == 200, (path, answer)
        return answer.body

    def get_text(self, path: str) -> str:
        answer = self.request("GET", path, token=None)
        assert answer.status == 200, (path, answer)
        return answer.body if isinstance(answer.body, str) else json.dumps(answer.body)

    def status(self) -> dict:
        return self.get("/v1/status")

    def wait_for_cycle(self, after: int, timeout: float = 60.0) -> dict:
        """Wait until a cycle with an id above ``after`` has finished; returns its summary."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            last = self.status()["last_cycle"]
            if last is not None and last["Id"] > after:
                return last
            time.sleep(0.05)
        raise AssertionError(f"no cycle after {after} within {timeout} s\n{self.log_text()}")

    def reschedule(self) -> int:
        """Ask for a cycle and wait for it; returns the new cycle's id."""
        deadline = time.monotonic() + 60
        while self.status()["cycle"]["running"] and time.monotonic() < deadline:
            time.sleep(0.05)  # a cycle already running started before what the caller just sent
        last = self.status()["last_cycle"]
        before = last["Id"] if last else 0
        assert self.request("POST", "/v1/reschedule").status == 202
        return self.wait_for_cycle(before)["Id"]


def _decode(raw: bytes) -> Any:
    try:
        return json.loads(raw)
    except ValueError:
        return raw.decode(errors="replace")


# -- in this process ----------------------------------------------------------------------------

SAMPLE_POOL = {"slots": ROOT / "samples" / "slots.ads", "jobs": ROOT / "samples" / "jobs.ads"}
# What the first cycle over the sample pool with config/default.conf matches (the dry run on the
# same files says so: `negotiatord negotiate --config config/default.conf --slots ... --jobs ...`).
SAMPLE_FIRST_CYCLE_MATCHES = 44


def in_process(home: Path, settings: dict[str, str], preload: dict[str, Path] | None = None) -> Daemon:
    """A daemon set up as :class:`DaemonProcess` would start it, not yet serving (see :func:`serve`)."""
    from negotiatord.ads import read_ads
    from negotiatord.feed.kinds import AdKind
    from negotiatord.service.daemon import Daemon, DaemonClock
    from negotiatord.settings import load_settings

    config = DaemonProcess(home, settings=settings).config   # writes the config and nothing else
    ads = {AdKind(kind): read_ads(path) for kind, path in (preload or {}).items()}
    return Daemon(config, load_settings(config), DaemonClock(), ads)


def serve(daemon: Daemon, scenario: Callable[[Daemon], Awaitable[None]]) -> None:
    """Serve until ``scenario(daemon)`` returns (or fails), then stop as on SIGTERM."""
    async def main() -> None:
        serving = asyncio.ensure_future(daemon.serve())
        try:
            await scenario(daemon)
        finally:
            daemon.stop()
            await serving

    asyncio.run(main())


async def cycle_after(daemon: Daemon, after: int, timeout: float = 60.0) -> int:
    """Wait until a cycle with an id above ``after`` has finished; returns the last cycle's id."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        last = daemon.history.last
        if last is not None and last.outcome.cycle_id > after:
            return last.outcome.cycle_id
        await asyncio.sleep(0.05)
    raise AssertionError(f"no cycle after {after} within {timeout} s")


async def next_cycle(daemon: Daemon) -> int:
    """Reschedule and wait for the cycle; returns its id."""
    last = daemon.history.last
    before = last.outcome.cycle_id if last else 0
    daemon.reschedule()
    return await cycle_after(daemon, before)

