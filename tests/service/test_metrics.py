"""The daemon's figures count slots as slots: a partitionable slot whose matches are held is one
slot, however many claimed dynamic slots stand in for its matches until its startd advertises
again (HTCondor's ``LastNegotiationCycleTotalSlots`` counts the slot ads the negotiator got)."""

from __future__ import annotations

import re

from prometheus_client.parser import text_string_to_metric_families

from negotiatord.service.daemon import Daemon

from tests.service_harness import ROOT, SAMPLE_POOL, in_process, next_cycle, serve

QUICK = {"NEGOTIATOR_INTERVAL": "3600", "NEGOTIATOR_CYCLE_DELAY": "0", "NEGOTIATOR_MIN_INTERVAL": "0"}
SAMPLE_SLOTS = 15     # samples/slots.ads: 3 partitionable, 4 dynamic and 8 static slots


def test_held_matches_add_no_slots_to_the_cycle_figures(tmp_path):
    daemon = in_process(tmp_path / "d", QUICK, SAMPLE_POOL)
    seen: list[tuple[int, int, int, int]] = []

    async def scenario(daemon: Daemon) -> None:
        for _ in range(3):      # the first cycle's matches are held through the next two
            await next_cycle(daemon)
            metrics = {sample.name: sample.value
                       for family in text_string_to_metric_families(daemon.metrics.exposition().decode())
                       for sample in family.samples}
            seen.append((int(metrics["negotiatord_last_cycle_slots"]),
                         daemon.negotiator_ad()["LastNegotiationCycleTotalSlots0"],
                         daemon.history.last_cycle_document()["cycle"]["slots"],
                         daemon.store.view().stand_in_slots))

    serve(daemon, scenario)
    assert [figures[:3] for figures in seen] == [(SAMPLE_SLOTS,) * 3] * 3
    assert seen[0][3] > 0     # the first cycle's matches on p-slots stand in the next cycles' pool


def test_every_metric_the_documentation_names_is_exported(tmp_path):
    """The README and docs/ name metrics by their exported names (a counter's samples end in
    ``_total``, prometheus_client's text format)."""
    documented = {name for page in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
                  for name in re.findall(r"\bnegotiatord_[a-z_]+", page.read_text())}
    assert documented
    daemon = in_process(tmp_path / "d", QUICK, SAMPLE_POOL)
    exported: set[str] = set()

    async def scenario(daemon: Daemon) -> None:
        await next_cycle(daemon)
        exported.update(sample.name for family in text_string_to_metric_families(daemon.metrics.exposition().decode())
                        for sample in family.samples)

    serve(daemon, scenario)
    assert documented <= exported, documented - exported
