"""Every ad the feed refuses comes back with its position, the line where it starts, and the
reason, whether the reader refused it (unparsable) or the intake did (no key, wrong ``MyType``).

The body is the OSPool central manager's own ``condor_status -any -l`` dump (shared data,
ospool/pool_sample.ads.gz: 143 Machine ads among 205), posted as slots: the Submitter,
Accounting and Negotiator ads among it are refused for their ``MyType``.
"""

from __future__ import annotations

import gzip

from negotiatord.feed import AdKind, take_in_text

from tests.service_harness import POOL, DaemonProcess

NAMELESS_SLOT = 'MyType = "Machine"\nCpus = 4\nMemory = 8192\n'


def pool_text_with_a_nameless_slot() -> str:
    return gzip.decompress(POOL.read_bytes()).decode().rstrip("\n") + "\n\n" + NAMELESS_SLOT


def ad_start_lines(text: str) -> list[int]:
    """The test's own count of where each blank-line separated ad starts."""
    starts, previous_blank = [], True
    for number, line in enumerate(text.split("\n"), 1):
        blank = not line.strip()
        if previous_blank and not blank:
            starts.append(number)
        previous_blank = blank
    return starts


def test_ads_refused_for_kind_or_key_carry_their_line() -> None:
    text = pool_text_with_a_nameless_slot()
    starts = ad_start_lines(text)
    intake = take_in_text(AdKind.SLOT, text, "body")
    assert len(intake.accepted) == 143 and len(intake.problems) == len(starts) - 143
    for problem in intake.problems:
        assert problem.line == starts[problem.position - 1], problem
    wrong_type = [p for p in intake.problems if p.reason.startswith("MyType is ")]
    assert len(wrong_type) == len(starts) - 143 - 1
    [nameless] = [p for p in intake.problems if p.reason.startswith("no Name")]
    assert (nameless.position, nameless.line) == (len(starts), starts[-1])
    assert str(nameless) == f"body:{starts[-1]} (ad {len(starts)}): {nameless.reason}"


def test_the_daemon_answers_every_refused_ad_with_a_line(tmp_path) -> None:
    # docs/daemon.md, "Ads in": the answer lists every refused ad with its position, its line and the reason
    daemon = DaemonProcess(tmp_path / "daemon", settings={"NEGOTIATOR_INTERVAL": "3600",
                                                          "NEGOTIATORD_MAX_BODY_BYTES": str(8 << 20)})
    daemon.start()
    try:
        text = pool_text_with_a_nameless_slot()
        starts = ad_start_lines(text)
        answer = daemon.request("POST", "/v1/ads/slots", text)
        assert answer.status == 200 and answer.body["accepted"] == 143
        assert answer.body["rejected"]
        for refused in answer.body["rejected"]:
            assert refused["line"] == starts[refused["position"] - 1], refused
    finally:
        assert daemon.stop() == 0
