"""No connection lasts for ever, and there are never more than the daemon can hold.

* A client that sends part of its headers and then nothing is cut off after
  ``NEGOTIATORD_HEADER_TIMEOUT``; one whose body does not arrive within ``NEGOTIATORD_BODY_TIMEOUT``
  is answered 408 and cut off.
* Beyond ``NEGOTIATORD_MAX_CONNECTIONS`` (in all) or ``NEGOTIATORD_MAX_CONNECTIONS_PER_CLIENT`` (from
  one address), a new connection is answered 503 (a second later) and closed; the limit is kept below the
  process's file limit, so ``accept()`` never runs out of descriptors; if it fails all the same,
  that is logged once a minute, not once per attempt.

Loopback addresses other than 127.0.0.1 (127.0.0.2, ...) stand in for other clients.
"""

from __future__ import annotations

import asyncio
import json
import resource
import socket
import subprocess
import sys
import time

import pytest
from structlog.testing import capture_logs

from negotiatord.service.connections import RESERVED_FILES, AcceptFailures, file_limit_for

from tests.service_harness import ROOT, DaemonProcess

SHORT = {"NEGOTIATOR_INTERVAL": "3600", "NEGOTIATORD_HEADER_TIMEOUT": "1", "NEGOTIATORD_BODY_TIMEOUT": "1"}


@pytest.fixture(scope="module")
def daemon(tmp_path_factory):
    process = DaemonProcess(tmp_path_factory.mktemp("connections"),
                            settings={**SHORT, "NEGOTIATORD_MAX_CONNECTIONS": "40",
                                      "NEGOTIATORD_MAX_CONNECTIONS_PER_CLIENT": "10"})
    with process.running():
        yield process


def connect(daemon: DaemonProcess, source: str = "127.0.0.1") -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", daemon.port), timeout=10, source_address=(source, 0))
    return sock


def closed_within(sock: socket.socket, seconds: float) -> tuple[bool, bytes]:
    """Whether the daemon closed ``sock`` within ``seconds``, and what it sent before."""
    sock.settimeout(seconds)
    received = b""
    try:
        while chunk := sock.recv(65536):
            received += chunk
    except TimeoutError:
        return False, received
    except ConnectionResetError:
        pass
    return True, received


