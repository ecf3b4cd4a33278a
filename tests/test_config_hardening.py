"""Packaging metadata."""

from __future__ import annotations

import tomllib

from tests.service_harness import ROOT


def test_the_license_is_an_spdx_expression_and_the_build_can_read_it() -> None:
    # PEP 639 and setuptools' pyproject guide: `license` is an SPDX expression string; the table
    # form is deprecated (setuptools warns), and setuptools reads the string form from 77.0 on.
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert pyproject["project"]["license"] == "Apache-2.0"
    [setuptools] = [r for r in pyproject["build-system"]["requires"] if r.startswith("setuptools")]
    assert setuptools == "setuptools>=77"
