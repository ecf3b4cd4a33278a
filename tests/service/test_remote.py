"""A daemon set up for a real pool: HTTPS with a configured certificate, and pull mode.

The certificate is made by openssl for 127.0.0.1; clients verify it against itself. The collector
named by COLLECTOR_HOST is a closed port: the pull fails, is reported with the host and the reason,
and the cycle still runs over the ads already filed.
"""

from __future__ import annotations

import json
import ssl
import subprocess
import sys
import urllib.error
import urllib.request

import pytest

from tests.service_harness import ROOT, DaemonProcess, free_port


@pytest.fixture(scope="module")
def certificate(tmp_path_factory):
    where = tmp_path_factory.mktemp("tls")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                    "-keyout", str(where / "key.pem"), "-out", str(where / "cert.pem"),
                    "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"],
                   check=True, capture_output=True, timeout=60)
    return where / "cert.pem", where / "key.pem"


def test_https_and_a_collector_that_cannot_be_reached(tmp_path, certificate):
    cert, key = certificate
    collector = f"127.0.0.1:{free_port()}"
    daemon = DaemonProcess(tmp_path / "d", settings={
        "NEGOTIATORD_TLS_CERTIFICATE": str(cert), "NEGOTIATORD_TLS_KEY": str(key),
        "COLLECTOR_HOST": collector, "NEGOTIATOR_INTERVAL": "3600", "NEGOTIATOR_CYCLE_DELAY": "0"},
        args=["--preload-slots", str(ROOT / "samples" / "slots.ads")])
    daemon.start()
    try:
        https = f"https://127.0.0.1:{daemon.port}"
        context = ssl.create_default_context(cafile=str(cert))   # trusts this certificate only
        with urllib.request.urlopen(https + "/v1/status", context=context, timeout=30) as answer:
            assert json.loads(answer.read())["daemon"]["url"] == https
        with pytest.raises((urllib.error.URLError, ConnectionError)):   # no plain HTTP on a TLS port
            urllib.request.urlopen(f"http://127.0.0.1:{daemon.port}/v1/status", timeout=30).read()

        # the start-up cycle tried the collector, said why it failed, and negotiated anyway
        assert daemon.wait_for_cycle(0)["TotalSlots"] == 15
        status = daemon.status()
        assert status["collector"]["host"] == collector and collector in status["collector"]["error"]
        assert status["counters"]["pull_failures"] >= 1

        # condor_userprio's edits go over HTTPS too, verified against the configured certificate
        done = subprocess.run([sys.executable, "-m", "negotiatord", "userprio", "--config", str(daemon.config),
                               "-setfactor", "alice@example.org", "3"],
                              capture_output=True, text=True, cwd=ROOT, timeout=60)
        assert done.returncode == 0, done.stderr
        shown = subprocess.run([sys.executable, "-m", "negotiatord", "userprio", "--config", str(daemon.config),
                                "-allusers", "-l"], capture_output=True, text=True, cwd=ROOT, timeout=60)
        factors = {c["name"]: c["factor"] for c in json.loads(shown.stdout)["customers"]}
        assert factors["alice@example.org"] == 3.0
    finally:
        assert daemon.stop() == 0
