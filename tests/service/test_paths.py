"""Where the daemon keeps its state when the config does not say."""

from __future__ import annotations

from pathlib import Path

import pytest

from negotiatord.service.paths import StateDirError, StatePaths
from negotiatord.settings import load_settings
from negotiatord.settings.model import ServiceSettings
from tests.service_harness import ROOT

CONFIG_DIR = ROOT / "config"


def test_the_bundled_config_runs_the_daemon_on_loopback_with_state_where_the_user_keeps_state():
    """Copied anywhere (/etc, say), the bundled config must not put state next to itself."""
    service = load_settings(CONFIG_DIR / "default.conf").service
    assert (service.http_address, service.http_port) == ("127.0.0.1", 9680)
    assert service.state_dir is None and service.token_file is None and service.classad_lifetime == 900
    paths = StatePaths.resolve(service, {"HOME": "/home/ada"}, uid=1000)
    assert paths.state_dir == Path("/home/ada/.local/state/negotiatord")
    assert paths.token_file == paths.state_dir / "token"


def test_the_state_directory_is_the_configured_one_else_systemds_else_the_users() -> None:
    """Order: NEGOTIATORD_STATE_DIR, systemd's $STATE_DIRECTORY (the first of a colon-separated
    list, systemd.exec(5)), $XDG_STATE_HOME/negotiatord, ~/.local/state/negotiatord (the XDG Base
    Directory Specification; a relative $XDG_STATE_HOME is ignored, as it says)."""
    configured = ServiceSettings(state_dir=Path("/srv/negotiatord"))
    everything = {"STATE_DIRECTORY": "/var/lib/negotiatord:/var/lib/other", "XDG_STATE_HOME": "/x",
                  "HOME": "/home/ada"}
    assert StatePaths.resolve(configured, everything, uid=1000).state_dir == Path("/srv/negotiatord")
    unset = ServiceSettings()
    assert StatePaths.resolve(unset, everything, uid=1000).state_dir == Path("/var/lib/negotiatord")
    assert StatePaths.resolve(unset, {"XDG_STATE_HOME": "/x", "HOME": "/home/ada"}, uid=1000).state_dir == Path(
        "/x/negotiatord")
    assert StatePaths.resolve(unset, {"XDG_STATE_HOME": "rel", "HOME": "/home/ada"}, uid=1000).state_dir == Path(
        "/home/ada/.local/state/negotiatord")
    with pytest.raises(StateDirError, match="NEGOTIATORD_STATE_DIR"):
        StatePaths.resolve(unset, {}, uid=1000)


def test_root_without_a_configured_state_dir_uses_the_units_state_directory() -> None:
    """The unit's StateDirectory= is /var/lib/negotiatord; root running ``negotiatord userprio``
    with the same config (NEGOTIATORD_STATE_DIR unset) must read the token the daemon wrote there,
    not one under its own home. Where system daemons keep state: the FHS, /var/lib."""
    unset = ServiceSettings()
    assert StatePaths.resolve(unset, {"HOME": "/root"}, uid=0).state_dir == Path("/var/lib/negotiatord")
    assert StatePaths.resolve(unset, {"HOME": "/root"}, uid=0).token_file == Path("/var/lib/negotiatord/token")
    # what the daemon itself resolves under systemd, DynamicUser or not
    assert StatePaths.resolve(unset, {"STATE_DIRECTORY": "/var/lib/negotiatord"}, uid=61234).state_dir == Path(
        "/var/lib/negotiatord")
    # the configured directory still comes first, and a user's own state stays in the user's home
    assert StatePaths.resolve(ServiceSettings(state_dir=Path("/srv/n")), {}, uid=0).state_dir == Path("/srv/n")
    assert StatePaths.resolve(unset, {"HOME": "/home/ada"}, uid=1000).state_dir == Path(
        "/home/ada/.local/state/negotiatord")
