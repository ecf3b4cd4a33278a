"""Packaging metadata, the bundled configs' references, and what a reload says about knobs that
need a restart."""

from __future__ import annotations

import re
import signal
import tomllib

from tests.service_harness import ROOT, DaemonProcess, free_port


def test_the_license_is_an_spdx_expression_and_the_build_can_read_it() -> None:
    # PEP 639 and setuptools' pyproject guide: `license` is an SPDX expression string; the table
    # form is deprecated (setuptools warns), and setuptools reads the string form from 77.0 on.
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert pyproject["project"]["license"] == "Apache-2.0"
    [setuptools] = [r for r in pyproject["build-system"]["requires"] if r.startswith("setuptools")]
    assert setuptools == "setuptools>=77"


def test_bundled_configs_cite_what_users_have() -> None:
    for conf in sorted((ROOT / "config").glob("*.conf")):
        comments = "\n".join(line for line in conf.read_text().splitlines() if line.lstrip().startswith("#"))
        assert not re.search(r"\bseed\b|/work/", comments, re.I), conf.name
        if "CONSUMPTION_POLICY = True" in conf.read_text():
            assert "HTCondor manual" in comments, conf.name


def test_a_reload_names_the_knob_that_needs_a_restart(tmp_path) -> None:
    daemon = DaemonProcess(tmp_path / "daemon", settings={"NEGOTIATOR_INTERVAL": "3600"})
    daemon.start()
    try:
        running_port = daemon.port
        daemon.write_config(f"NEGOTIATORD_HTTP_PORT = {free_port()}")
        seen = len(daemon.messages)
        daemon.signal(signal.SIGHUP)
        daemon.wait_for_message("READY=1", since=daemon.wait_for_message("RELOADING=1", since=seen))
        reload = daemon.status()["reload"]
        assert reload["ok"] is True and reload["needs_restart"] == ["NEGOTIATORD_HTTP_PORT"]
        [warning] = [e for e in daemon.log_events()
                     if e["event"] == "these settings take effect only after a restart"]
        assert warning["params"] == ["NEGOTIATORD_HTTP_PORT"]
        assert daemon.port == running_port    # still served where it was
    finally:
        assert daemon.stop() == 0
