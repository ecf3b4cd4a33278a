"""The daemon's start-up cycle really goes through the fast path's kernels on both kinds of slot."""

from __future__ import annotations

from pathlib import Path

import pytest

from negotiatord.runtime import load_fast_path
from negotiatord.settings import load_settings

CONFIG = Path(__file__).resolve().parents[1] / "config" / "default.conf"


@pytest.mark.parametrize("config", ["default.conf", "cpu_centric.conf", "static_slot.conf"])
def test_the_warmup_pool_matches_its_job_on_both_slots(config):
    result = load_fast_path(load_settings(CONFIG.parent / config))
    assert result.problems == ()
    assert result.stats.pairs >= 2 and result.stats.classad_fallbacks == 0
    assert len(result.matches) == 1
    # both slots were candidates: the one the job did not take is still on offer, not rejected
    assert result.rejections == ()
