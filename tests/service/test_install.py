"""negotiatord installed the way the systemd unit's comment says: a wheel built from the checkout,
installed into a virtualenv of its own, runs from there with nothing of the checkout on its path.

To stay fast the new virtualenv takes the dependencies from this project's ``.venv`` (a ``.pth``
line naming its site-packages, whose own ``.pth`` files, this checkout's editable install among
them, are not run) and the wheel is installed with ``--no-deps``; the README's "Installing as a service"
gives the full ``pip install`` with its dependencies.
"""

from __future__ import annotations

import json
import shutil
import site
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

from tests.service_harness import ROOT

UNIT = ROOT / "systemd" / "negotiatord.service"


def test_the_unit_names_an_install_that_pip_can_do() -> None:
    text = UNIT.read_text()
    assert "pip install negotiatord\n" not in text and "pip install negotiatord " not in text   # not on PyPI
    assert "/opt/negotiatord/bin/pip install /path/to/negotiatord" in text
    assert "pip wheel --no-deps -w dist /path/to/negotiatord" in text


def test_a_wheel_built_from_the_checkout_installs_and_runs_outside_it(tmp_path: Path) -> None:
    source = tmp_path / "source"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    shutil.copytree(ROOT / "negotiatord", source / "negotiatord", ignore=shutil.ignore_patterns("__pycache__"))
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "-w", str(tmp_path / "dist"),
                    str(source)], check=True, timeout=300, capture_output=True)
    [wheel] = (tmp_path / "dist").glob("negotiatord-*.whl")
    packaged = {name for name in zipfile.ZipFile(wheel).namelist() if name.endswith(".py")}
    assert packaged == {str(path.relative_to(ROOT)) for path in (ROOT / "negotiatord").rglob("*.py")}

    venv = tmp_path / "opt" / "negotiatord"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    purelib = Path(sysconfig.get_path("purelib", vars={"base": str(venv), "platbase": str(venv)}))
    (purelib / "dependencies.pth").write_text(site.getsitepackages()[0] + "\n")
    subprocess.run([str(venv / "bin" / "pip"), "install", "--quiet", "--no-deps", "--no-index", str(wheel)],
                   check=True, timeout=300, capture_output=True)

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    for conf in (ROOT / "config").glob("*.conf"):
        shutil.copy(conf, elsewhere / conf.name)
    where = subprocess.run([str(venv / "bin" / "python"), "-c", "import negotiatord; print(negotiatord.__file__)"],
                           cwd=elsewhere, capture_output=True, text=True, check=True, timeout=120)
    assert Path(where.stdout.strip()).is_relative_to(purelib)
    # classad2's evaluator: the fast path's kernels would compile afresh for the new install (~40 s)
    run = subprocess.run([str(venv / "bin" / "negotiatord"), "negotiate", "--config", "default.conf",
                          "--slots", str(ROOT / "samples" / "slots.ads"), "--jobs", str(ROOT / "samples" / "jobs.ads"),
                          "--evaluator", "classad"],
                         cwd=elsewhere, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout)["cycle"]["matches"] == 44     # as from the checkout (samples/README.md)
