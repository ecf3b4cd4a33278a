"""systemd integration: the sd_notify datagram protocol (sd_notify(3)) and the unit file.

The notifier is checked against real datagram sockets, bound as systemd binds its own; the unit
file against ``systemd-analyze verify``, systemd's own checker.
"""

from __future__ import annotations

import os
import socket
import subprocess
import uuid

from negotiatord.service.systemd import SystemdNotifier

from tests.service_harness import ROOT

UNIT = ROOT / "systemd" / "negotiatord.service"


def _receive(sock: socket.socket) -> list[str]:
    sock.settimeout(2)
    return sock.recv(4096).decode().splitlines()


def test_notifications_reach_a_path_socket(tmp_path):
    path = tmp_path / "notify"
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as listener:
        listener.bind(str(path))
        notifier = SystemdNotifier({"NOTIFY_SOCKET": str(path)})
        notifier.ready("serving http://127.0.0.1:1")
        assert _receive(listener) == ["READY=1", "STATUS=serving http://127.0.0.1:1", f"MAINPID={os.getpid()}"]
        notifier.reloading()
        reloading = _receive(listener)
        assert reloading[0] == "RELOADING=1" and reloading[1].startswith("MONOTONIC_USEC=")
        notifier.watchdog()
        assert _receive(listener) == ["WATCHDOG=1"]
        notifier.close()


def test_an_abstract_socket_is_written_with_a_leading_at_sign():
    name = f"negotiatord-test-{uuid.uuid4()}"
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as listener:
        listener.bind("\0" + name)
        notifier = SystemdNotifier({"NOTIFY_SOCKET": "@" + name})
        notifier.stopping()
        assert _receive(listener) == ["STOPPING=1", "STATUS=stopping"]
        notifier.close()


def test_outside_systemd_nothing_is_sent_and_nothing_fails():
    notifier = SystemdNotifier({})
    assert not notifier.enabled and notifier.watchdog_interval is None
    notifier.ready("x")  # no socket: a no-op


def test_a_vanished_socket_does_not_take_the_daemon_down(tmp_path):
    notifier = SystemdNotifier({"NOTIFY_SOCKET": str(tmp_path / "gone")})
    notifier.watchdog()  # logged, not raised


def test_the_watchdog_interval_is_half_of_watchdog_usec_for_this_process_only():
    assert SystemdNotifier({"WATCHDOG_USEC": "30000000"}).watchdog_interval == 15.0
    assert SystemdNotifier({"WATCHDOG_USEC": "30000000", "WATCHDOG_PID": str(os.getpid())}).watchdog_interval == 15.0
    assert SystemdNotifier({"WATCHDOG_USEC": "30000000", "WATCHDOG_PID": "1"}).watchdog_interval is None
    assert SystemdNotifier({"WATCHDOG_USEC": "0"}).watchdog_interval is None


def test_the_unit_file_passes_systemd_analyze_verify(tmp_path):
    # verify checks that ExecStart exists: point it at this checkout's negotiatord
    unit = tmp_path / "negotiatord.service"
    unit.write_text(UNIT.read_text().replace("/opt/negotiatord/bin/negotiatord",
                                             str(ROOT / ".venv" / "bin" / "negotiatord")))
    done = subprocess.run(["systemd-analyze", "verify", str(unit)], capture_output=True, text=True, timeout=60)
    # unknown or misspelt directives are only warnings: any output is a finding
    assert done.returncode == 0 and done.stderr.strip() == "" and done.stdout.strip() == "", done.stderr
    text = UNIT.read_text()
    assert "\nType=notify\n" in text and "\nExecReload=/bin/kill -HUP $MAINPID\n" in text
    assert "\nWatchdogSec=" in text
