"""A reload (SIGHUP) names, by their config knobs, the settings that need a restart."""

from __future__ import annotations

import signal

from tests.service_harness import DaemonProcess, free_port


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


def test_a_knob_set_back_to_its_running_value_needs_no_restart(tmp_path) -> None:
    """Changed, then changed back, then changed: each reload names what differs from what runs."""
    daemon = DaemonProcess(tmp_path / "daemon", settings={"NEGOTIATOR_INTERVAL": "3600"})
    daemon.start()
    try:
        def reloaded(extra: str) -> list[str]:
            daemon.write_config(extra)
            seen = len(daemon.messages)
            daemon.signal(signal.SIGHUP)
            daemon.wait_for_message("READY=1", since=daemon.wait_for_message("RELOADING=1", since=seen))
            reload = daemon.status()["reload"]
            assert reload["ok"] is True
            return reload["needs_restart"]

        other_port = free_port()
        assert reloaded(f"NEGOTIATORD_HTTP_PORT = {other_port}") == ["NEGOTIATORD_HTTP_PORT"]
        assert reloaded("") == []
        assert reloaded("") == []
        assert reloaded(f"NEGOTIATORD_HTTP_PORT = {other_port}") == ["NEGOTIATORD_HTTP_PORT"]
        warnings = [e["params"] for e in daemon.log_events()
                    if e["event"] == "these settings take effect only after a restart"]
        assert warnings == [["NEGOTIATORD_HTTP_PORT"], ["NEGOTIATORD_HTTP_PORT"]]
    finally:
        assert daemon.stop() == 0
