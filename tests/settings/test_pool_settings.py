"""negotiatord's credentials and NEGOTIATE knobs, read from the condor config as the real
negotiator reads its own (SecMan::FillInSecurityPolicyAd for CLIENT_PERM; param_info.in defaults)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from negotiatord.cedar.policy import Requirement
from negotiatord.settings import ConfigError, load_settings


def _load(tmp_path: Path, text: str):
    config = tmp_path / "condor_config"
    config.write_text(text)
    return load_settings(config).service.pool


def _warnings(tmp_path: Path, text: str) -> tuple[str, ...]:
    config = tmp_path / "condor_config"
    config.write_text(text)
    return load_settings(config).warnings


def test_htcondors_defaults_when_nothing_is_set(tmp_path):
    pool = _load(tmp_path, "")
    # SEC_DEFAULT_AUTHENTICATION_METHODS' built-in value lists every method HTCondor can be built
    # with; those negotiatord has are kept in its order, without a word; levels default to OPTIONAL
    assert pool.security.methods == ("FS", "TOKEN", "SSL")
    assert (pool.security.authentication, pool.security.encryption) == (Requirement.OPTIONAL, Requirement.OPTIONAL)
    assert (pool.timeout_s, pool.prefetch_timeout_s, pool.prefetch_max_time_s, pool.request_list_size) == (
        30.0, 30.0, 60.0, 200)
    assert not any("SEC_" in warning for warning in _warnings(tmp_path, ""))


def test_client_settings_win_over_default_ones_and_negotiator_prefixed_over_both(tmp_path):
    pool = _load(tmp_path, """
SEC_DEFAULT_AUTHENTICATION = OPTIONAL
SEC_CLIENT_AUTHENTICATION = REQUIRED
SEC_DEFAULT_ENCRYPTION = REQUIRED
SEC_CLIENT_AUTHENTICATION_METHODS = IDTOKENS, SSL
NEGOTIATOR.SEC_CLIENT_AUTHENTICATION_METHODS = IDTOKENS
SEC_TOKEN_DIRECTORY = tokens.d
TRUST_DOMAIN = cm.example.org
NEGOTIATOR_TIMEOUT = 12
NEGOTIATOR_PREFETCH_REQUESTS_MAX_TIME = 0
""")
    assert pool.security.methods == ("TOKEN",)
    assert (pool.security.authentication, pool.security.encryption) == (Requirement.REQUIRED, Requirement.REQUIRED)
    assert pool.security.token_directory == tmp_path / "tokens.d"
    assert pool.security.trust_domain == "cm.example.org"
    assert (pool.timeout_s, pool.prefetch_timeout_s, pool.prefetch_max_time_s) == (12.0, 12.0, 0.0)


def test_what_negotiatord_cannot_do_is_said_at_load(tmp_path):
    said = " | ".join(_warnings(tmp_path, """
SEC_CLIENT_AUTHENTICATION_METHODS = KERBEROS, IDTOKENS, MUNGE
SEC_CLIENT_CRYPTO_METHODS = AES, BLOWFISH
NEGOTIATOR_PREFETCH_REQUESTS = False
"""))
    assert "KERBEROS, MUNGE" in said and "BLOWFISH" in said and "NEGOTIATOR_PREFETCH_REQUESTS" in said


def test_a_config_negotiatord_cannot_talk_with_is_refused_naming_the_knob(tmp_path):
    with pytest.raises(ConfigError, match="SEC_CLIENT_CRYPTO_METHODS"):
        _load(tmp_path, "SEC_CLIENT_CRYPTO_METHODS = BLOWFISH\n")
    with pytest.raises(ConfigError, match="SEC_CLIENT_ENCRYPTION"):
        _load(tmp_path, "SEC_CLIENT_ENCRYPTION = SOMETIMES\n")
    with pytest.raises(ConfigError, match="no usable method"):
        _load(tmp_path, "SEC_CLIENT_AUTHENTICATION = REQUIRED\nSEC_CLIENT_AUTHENTICATION_METHODS = KERBEROS\n")


@pytest.mark.parametrize("configured, named", [
    ("NEGOTIATOR_NAME = shard_a", f"shard_a@{os.uname().nodename}"),
    ("NEGOTIATOR_NAME = shard_a@cm.example.org", "shard_a@cm.example.org"),
    (f"NEGOTIATOR_NAME = {os.uname().nodename}", os.uname().nodename),
    ("", f"negotiatord@{os.uname().nodename}"),
])
def test_the_negotiator_name_is_made_as_htcondor_makes_a_daemons(tmp_path, configured, named):
    """get_daemon_name.cpp ``build_valid_daemon_name``: a name with an @ is kept, the host's own
    name is kept, any other name gets @ and the host's name."""
    assert _load(tmp_path, configured + "\n").negotiator_name == named


def test_the_negotiators_user_maps_come_from_their_file_or_data_knobs(tmp_path):
    # reconfig_user_maps (classad_usermap.cpp): CLASSAD_USER_MAPFILE_<name>, else ..._MAPDATA_<name>
    (tmp_path / "prefix.map").write_text("* example.org group_a\n")
    pool = _load(tmp_path, """
NEGOTIATOR_CLASSAD_USER_MAP_NAMES = GROUP_PREFIX, PRIORITY_FACTOR_AUTHORIZATION
CLASSAD_USER_MAPFILE_GROUP_PREFIX = prefix.map
CLASSAD_USER_MAPDATA_PRIORITY_FACTOR_AUTHORIZATION = * bob@example.org group_a.
""")
    prefix, authorization = pool.user_maps
    assert (prefix.name, prefix.file, prefix.data) == ("GROUP_PREFIX", tmp_path / "prefix.map", None)
    assert (authorization.name, authorization.data) == ("PRIORITY_FACTOR_AUTHORIZATION", "* bob@example.org group_a.")
    assert pool.has_user_map("GROUP_PREFIX") and not pool.has_user_map("OTHER")


def test_a_user_map_with_no_file_is_an_error_and_one_with_no_knob_a_warning(tmp_path):
    with pytest.raises(ConfigError, match=r"CLASSAD_USER_MAPFILE_GROUP_PREFIX = .*nosuch.map: no such file"):
        _load(tmp_path, "NEGOTIATOR_CLASSAD_USER_MAP_NAMES = GROUP_PREFIX\n"
                        "CLASSAD_USER_MAPFILE_GROUP_PREFIX = nosuch.map\n")
    warnings = _warnings(tmp_path, "NEGOTIATOR_CLASSAD_USER_MAP_NAMES = GROUP_PREFIX\n")
    assert any("neither CLASSAD_USER_MAPFILE_GROUP_PREFIX nor CLASSAD_USER_MAPDATA_GROUP_PREFIX" in warning
               for warning in warnings)
    assert not any("NEGOTIATOR_CLASSAD_USER_MAP_NAMES = " in warning for warning in warnings)
