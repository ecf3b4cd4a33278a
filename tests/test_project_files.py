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


def shell_lines(markdown: str) -> list[str]:
    """The command lines of a page's ```sh blocks, comments left out."""
    blocks = re.findall(r"```sh\n(.*?)```", markdown, re.S)
    return [line.split("#")[0].strip() for block in blocks for line in block.splitlines() if line.split("#")[0].strip()]


def test_the_readme_commands_run_as_written_from_a_checkout() -> None:
    """``make setup`` installs negotiatord in .venv, not on the PATH: the README calls it there."""
    lines = shell_lines((ROOT / "README.md").read_text())
    assert lines and not [line for line in lines if re.match(r"negotiatord\b", line)]


def github_anchor(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation but hyphens dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def test_links_between_the_readme_and_docs_lead_somewhere() -> None:
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    broken = []
    for page in pages:
        for target, anchor in re.findall(r"\]\(([^)#\s]*)(?:#([^)\s]+))?\)", page.read_text()):
            if target.startswith(("http://", "https://")):
                continue
            linked = (page.parent / target) if target else page
            if not linked.exists():
                broken.append(f"{page.name}: {target}")
            elif anchor and linked.suffix == ".md":
                headings = re.findall(r"^#+ (.*)$", linked.read_text(), re.M)
                if anchor not in {github_anchor(heading) for heading in headings}:
                    broken.append(f"{page.name}: {target}#{anchor}")
    assert broken == []
