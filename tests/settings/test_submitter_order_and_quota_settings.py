"""NEGOTIATORD_SUBMITTER_ORDER, NEGOTIATORD_AFS_RESOURCE_WEIGHTS, NEGOTIATORD_AFS_HALF_LIFE and the
check of GROUP_LIMIT_<g> against GROUP_GUARANTEED_<g>,
read through HTCondor's own config reader."""

from __future__ import annotations

from pathlib import Path

import pytest

from negotiatord.settings import ConfigError, SubmitterOrder, load_settings
from negotiatord.settings.groups import WEIGHT_UNIT


def _load(tmp_path: Path, text: str):
    path = tmp_path / "negotiator.conf"
    path.write_text(text)
    return load_settings(path)


def test_defaults_and_configured_values(tmp_path: Path):
    empty = _load(tmp_path, "PRIORITY_HALFLIFE = 7200\n")
    assert empty.submitter_order is SubmitterOrder.PRIORITY
    assert dict(empty.admission_resource_weights) == {"cpus": 1.0}
    assert empty.admission_half_life_s == 7200.0
    configured = _load(tmp_path, "NEGOTIATORD_SUBMITTER_ORDER = Admission_Fair_Sharing\n"
                                 "NEGOTIATORD_AFS_RESOURCE_WEIGHTS = Cpus:1, GPUs:5\n"
                                 "NEGOTIATORD_AFS_HALF_LIFE = 0\n")
    assert configured.submitter_order is SubmitterOrder.ADMISSION_FAIR_SHARING
    assert dict(configured.admission_resource_weights) == {"cpus": 1.0, "gpus": 5.0}
    assert configured.admission_half_life_s == 0.0
    assert dict(_load(tmp_path, "NEGOTIATORD_AFS_RESOURCE_WEIGHTS = 2\n").admission_resource_weights) == {
        WEIGHT_UNIT: 2.0}


@pytest.mark.parametrize(("line", "named"), [
    ("NEGOTIATORD_SUBMITTER_ORDER = fifo", "must be one of priority, admission_fair_sharing"),
    ("NEGOTIATORD_AFS_RESOURCE_WEIGHTS = Cpus:0", "at least one resource a weight above 0"),
    ("NEGOTIATORD_AFS_RESOURCE_WEIGHTS = Cpus:-1", "'Cpus:-1' is not <resource>:<amount >= 0>"),
    ("NEGOTIATORD_AFS_HALF_LIFE = -5", "must be >= 0"),
])
def test_mistakes_name_the_knob(tmp_path: Path, line: str, named: str):
    with pytest.raises(ConfigError) as error:
        _load(tmp_path, line + "\n")
    assert line.split(" =")[0] in str(error.value) and named in str(error.value)


def test_a_maximum_below_the_guaranteed_floor_is_refused(tmp_path: Path):
    """YuniKorn's design, "Meaningful Quota Decrease": the maximum must not go below the guaranteed
    amount; equal is allowed (its "best effort - guaranteed set and equals max" case)."""
    base = "GROUP_NAMES = a\nGROUP_GUARANTEED_a = Cpus:8, Memory:100\n"
    with pytest.raises(ConfigError, match="GROUP_LIMIT_a: cpus 4 is below GROUP_GUARANTEED_a's 8"):
        _load(tmp_path, base + "GROUP_LIMIT_a = Cpus:4\n")
    assert dict(_load(tmp_path, base + "GROUP_LIMIT_a = Cpus:8, GPUs:1\n").groups[0].limit) == {"cpus": 8, "gpus": 1}
