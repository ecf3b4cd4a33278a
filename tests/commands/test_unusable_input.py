"""Input a command cannot use, as a tired administrator gives it: each is one line on stderr naming
the file and the option or knob, status 2, no traceback, and nothing run on an empty pool."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CONFIG = ROOT / "config" / "default.conf"
SLOTS = ROOT / "samples" / "slots.ads"
JOBS = ROOT / "samples" / "jobs.ads"
EXIT_UNUSABLE = 2


def negotiatord(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "negotiatord", *args], capture_output=True, text=True,
                          cwd=ROOT, timeout=timeout)


def refused(run: subprocess.CompletedProcess, *named: str) -> None:
    """``run`` stopped with status 2 and one line naming each of ``named``."""
    assert run.returncode == EXIT_UNUSABLE, run.stderr
    assert "Traceback" not in run.stderr
    lines = [line for line in run.stderr.splitlines() if line.startswith("negotiatord")]
    assert len(lines) == 1, run.stderr
    for name in named:
        assert name in lines[0], run.stderr


def daemon_config(folder: Path, *lines: str) -> Path:
    """A config for a daemon on any free port with its state in ``folder``, plus ``lines``: the
    bundled configs copied there (they include each other through $(CONFIG_ROOT))."""
    for bundled in CONFIG.parent.glob("*.conf"):
        shutil.copy(bundled, folder / bundled.name)
    config = folder / "negotiatord.conf"
    config.write_text("\n".join(["include : $(CONFIG_ROOT)/default.conf", "NEGOTIATORD_HTTP_PORT = 0",
                                 f"NEGOTIATORD_STATE_DIR = {folder / 'state'}", *lines]) + "\n")
    return config


def test_an_accountant_that_is_not_sqlite_is_named(tmp_path: Path) -> None:
    accountant = tmp_path / "accountant.sqlite"
    accountant.write_text("these are not SQLite pages\n" * 100)
    refused(negotiatord("negotiate", "--config", str(CONFIG), "--slots", str(SLOTS), "--jobs", str(JOBS),
                        "--accountant", str(accountant)), "--accountant", str(accountant))


@pytest.mark.parametrize("option", ["--slots", "--jobs"])
def test_a_missing_ads_file_names_its_option(tmp_path: Path, option: str) -> None:
    files = {"--slots": str(SLOTS), "--jobs": str(JOBS), option: str(tmp_path / "missing.ads")}
    refused(negotiatord("negotiate", "--config", str(CONFIG), *(part for pair in files.items() for part in pair)),
            option, str(tmp_path / "missing.ads"))


@pytest.mark.parametrize("option", ["--slots", "--jobs"])
def test_an_empty_ads_file_is_refused_not_negotiated(tmp_path: Path, option: str) -> None:
    (tmp_path / "empty.ads").write_text("\n# condor_status found nothing\n")
    files = {"--slots": str(SLOTS), "--jobs": str(JOBS), option: str(tmp_path / "empty.ads")}
    run = negotiatord("negotiate", "--config", str(CONFIG), *(part for pair in files.items() for part in pair))
    refused(run, option, str(tmp_path / "empty.ads"), "no ads")
    assert run.stdout == ""


def test_a_state_dir_that_is_a_file_is_named_with_its_knob(tmp_path: Path) -> None:
    config = daemon_config(tmp_path)
    (tmp_path / "state").write_text("a file where the state directory should be\n")
    refused(negotiatord("run", "--config", str(config)), "NEGOTIATORD_STATE_DIR", str(tmp_path / "state"),
            "not a directory")


def test_a_missing_tls_certificate_is_named_with_its_knob(tmp_path: Path) -> None:
    config = daemon_config(tmp_path, "NEGOTIATORD_TLS_CERTIFICATE = cert.pem", "NEGOTIATORD_TLS_KEY = key.pem")
    (tmp_path / "key.pem").write_text("-----BEGIN PRIVATE KEY-----\n")
    refused(negotiatord("run", "--config", str(config)), "NEGOTIATORD_TLS_CERTIFICATE", str(tmp_path / "cert.pem"))


def test_a_tls_key_that_is_not_pem_is_named_with_both_knobs(tmp_path: Path) -> None:
    config = daemon_config(tmp_path, "NEGOTIATORD_TLS_CERTIFICATE = cert.pem", "NEGOTIATORD_TLS_KEY = key.pem")
    (tmp_path / "cert.pem").write_text("not a certificate\n")
    (tmp_path / "key.pem").write_text("not a key\n")
    refused(negotiatord("run", "--config", str(config)), "NEGOTIATORD_TLS_CERTIFICATE", "NEGOTIATORD_TLS_KEY",
            str(tmp_path / "cert.pem"))


@pytest.mark.parametrize("kind", ["slots", "jobs", "submitters"])
def test_a_missing_preload_file_names_its_option(tmp_path: Path, kind: str) -> None:
    config = daemon_config(tmp_path)
    refused(negotiatord("run", "--config", str(config), f"--preload-{kind}", str(tmp_path / "missing.ads")),
            f"--preload-{kind}", str(tmp_path / "missing.ads"))


def test_an_empty_preload_file_is_refused(tmp_path: Path) -> None:
    (tmp_path / "empty.ads").write_text("")
    config = daemon_config(tmp_path)
    refused(negotiatord("run", "--config", str(config), "--preload-slots", str(tmp_path / "empty.ads")),
            "--preload-slots", str(tmp_path / "empty.ads"), "no ads")


def test_swapped_preload_files_are_refused_with_the_hint(tmp_path: Path) -> None:
    config = daemon_config(tmp_path)
    run = negotiatord("run", "--config", str(config), "--preload-slots", str(JOBS), "--preload-jobs", str(SLOTS))
    refused(run, "--preload-slots", str(JOBS), "swapped")
    assert "preloaded ad refused" not in run.stderr        # not one error per ad, then an empty pool
