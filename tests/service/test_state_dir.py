"""The state directory: one daemon at a time, and nothing in it readable by other users.

* A second daemon on the same state directory exits 2 naming the first one's pid: two daemons
  would commit into one accountant and one match log, their cycle ids interleaved.
* The databases (and SQLite's ``-wal`` and ``-shm`` files beside them, which SQLite creates with
  the database file's own permissions: ``robust_open``/``findCreateFileMode`` in its os_unix.c) are
  0600 whatever the umask and the directory's mode; looser ones are tightened, with a warning.
* A token file that others can read is refused, as OpenSSH refuses a private key file
  (``sshkey_perm_ok`` in authfile.c: owned by the user and ``st_mode & 077`` set: "UNPROTECTED
  PRIVATE KEY FILE"), at start and on reload.
"""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
import time

from structlog.testing import capture_logs

from tests.service_harness import ROOT, SAMPLE_POOL, DaemonProcess, in_process, next_cycle, serve

QUICK = {"NEGOTIATOR_INTERVAL": "3600", "NEGOTIATOR_CYCLE_DELAY": "0", "NEGOTIATOR_MIN_INTERVAL": "0"}
DATABASES = ("accountant.sqlite", "matches.sqlite")


def mode(path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_a_second_daemon_on_the_same_state_directory_exits_2_naming_the_first(tmp_path):
    first = DaemonProcess(tmp_path / "first", settings=QUICK)
    first.start()
    second = DaemonProcess(tmp_path / "second", settings={**QUICK, "NEGOTIATORD_STATE_DIR": str(first.state)})
    try:
        run = subprocess.run([sys.executable, "-m", "negotiatord", "run", "--config", str(second.config)],
                             cwd=ROOT, capture_output=True, text=True, timeout=60)
        assert run.returncode == 2, run.stderr
        assert str(first.state) in run.stderr and f"pid {first.process.pid}" in run.stderr
        assert "Traceback" not in run.stderr
        assert first.status()["daemon"]["pid"] == first.process.pid     # the first one serves on
    finally:
        assert first.stop() == 0
    second.start()                      # the directory is free once the first has stopped
    assert second.stop() == 0


def test_databases_are_private_whatever_the_umask_and_the_directory(tmp_path):
    home = tmp_path / "d"
    state = home / "state"
    state.mkdir(parents=True)
    state.chmod(0o755)
    old_umask = os.umask(0o022)
    seen: dict[str, int] = {}

    async def scenario(daemon) -> None:
        await next_cycle(daemon)     # a commit: SQLite has made its -wal and -shm files
        for path in state.iterdir():
            seen[path.name] = mode(path)

    try:
        with capture_logs() as events:
            serve(in_process(home, QUICK, SAMPLE_POOL), scenario)
    finally:
        os.umask(old_umask)
    for name in DATABASES:
        for suffix in ("", "-wal", "-shm"):
            assert seen[name + suffix] == 0o600, (name + suffix, oct(seen[name + suffix]))
    assert seen["token"] == 0o600
    assert any(e["event"].startswith("the state directory is open to other users") for e in events)


def test_databases_left_readable_by_others_are_made_private_with_a_warning(tmp_path):
    home = tmp_path / "d"
    state = home / "state"
    state.mkdir(parents=True, mode=0o700)
    for name in DATABASES:
        (state / name).touch(mode=0o644)
        (state / name).chmod(0o644)
    with capture_logs() as events:
        daemon = in_process(home, QUICK)
        daemon.close()
    assert all(mode(state / name) == 0o600 for name in DATABASES)
    tightened = [e for e in events if e["event"].startswith("made private")]
    assert sorted(e["file"] for e in tightened) == sorted(str(state / name) for name in DATABASES)


def test_a_token_file_readable_by_others_is_refused_at_start_and_on_reload(tmp_path):
    daemon = DaemonProcess(tmp_path / "d", settings=QUICK)
    daemon.state.mkdir(parents=True)
    token = daemon.state / "token"
    token.write_text("a-token-others-can-read\n")
    token.chmod(0o644)
    run = subprocess.run([sys.executable, "-m", "negotiatord", "run", "--config", str(daemon.config)],
                         cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert run.returncode == 2 and str(token) in run.stderr and "0644" in run.stderr, run.stderr

    token.chmod(0o600)
    daemon.start()
    try:
        token.chmod(0o640)
        daemon.signal(signal.SIGHUP)
        deadline = time.monotonic() + 15
        while daemon.status()["reload"]["ok"] and time.monotonic() < deadline:
            time.sleep(0.05)
        reload = daemon.status()["reload"]
        assert reload["ok"] is False and str(token) in reload["error"]
        assert daemon.request("POST", "/v1/reschedule", token="a-token-others-can-read").status == 202
    finally:
        daemon.stop()
