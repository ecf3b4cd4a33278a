"""The command line in ordinary shell use: output cut short by a pipe, ``userprio --url`` in a
process whose ``$CONDOR_CONFIG`` is HTCondor's /dev/null, and what ``userprio -l`` says it prints."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys

import pytest

from tests.service_harness import ROOT, DaemonProcess

CONFIG = ROOT / "config" / "default.conf"
NEGOTIATE = ("negotiate", "--config", str(CONFIG), "--slots", str(ROOT / "samples" / "slots.ads"),
             "--jobs", str(ROOT / "samples" / "jobs.ads"))
EXIT_BROKEN_PIPE = 141   # 128 + SIGPIPE: what the shell reports for `cat big | head`'s cat


@pytest.fixture(scope="module")
def daemon(tmp_path_factory):
    process = DaemonProcess(tmp_path_factory.mktemp("daemon"), settings={"NEGOTIATOR_INTERVAL": "3600"})
    with process.running():
        yield process


def with_reader_gone(*args: str, env: dict[str, str] | None = None) -> tuple[int, str]:
    """Run negotiatord with its stdout a pipe whose only reader has already closed it (as
    ``| head`` does once it has its lines); returns the exit status and stderr."""
    child = subprocess.Popen([sys.executable, "-m", "negotiatord", *args], cwd=ROOT, env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    child.stdout.close()
    stderr = child.stderr.read()
    return child.wait(timeout=120), stderr


@pytest.mark.parametrize("form", ["json", "table"])
def test_negotiate_into_a_closed_pipe_stops_quietly(form: str) -> None:
    # Python docs, library/signal.html "Note on SIGPIPE": on BrokenPipeError point stdout at
    # devnull and exit, so the interpreter's final flush does not raise again.
    status, stderr = with_reader_gone(*NEGOTIATE, "--format", form)
    assert status == EXIT_BROKEN_PIPE
    assert "Traceback" not in stderr and "BrokenPipeError" not in stderr and "Errno 32" not in stderr


def test_userprio_into_a_closed_pipe_stops_quietly(daemon: DaemonProcess) -> None:
    for listing in ((), ("-l",)):
        status, stderr = with_reader_gone("userprio", "--url", daemon.url, *listing)
        assert status == EXIT_BROKEN_PIPE, stderr
        assert stderr == ""


def test_userprio_with_url_needs_no_config(daemon: DaemonProcess) -> None:
    # Importing HTCondor's Python bindings sets CONDOR_CONFIG=/dev/null when no HTCondor config is
    # found (htcondor2/__init__.py, _set_null_config); their child processes inherit it.
    env = dict(os.environ, CONDOR_CONFIG=os.devnull)
    shown = subprocess.run([sys.executable, "-m", "negotiatord", "userprio", "--url", daemon.url, "-l"],
                           capture_output=True, text=True, cwd=ROOT, env=env, timeout=60)
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout)["customers"] == []
    table = subprocess.run([sys.executable, "-m", "negotiatord", "userprio", "--url", daemon.url],
                           capture_output=True, text=True, cwd=ROOT, env=env, timeout=60)
    # the daemon's startup cycle updated priorities, though no customer has any (the accountant's
    # LastUpdateTime is set by every UpdatePriorities, Accountant.cpp)
    assert table.returncode == 0 and table.stdout.startswith("Last Priority Update: ")
    assert "Number of users: 0" in table.stdout

    # an edit still needs the token, and says where it would come from
    edit = subprocess.run([sys.executable, "-m", "negotiatord", "userprio", "--url", daemon.url,
                           "-setfactor", "alice@example.org", "2"],
                          capture_output=True, text=True, cwd=ROOT, env=env, timeout=60)
    assert edit.returncode == 2 and os.devnull in edit.stderr


def test_userprio_long_listing_says_it_is_json() -> None:
    # condor_userprio -l prints the negotiator's ClassAd in the long form (HTCondor manual,
    # condor_userprio); ours prints the daemon's JSON document, and its help says so.
    shown = subprocess.run([sys.executable, "-m", "negotiatord", "userprio", "--help"],
                           capture_output=True, text=True, cwd=ROOT, timeout=60)
    help_for_l = " ".join(shown.stdout.split()).split(" -l ", 1)[1]
    assert help_for_l.startswith("print the daemon's accountant document as JSON (not condor_userprio -l's")


EXIT_INTERRUPTED = 130   # 128 + SIGINT: what a shell reports for a command stopped by Ctrl-C


def interrupted(child: subprocess.Popen) -> tuple[int, str]:
    """Send ``child`` SIGINT, as Ctrl-C does; its exit status and stderr."""
    child.send_signal(signal.SIGINT)
    _, stderr = child.communicate(timeout=60)
    return child.returncode, stderr


def test_ctrl_c_on_negotiate_says_so_without_a_traceback(tmp_path) -> None:
    # The jobs file is a FIFO: once the test's writer end opens, negotiate is reading its input,
    # past its imports and its config, and waits there for the Ctrl-C.
    jobs = tmp_path / "jobs.fifo"
    os.mkfifo(jobs)
    child = subprocess.Popen([sys.executable, "-m", "negotiatord", "negotiate", "--config", str(CONFIG),
                              "--slots", str(ROOT / "samples" / "slots.ads"), "--jobs", str(jobs)],
                             cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    writer = os.open(jobs, os.O_WRONLY)
    try:
        status, stderr = interrupted(child)
    finally:
        os.close(writer)
    assert status == EXIT_INTERRUPTED
    assert stderr == "negotiatord: interrupted\n"


def test_ctrl_c_on_userprio_waiting_for_the_daemon_says_so_without_a_traceback() -> None:
    # A "daemon" that accepts the connection and never answers: userprio waits for its answer.
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        url = f"http://127.0.0.1:{silent.getsockname()[1]}"
        child = subprocess.Popen([sys.executable, "-m", "negotiatord", "userprio", "--url", url],
                                 cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        connection, _ = silent.accept()
        with connection:
            status, stderr = interrupted(child)
    assert status == EXIT_INTERRUPTED
    assert stderr == "negotiatord: interrupted\n"


def test_replay_help_names_every_trace_format_and_every_output() -> None:
    shown = subprocess.run([sys.executable, "-m", "negotiatord", "replay", "--help"],
                           capture_output=True, text=True, cwd=ROOT, timeout=60)
    text = " ".join(shown.stdout.split())
    for named in (".swf", ".csv", "condor_history", "jobs.csv", "summary.json", "report.html"):
        assert named in text, named