def status_from(daemon: DaemonProcess, source: str) -> int:
    with connect(daemon, source) as sock:
        sock.sendall(b"GET /v1/status HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        closed, answer = closed_within(sock, 10)
    assert closed
    return int(answer.split(b" ", 2)[1])


def test_a_client_that_stops_in_its_headers_is_cut_off(daemon):
    with connect(daemon) as sock:
        sock.sendall(b"GET /v1/status HTTP/1.1\r\n")
        started = time.monotonic()
        closed, _ = closed_within(sock, 10)
    assert closed and time.monotonic() - started < 5


def test_a_client_that_connects_and_sends_nothing_is_cut_off(daemon):
    with connect(daemon) as sock:
        started = time.monotonic()
        closed, _ = closed_within(sock, 10)
    assert closed and time.monotonic() - started < 5


def test_a_body_that_does_not_arrive_in_time_is_answered_408(daemon):
    with connect(daemon) as sock:
        sock.sendall(f"POST /v1/ads/slots HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {daemon.token}\r\n"
                     "Content-Length: 100000\r\n\r\n".encode() + b'MyType = "Machine"\n')
        started = time.monotonic()
        closed, answer = closed_within(sock, 10)
    assert closed and time.monotonic() - started < 5
    assert answer.startswith(b"HTTP/1.1 408") and b"NEGOTIATORD_BODY_TIMEOUT" in answer


def test_connections_beyond_a_clients_share_are_refused_and_others_are_served(daemon):
    held = [connect(daemon) for _ in range(10)]          # idle, within the header timeout
    try:
        with connect(daemon) as extra:
            closed, answer = closed_within(extra, 5)
        assert closed and answer.startswith(b"HTTP/1.1 503")
        body = json.loads(answer.split(b"\r\n\r\n", 1)[1])
        assert "NEGOTIATORD_MAX_CONNECTIONS_PER_CLIENT" in body["error"]
        assert status_from(daemon, "127.0.0.2") == 200       # another client is served
    finally:
        for sock in held:
            sock.close()


def test_connections_beyond_the_limit_are_refused_and_the_daemon_recovers(daemon):
    held = [connect(daemon, f"127.0.0.{3 + i // 10}") for i in range(40)]
    try:
        with connect(daemon, "127.0.1.1") as extra:
            closed, answer = closed_within(extra, 5)
        assert closed and answer.startswith(b"HTTP/1.1 503") and b"NEGOTIATORD_MAX_CONNECTIONS" in answer
    finally:
        for sock in held:
            sock.close()
    deadline = time.monotonic() + 10
    while status_from(daemon, "127.0.1.1") != 200:
        assert time.monotonic() < deadline
        time.sleep(0.1)
    connections = daemon.status()["http"]["connections"]
    assert connections["limit"] == 40 and connections["refused"] >= 2


def test_the_connection_limit_stays_below_the_file_limit(tmp_path):
    """Under a file limit of 256 descriptors (hard, so it cannot be raised), 600 idle connections
    never make accept() fail: those beyond the limit are refused, the log stays quiet, and the
    daemon serves again once the idle ones are cut off."""
    daemon = DaemonProcess(tmp_path / "d", settings={**SHORT, "NEGOTIATORD_HEADER_TIMEOUT": "3"},
                           preexec=lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (256, 256)))
    daemon.start()
    try:
        limit = daemon.status()["http"]["connections"]["limit"]
        assert limit < 256
        held = []
        for i in range(600):
            try:
                held.append(connect(daemon, f"127.0.{2 + i // 50}.{1 + i % 50}"))
            except OSError:
                break        # this process's own descriptors
        time.sleep(4)        # the header timeout cuts them all off
        for sock in held:
            sock.close()
        assert status_from(daemon, "127.0.0.1") == 200
    finally:
        daemon.stop()
    log = daemon.log_text()
    assert "out of system resource" not in log and "Traceback" not in log
    assert any(e["event"].startswith("connection limit reached") for e in daemon.log_events())


def test_file_limit_is_raised_toward_the_hard_limit_and_the_connections_fit_under_it():
    assert file_limit_for(1000, soft=1024, hard=524288) == (1000 + 256, 1000)
    assert file_limit_for(1000, soft=4096, hard=524288) == (4096, 1000)
    assert file_limit_for(1000, soft=512, hard=512) == (512, 256)
    assert file_limit_for(1000, soft=100, hard=100) == (100, 50)


def test_accept_failures_are_logged_once_a_minute():
    failures = AcceptFailures(interval=60.0)
    loop = asyncio.new_event_loop()
    try:
        with capture_logs() as events:
            for _ in range(10_000):
                failures.handle(loop, {"message": "socket.accept() out of system resource",
                                       "exception": OSError(24, "Too many open files")})
    finally:
        loop.close()
    assert len(events) == 1 and events[0]["log_level"] == "error"
    assert failures.count == 10_000


def test_the_systemd_unit_gives_room_for_the_connections():
    unit = (ROOT / "systemd" / "negotiatord.service").read_text()
    [line] = [line for line in unit.splitlines() if line.startswith("LimitNOFILE=")]
    assert int(line.split("=")[1]) >= 1000 + RESERVED_FILES


def test_knobs_are_checked(tmp_path):
    daemon = DaemonProcess(tmp_path / "d", settings={"NEGOTIATORD_MAX_CONNECTIONS": "0"})
    run = subprocess.run([sys.executable, "-m", "negotiatord", "run", "--config", str(daemon.config)],
                         cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert run.returncode == 2 and "NEGOTIATORD_MAX_CONNECTIONS" in run.stderr
