"""A byte that is not UTF-8 costs the ad that holds it, not the file or the request body.

Real ``condor_q``/``condor_history`` dumps carry such bytes: HTCondor keeps a job's ``Args`` as the
submitter typed them, in whatever encoding their terminal used. The jobs here are CHTC's real
history ads (shared data, htcondor/history/sandyHistory.hist, five jobs), made idle, with a
Latin-1 ``é`` (byte 0xE9) in the third job's ``Arguments``. classad2 reads the other four as it
reads them from the untouched file.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import classad2
import pytest

from negotiatord.ads import read_ads
from negotiatord.feed import AdKind
from negotiatord.feed.api import take_in_body

from tests.service_harness import DATA, ROOT, DaemonProcess

HISTORY = DATA / "htcondor" / "history" / "sandyHistory.hist"
BAD_AD = 3            # the third job (ProcId 3) gets the Latin-1 byte
BAD_LINE = 299        # its `Arguments = ""` line in the file
BAD_AD_STARTS = 294   # the line after the second `***` banner


def idle_jobs_text() -> str:
    return HISTORY.read_text().replace("\nJobStatus = 4\n", "\nJobStatus = 1\n")


def with_latin1_byte(text: str) -> bytes:
    lines = text.encode().split(b"\n")
    assert lines[BAD_LINE - 1] == b'Arguments = ""'
    lines[BAD_LINE - 1] = b'Arguments = "r\xe9sum\xe9.txt"'
    return b"\n".join(lines)


def reference_ads(text: str) -> list[classad2.ClassAd]:
    """classad2's own reading of each job of the untouched text: condor_history ends every job
    with a `***` banner line."""
    blocks, block = [], []
    for line in text.split("\n"):
        if line.startswith("***"):
            blocks.append("\n".join(block))
            block = []
        else:
            block.append(line)
    assert len(blocks) == 5 and not "".join(block).strip()
    return [classad2.parseOne(block, classad2.ParserType.Old) for block in blocks]


@pytest.fixture()
def jobs_file(tmp_path: Path) -> Path:
    path = tmp_path / "jobs.ads"
    path.write_bytes(with_latin1_byte(idle_jobs_text()))
    return path


def test_the_file_reader_refuses_only_the_ad_with_the_byte(jobs_file: Path) -> None:
    batch = read_ads(jobs_file)
    [problem] = batch.problems
    assert (problem.position, problem.line) == (BAD_AD, BAD_AD_STARTS)
    assert problem.reason == f'line {BAD_LINE}: byte 0xE9 is not UTF-8 text: Arguments = "r\\xe9sum\\xe9.txt"'
    expected = [ad for n, ad in enumerate(reference_ads(idle_jobs_text()), 1) if n != BAD_AD]
    assert batch.positions == [1, 2, 4, 5]
    assert [ad.printJson() for ad in batch.ads] == [ad.printJson() for ad in expected]


def test_a_byte_in_a_comment_line_costs_nothing(tmp_path: Path) -> None:
    # HTCondor's long-form reader skips `#` lines wherever they are, so nothing of the ad is lost
    path = tmp_path / "jobs.ads"
    path.write_bytes(b'# r\xe9sum\xe9\nMyType = "Job"\nClusterId = 1\nProcId = 0\n')
    batch = read_ads(path)
    assert batch.problems == [] and batch.ads[0]["ClusterId"] == 1


def test_bytes_in_json_and_new_form_cost_their_ad_only() -> None:
    for body in (b'[{"ClusterId": 1, "ProcId": 0},\n {"ClusterId": 2, "ProcId": 0, "Args": "r\xe9sum\xe9"},\n'
                 b' {"ClusterId": 3, "ProcId": 0}]',
                 b'[{"ClusterId": 1, "ProcId": 0}, {"ClusterId": 2, "ProcId": 0, "Args": "r\xe9sum\xe9"}, '
                 b'{"ClusterId": 3, "ProcId": 0}]',
                 b'[ ClusterId = 1; ProcId = 0 ]\n[ ClusterId = 2; ProcId = 0; Args = "r\xe9sum\xe9" ]\n'
                 b'[ ClusterId = 3; ProcId = 0 ]\n'):
        intake = take_in_body(AdKind.JOB, body, "body")
        assert [key for key, _ in intake.accepted] == ["1.0", "3.0"]
        [problem] = intake.problems
        assert problem.position == 2 and "byte 0xE9 is not UTF-8 text" in problem.reason


def test_the_dry_run_negotiates_the_rest_and_reports_the_ad(jobs_file: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "negotiatord", "negotiate",
                           "--config", str(ROOT / "config" / "default.conf"),
                           "--slots", str(ROOT / "samples" / "slots.ads"), "--jobs", str(jobs_file)],
                          capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert done.returncode == 3, done.stderr           # as for any malformed ad
    assert f"{jobs_file}:{BAD_AD_STARTS} (ad {BAD_AD}): line {BAD_LINE}: byte 0xE9 is not UTF-8" in done.stderr
    assert json.loads(done.stdout)["cycle"]["jobs"] == 4


def test_the_daemon_files_the_rest_of_the_body(tmp_path: Path) -> None:
    daemon = DaemonProcess(tmp_path / "daemon", settings={"NEGOTIATOR_INTERVAL": "3600"})
    daemon.start()
    try:
        answer = daemon.request("POST", "/v1/ads/jobs", with_latin1_byte(idle_jobs_text()))
        assert answer.status == 200, answer.body
        assert answer.body["accepted"] == 4
        [refused] = answer.body["rejected"]
        assert (refused["position"], refused["line"]) == (BAD_AD, BAD_AD_STARTS)
        assert refused["reason"].startswith(f"line {BAD_LINE}: byte 0xE9 is not UTF-8 text")
    finally:
        assert daemon.stop() == 0
