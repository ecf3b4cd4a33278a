"""Odd requests get a 4xx with a reason, never a 500 and a traceback in the log.

Customer names are checked as ``condor_userprio`` checks them before it sends an edit to the
negotiator: the full name of a submitter, ``user@uid.domain`` (``strchr(name, '@')`` for
``-setfactor``, ``-resetusage``, ``-delete``: src/condor_tools/user_prio.cpp in HTCondor's source).
"""

from __future__ import annotations

import http.client
import json

import pytest

from tests.service_harness import DaemonProcess

INT64_MAX = 2**63 - 1


@pytest.fixture(scope="module")
def daemon(tmp_path_factory):
    process = DaemonProcess(tmp_path_factory.mktemp("odd"), settings={"NEGOTIATOR_INTERVAL": "3600"})
    with process.running():
        yield process


def send(daemon: DaemonProcess, method: str, path: str, body: bytes = b"",
         headers: dict[str, str | bytes] | None = None) -> tuple[int, bytes]:
    """One request with headers sent as given (bytes that urllib would refuse to send included)."""
    connection = http.client.HTTPConnection("127.0.0.1", daemon.port, timeout=30)
    try:
        connection.putrequest(method, path)
        for name, value in (headers or {}).items():
            connection.putheader(name, value)
        connection.putheader("Content-Length", str(len(body)))
        connection.endheaders()
        connection.send(body)
        answer = connection.getresponse()
        return answer.status, answer.read()
    finally:
        connection.close()


def reason(body: bytes) -> str:
    return json.loads(body)["error"]


@pytest.fixture
def quiet_log(daemon):
    """Fails the test if the daemon logged a traceback while it ran."""
    start = len(daemon.log_text())
    yield
    log = daemon.log_text()[start:]
    assert "Traceback" not in log and "Error handling request" not in log, log[-3000:]


def test_a_non_ascii_authorization_header_is_refused_with_a_reason(quiet_log, daemon):
    status, body = send(daemon, "POST", "/v1/reschedule", headers={"Authorization": b"Bearer \xff\xfe"})
    assert status == 400 and "ASCII" in reason(body)


@pytest.mark.parametrize("path", ["/v1/matches?after=9223372036854775808",
                                  "/v1/matches?after=1&limit=99999999999999999999",
                                  "/v1/matches/stream?after=9223372036854775808"])
def test_a_cursor_beyond_a_64_bit_sequence_number_is_refused_before_any_answer(quiet_log, daemon, path):
    status, body = send(daemon, "GET", path)
    assert status == 400 and str(INT64_MAX) in reason(body)


def test_a_resumed_stream_with_a_huge_last_event_id_is_refused(quiet_log, daemon):
    status, body = send(daemon, "GET", "/v1/matches/stream", headers={"Last-Event-ID": "1" + "0" * 30})
    assert status == 400 and "Last-Event-ID" in reason(body)


def test_a_factor_too_large_for_a_float_is_refused(quiet_log, daemon):
    body = b'{"customer": "alice@example.org", "factor": ' + b"9" * 400 + b"}"
    status, answer = send(daemon, "POST", "/v1/accountant/factor", body, {"Authorization": f"Bearer {daemon.token}"})
    assert status == 400 and "finite number" in reason(answer) and len(reason(answer)) < 300


@pytest.mark.parametrize("path", ["/v1/accountant/factor", "/v1/accountant/reset-usage"])
def test_a_body_nested_beyond_the_json_reader_is_refused(quiet_log, daemon, path):
    status, body = send(daemon, "POST", path, b"[" * 100_000, {"Authorization": f"Bearer {daemon.token}"})
    assert status == 400 and "nested" in reason(body)


@pytest.mark.parametrize("name, why", [
    ("<none>", "user@uid.domain"),            # the root group's record: no submitter
    ("group_physics", "user@uid.domain"),     # condor_userprio refuses a name without '@'
    ("a\u0000b@example.org", "control character"),
    ("alice @example.org", "white space"),
    ("a" * (1 << 20) + "@example.org", "characters"),
])
def test_customer_names_are_checked_as_condor_userprio_checks_them(quiet_log, daemon, name, why):
    token = {"Authorization": f"Bearer {daemon.token}"}
    for path, body in (("/v1/accountant/factor", {"customer": name, "factor": 2}),
                       ("/v1/accountant/reset-usage", {"customer": name})):
        status, answer = send(daemon, "POST", path, json.dumps(body).encode(), token)
        assert status == 400 and why in reason(answer), (path, answer[:300])
    names = {c["name"] for c in json.loads(send(daemon, "GET", "/v1/accountant")[1])["customers"]}
    assert name not in names
    status, answer = send(daemon, "POST", "/v1/accountant/factor",
                          json.dumps({"customer": "alice@example.org", "factor": 2}).encode(), token)
    assert status == 200
