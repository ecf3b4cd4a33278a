"""The preemption knobs: HTCondor's defaults when unset (its param table, as ``htcondor2.param``
reports it under an empty config), the configured values otherwise, and clear errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from negotiatord.settings import ConfigError, load_settings
from negotiatord.settings.model import DEFAULT_PREEMPTION_RANK
from tests.settings.test_loader import _htcondor_typed_defaults, _write


def test_unset_preemption_knobs_take_htcondors_defaults(tmp_path: Path) -> None:
    settings = load_settings(_write(tmp_path, "# nothing set\n"))
    reference = _htcondor_typed_defaults([
        "NEGOTIATOR_CONSIDER_PREEMPTION", "NEGOTIATOR_CONSIDER_EARLY_PREEMPTION", "PREEMPTION_REQUIREMENTS",
        "PREEMPTION_RANK"])
    assert settings.consider_preemption is reference["NEGOTIATOR_CONSIDER_PREEMPTION"] is True
    assert settings.consider_early_preemption is reference["NEGOTIATOR_CONSIDER_EARLY_PREEMPTION"] is False
    # the manual: "If not explicitly set ... the default value for this expression is False"
    assert settings.preemption_requirements == str(reference["PREEMPTION_REQUIREMENTS"]) == "False"
    assert " ".join(settings.preemption_rank.split()) == " ".join(str(reference["PREEMPTION_RANK"]).split())
    assert settings.preemption_rank == DEFAULT_PREEMPTION_RANK
    assert settings.preemption_requirements_stable and settings.preemption_rank_stable


def test_configured_preemption_knobs(tmp_path: Path) -> None:
    settings = load_settings(_write(tmp_path, (
        "NEGOTIATOR_CONSIDER_PREEMPTION = false\n"
        "NEGOTIATOR_CONSIDER_EARLY_PREEMPTION = true\n"
        "StateTimer = (time() - EnteredCurrentState)\n"
        "PREEMPTION_REQUIREMENTS = $(StateTimer) > 3600 && RemoteUserPrio > SubmitterUserPrio * 1.2\n"
        "PREEMPTION_RANK = 0\n"
        "PREEMPTION_REQUIREMENTS_STABLE = False\n"
        "PREEMPTION_RANK_STABLE = False\n")))
    assert not settings.consider_preemption and settings.consider_early_preemption
    assert settings.preemption_requirements == (
        "(time() - EnteredCurrentState) > 3600 && RemoteUserPrio > SubmitterUserPrio * 1.2")
    assert settings.preemption_rank == "0"
    assert not settings.preemption_requirements_stable and not settings.preemption_rank_stable


@pytest.mark.parametrize("text, expected", [
    ("PREEMPTION_REQUIREMENTS = RemoteUserPrio >\n", "PREEMPTION_REQUIREMENTS = 'RemoteUserPrio >': not a valid"),
    ("PREEMPTION_RANK = (RemoteUserPrio\n", "PREEMPTION_RANK = '(RemoteUserPrio': not a valid"),
    ("NEGOTIATOR_CONSIDER_PREEMPTION = sometimes\n", "NEGOTIATOR_CONSIDER_PREEMPTION = 'sometimes': not a boolean"),
])
def test_a_bad_preemption_knob_names_the_param(tmp_path: Path, text: str, expected: str) -> None:
    path = _write(tmp_path, text)
    with pytest.raises(ConfigError) as err:
        load_settings(path)
    assert str(err.value).startswith(f"{path}, line 1: ") and expected in str(err.value)


def test_allow_pslot_preemption_is_off_unless_set(tmp_path: Path) -> None:
    """HTCondor's matchmaker.cpp reads ``param_boolean("ALLOW_PSLOT_PREEMPTION", false)``: off by
    default (the knob is not in the param table, so htcondor2.param has no default to compare)."""
    assert load_settings(_write(tmp_path, "# nothing set\n")).allow_pslot_preemption is False
    assert load_settings(_write(tmp_path, "ALLOW_PSLOT_PREEMPTION = True\n")).allow_pslot_preemption is True


def test_a_bad_allow_pslot_preemption_names_the_param(tmp_path: Path) -> None:
    path = _write(tmp_path, "ALLOW_PSLOT_PREEMPTION = several\n")
    with pytest.raises(ConfigError) as err:
        load_settings(path)
    assert "ALLOW_PSLOT_PREEMPTION = 'several': not a boolean" in str(err.value)
