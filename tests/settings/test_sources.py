"""Where a knob was set, as a config error names it: checked against HTCondor's own answer,
``condor_config_val -v`` (``# at: FILE, line N``) of the HTCondor 25.14 in ``../shared/htcondor``,
which reads the same files with the same reader as ``htcondor2``."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from negotiatord.settings import ConfigError, load_settings
from negotiatord.settings.loader import _where

CONDOR_CONFIG_VAL = Path(__file__).resolve().parents[3] / "shared" / "htcondor" / "bin" / "condor_config_val"

TOP = """\
# the negotiator's knobs, some in included files
A = 1
B = x \\
  y \\
  z
NEGOTIATOR.C = 3
SCHEDD.C = 4
D @=end
  one
  two
@end
include : $(CONFIG_ROOT)/included.conf
include ifexist : $(CONFIG_ROOT)/absent.conf
if false
  E = 1
else
  E = 2
endif
if true
  F = first
else
  F = second
endif
G = $(A)0
"""
INCLUDED = """\

SLOT_WEIGHT = Cpus * 2
E = 9
G = late
"""


def condor_says(config: Path, name: str) -> tuple[str, int]:
    """HTCondor's answer, run in the config's folder as negotiatord reads a config (a relative
    ``include`` next to the config)."""
    shown = subprocess.run([str(CONDOR_CONFIG_VAL), "-subsystem", "NEGOTIATOR", "-v", name], cwd=config.parent,
                           env=dict(os.environ, CONDOR_CONFIG=str(config)), capture_output=True, text=True,
                           timeout=60, check=True)
    at = re.search(r"# at: (.*), line (\d+)", shown.stdout)
    assert at is not None, shown.stdout
    return str(config.parent / at.group(1)), int(at.group(2))     # a relative include is named as written


@pytest.fixture(scope="module")
def config(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("sources")
    (folder / "included.conf").write_text(INCLUDED)
    (folder / "negotiator.conf").write_text(TOP)
    return folder / "negotiator.conf"


@pytest.mark.parametrize("name", ["A", "B", "C", "D", "SLOT_WEIGHT", "E", "F", "G"])
def test_the_file_and_line_are_htcondors(config: Path, name: str) -> None:
    file, line = condor_says(config, name)
    assert _where(config, name)["where"] == [file, line]


def test_an_error_in_an_included_file_names_that_file_and_line(tmp_path: Path) -> None:
    (tmp_path / "policy.conf").write_text("# the pool's policy\nSLOT_WEIGHT = Cpus +\n")
    (tmp_path / "negotiator.conf").write_text("include : policy.conf\nNEGOTIATOR_INTERVAL = 60\n")
    with pytest.raises(ConfigError) as error:
        load_settings(tmp_path / "negotiator.conf")
    assert str(error.value).startswith(f"{tmp_path / 'policy.conf'}, line 2: SLOT_WEIGHT = 'Cpus +'")
    assert condor_says(tmp_path / "negotiator.conf", "SLOT_WEIGHT") == (str(tmp_path / "policy.conf"), 2)


def test_a_byte_that_is_not_utf8_is_named_with_its_line(tmp_path: Path) -> None:
    (tmp_path / "negotiator.conf").write_bytes(b"SLOT_WEIGHT = Cpus\n# caf\xe9 in a comment is fine\n"
                                               b"GROUP_NAMES = group_caf\xe9\n")
    with pytest.raises(ConfigError) as error:
        load_settings(tmp_path / "negotiator.conf")
    assert str(error.value) == (f"{tmp_path / 'negotiator.conf'}, line 3: GROUP_NAMES's value holds a byte that "
                                f"is not UTF-8 (0xe9); write the config in UTF-8")
