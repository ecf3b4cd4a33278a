"""The project's own files: packaging metadata and the bundled configs' references."""

from __future__ import annotations

import re
import tomllib

from tests.service_harness import ROOT


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
