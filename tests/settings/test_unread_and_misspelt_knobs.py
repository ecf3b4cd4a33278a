"""Nothing a condor config sets is ignored silently: unread knobs, legacy spellings, misspellings.

References: HTCondor 25.14's negotiator source, ``src/condor_negotiator.V6/matchmaker.cpp``
(``Matchmaker::reinitialize`` reads NEGOTIATOR_SLOT_CONSTRAINT, NEGOTIATOR_MATCH_EXPRS, ...) and
``GroupEntry.cpp`` (``hgq_negotiate_with_all_groups`` reads HFS_MAX_ALLOCATION_ROUNDS only when
``param_defined("GROUP_QUOTA_MAX_ALLOCATION_ROUNDS")`` is false; ``hgq_construct_tree`` asks for
the per-group knobs of the groups GROUP_NAMES lists, and no others), and HTCondor's own config
reader (``htcondor2``, in a child process) for what is defined by default.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from negotiatord.settings import ConfigError, load_settings


def _write(tmp_path: Path, text: str, name: str = "negotiator.conf") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def _htcondor_defines(config: Path, names: list[str]) -> dict[str, object]:
    """``param_defined`` as HTCondor's reader answers it (a name set empty is not defined, a
    name with a built-in default is), through ``$(name:UNDEFINED)`` in its own process."""
    code = ("import json, sys, htcondor2; htcondor2.set_subsystem('NEGOTIATOR'); htcondor2.reload_config(); "
            "out = {}\n"
            "for n in sys.argv[1:]:\n"
            "    htcondor2.param['PROBE'] = '$(' + n + ':UNDEFINED)'\n"
            "    out[n] = htcondor2.param.get('PROBE')\n"
            "print(json.dumps(out))")
    env = {k: v for k, v in os.environ.items() if not k.upper().startswith("_CONDOR_")}
    env["CONDOR_CONFIG"] = str(config)
    done = subprocess.run([sys.executable, "-c", code, *names], env=env, check=True, capture_output=True, text=True)
    return json.loads(done.stdout)


def test_an_unread_knob_gets_one_warning_naming_it_and_what_is_done_instead(tmp_path):
    """matchmaker.cpp spends at most NEGOTIATOR_MAX_TIME_PER_CYCLE on a cycle, so HTCondor would
    stop early here; negotiatord runs every cycle to its end, and says so once."""
    config = _write(tmp_path, "NEGOTIATOR_MAX_TIME_PER_CYCLE = 5\n"
                              "NEGOTIATOR_UPDATE_AFTER_CYCLE = false\n")
    with capture_logs() as logs:
        settings = load_settings(config)
    (warning,) = settings.warnings
    assert warning.startswith("NEGOTIATOR_MAX_TIME_PER_CYCLE = '5' is not read: ")
    assert "runs to its end" in warning
    # NEGOTIATOR_UPDATE_AFTER_CYCLE set to HTCondor's own default (param_info.in: false) changes nothing
    assert [entry["warning"] for entry in logs if entry["log_level"] == "warning"] == [warning]


def test_an_unread_knobs_default_that_a_macro_moved_is_no_setting(tmp_path):
    """ACCOUNTANT_DATABASE_FILE defaults to $(SPOOL)/Accountantnew.log (param_info.in): a config
    that sets SPOOL, as every central manager's does, changes its value, but sets nothing of it."""
    spool = _write(tmp_path, f"SPOOL = {tmp_path}/spool\n")
    assert not any("ACCOUNTANT_DATABASE_FILE" in warning for warning in load_settings(spool).warnings)
    (tmp_path / "local").write_text(f"ACCOUNTANT_DATABASE_FILE = {tmp_path}/accountant.log\n")
    included = _write(tmp_path, f"SPOOL = {tmp_path}/spool\ninclude : {tmp_path}/local\n")
    [warning] = [w for w in load_settings(included).warnings if "ACCOUNTANT_DATABASE_FILE" in w]
    assert warning.startswith(f"ACCOUNTANT_DATABASE_FILE = '{tmp_path}/accountant.log' is not read")


def test_the_knobs_that_split_a_pool_between_negotiators_are_read(tmp_path):
    """matchmaker.cpp ``Matchmaker::reinitialize``: each constraint as configured (a slot or
    submitter constraint that does not parse stops HTCondor's negotiator, ``EXCEPT``); the pool
    size constraint falls back to the obsolete GROUP_DYNAMIC_MACH_CONSTRAINT, with HTCondor's
    word for it; MATCH_WORKING_CM_SLOTS is false unless set (``param_boolean(..., false)``)."""
    settings = load_settings(_write(tmp_path, 'NEGOTIATOR_SLOT_CONSTRAINT = SlotID == 1\n'
                                              'NEGOTIATOR_SUBMITTER_CONSTRAINT = ScheddName == "a"\n'
                                              'NEGOTIATOR_JOB_CONSTRAINT = RequestCpus > 1\n'
                                              'NEGOTIATOR_SLOT_POOLSIZE_CONSTRAINT = Cpus > 0\n'
                                              'MATCH_WORKING_CM_SLOTS = True\n'))
    assert (settings.slot_constraint, settings.submitter_constraint, settings.job_constraint,
            settings.slot_poolsize_constraint, settings.match_working_cm_slots) == (
        "SlotID == 1", 'ScheddName == "a"', "RequestCpus > 1", "Cpus > 0", True)
    # submitter ads come from a collector only, and this config names none
    assert [w.split(":")[0] for w in settings.warnings] == [
        "NEGOTIATOR_SUBMITTER_CONSTRAINT selects submitter ads, which only a collector gives"]
    legacy = load_settings(_write(tmp_path, "GROUP_DYNAMIC_MACH_CONSTRAINT = Cpus > 1\n", "legacy.conf"))
    assert legacy.slot_poolsize_constraint == "Cpus > 1" and legacy.slot_constraint is None
    assert [w.split(",")[0] for w in legacy.warnings] == ["GROUP_DYNAMIC_MACH_CONSTRAINT is obsolete"]
    unparsable = load_settings(_write(tmp_path, "NEGOTIATOR_SLOT_POOLSIZE_CONSTRAINT = Cpus >\n", "bad.conf"))
    assert unparsable.slot_poolsize_constraint is None and "every slot counts" in unparsable.warnings[0]
    with pytest.raises(ConfigError, match=r"NEGOTIATOR_SLOT_CONSTRAINT = 'SlotID ==': not a valid ClassAd"):
        load_settings(_write(tmp_path, "NEGOTIATOR_SLOT_CONSTRAINT = SlotID ==\n", "refused.conf"))
    defaults = load_settings(_write(tmp_path, "", "empty.conf"))
    assert (defaults.slot_constraint, defaults.submitter_constraint, defaults.job_constraint,
            defaults.slot_poolsize_constraint, defaults.match_working_cm_slots) == (None, None, None, None, False)
    assert (defaults.service.update_interval, defaults.service.advertise_accounting) == (300.0, True)


def test_the_wire_protocols_knobs_are_read_and_only_what_is_not_followed_is_said(tmp_path):
    config = _write(tmp_path, "NEGOTIATOR_TIMEOUT = 5\nSEC_DEFAULT_AUTHENTICATION = REQUIRED\n"
                              "NEGOTIATOR_RESOURCE_REQUEST_LIST_SIZE = 50\n")
    assert load_settings(config).warnings == ()
    not_followed = _write(tmp_path, "NEGOTIATOR_PREFETCH_REQUESTS = False\n", "prefetch.conf")
    [warning] = load_settings(not_followed).warnings
    assert warning.startswith("NEGOTIATOR_PREFETCH_REQUESTS = False is ignored")


def test_the_legacy_allocation_rounds_spelling_is_read_as_htcondor_reads_it(tmp_path):
    """GroupEntry.cpp reads HFS_MAX_ALLOCATION_ROUNDS only when GROUP_QUOTA_MAX_ALLOCATION_ROUNDS
    is not defined; HTCondor 25 defines it by default (3), so the legacy spelling counts only
    when the new one is set empty, and is otherwise ignored, which gets a warning."""
    ignored = _write(tmp_path, "HFS_MAX_ALLOCATION_ROUNDS = 1\n", "ignored.conf")
    rounds = "GROUP_QUOTA_MAX_ALLOCATION_ROUNDS"
    assert _htcondor_defines(ignored, [rounds]) == {rounds: "3"}
    settings = load_settings(ignored)
    assert settings.allocation_rounds == 3
    assert [w.split(" is ")[0] for w in settings.warnings] == ["HFS_MAX_ALLOCATION_ROUNDS = '1'"]
    read = _write(tmp_path, "GROUP_QUOTA_MAX_ALLOCATION_ROUNDS =\nHFS_MAX_ALLOCATION_ROUNDS = 1\n", "read.conf")
    assert _htcondor_defines(read, [rounds]) == {rounds: "UNDEFINED"}
    settings = load_settings(read)
    assert settings.allocation_rounds == 1 and settings.warnings == ()
    # set empty with no legacy value either: HTCondor's param_integer default, 3
    neither = _write(tmp_path, "GROUP_QUOTA_MAX_ALLOCATION_ROUNDS =\n", "neither.conf")
    assert load_settings(neither).allocation_rounds == 3


def test_the_legacy_round_robin_rate_is_unread_like_its_new_name(tmp_path):
    """GROUP_QUOTA_ROUND_ROBIN_RATE is not read (pie spins share allocations exactly); its legacy
    spelling is ignored by HTCondor while that one is defined, and unread here when it is not."""
    settings = load_settings(_write(tmp_path, "HFS_ROUND_ROBIN_RATE = 2\n"))
    assert [w.split(",")[0] for w in settings.warnings] == [
        "HFS_ROUND_ROBIN_RATE = '2' is ignored"]
    settings = load_settings(_write(tmp_path, "GROUP_QUOTA_ROUND_ROBIN_RATE =\nHFS_ROUND_ROBIN_RATE = 2\n"))
    assert len(settings.warnings) == 1 and "pie spins" in settings.warnings[0]


def test_match_exprs_are_read_as_matchmaker_reads_them(tmp_path):
    """matchmaker.cpp: each macro NEGOTIATOR_MATCH_EXPRS names becomes NegotiatorMatchExpr<NAME>
    (a name already so prefixed keeps its name); a name with no macro is left out with a warning."""
    settings = load_settings(_write(tmp_path, 'NEGOTIATOR_MATCH_EXPRS = Site, NegotiatorMatchExprPool Nope\n'
                                              'Site = "CHTC"\nNegotiatorMatchExprPool = 1 + 2\n'))
    assert settings.match_exprs == {"NegotiatorMatchExprSite": '"CHTC"', "NegotiatorMatchExprPool": "1 + 2"}
    assert [w.split(" which ")[0] for w in settings.warnings] == [
        "NEGOTIATOR_MATCH_EXPRS references a macro 'Nope'"]


def test_negotiator_knobs_of_matchmaker_and_group_entry_are_read(tmp_path):
    config = _write(tmp_path, "NEGOTIATOR_IGNORE_USER_PRIORITIES = True\nNEGOTIATOR_IGNORE_JOB_RANKS = True\n"
                              "NEGOTIATOR_STRICT_ENFORCE_QUOTA = False\nUSE_GLOBAL_JOB_PRIOS = True\n"
                              "NEGOTIATOR_TRIM_SHUTDOWN_THRESHOLD = 2 * 60\n")
    settings = load_settings(config)
    assert (settings.ignore_user_priorities, settings.ignore_job_ranks, settings.strict_enforce_quota,
            settings.use_global_job_prios, settings.trim_shutdown_threshold) == (True, True, False, True, 120.0)
    assert settings.warnings == ()
    # HTCondor's defaults (param_info.in / the param_boolean fallbacks in matchmaker.cpp, GroupEntry.cpp)
    defaults = load_settings(_write(tmp_path, "", "empty.conf"))
    assert (defaults.ignore_user_priorities, defaults.ignore_job_ranks, defaults.strict_enforce_quota,
            defaults.use_global_job_prios, defaults.trim_shutdown_threshold) == (False, False, True, False, 0.0)


@pytest.mark.parametrize("line, meant", [
    ("GROUP_ACCEPT_SURPLUSS = True", "GROUP_ACCEPT_SURPLUS"),
    ("NEGOTIATORD_PSLOT_LODING = breadth_first", "NEGOTIATORD_PSLOT_LOADING"),
    ("NEGOTIATOR_CONSIDER_PREEMPTON = False", "NEGOTIATOR_CONSIDER_PREEMPTION"),
    ("NEGOTIATOR_SLOT_CONSTRAINTS = True", "NEGOTIATOR_SLOT_CONSTRAINT"),
])
def test_a_misspelt_knob_is_named_with_the_knob_it_is_close_to(tmp_path, line, meant):
    """HTCondor's reader accepts any name, so the misspelt knob is silently a macro nobody reads
    and the one meant stays at its default."""
    settings = load_settings(_write(tmp_path, line + "\n"))
    (warning,) = settings.warnings
    assert warning.startswith(line.split(" =")[0]) and f"did you mean {meant}?" in warning


def test_names_far_from_any_knob_and_other_daemons_knobs_are_not_misspellings(tmp_path):
    settings = load_settings(_write(tmp_path, "POOL_SITE = chtc\nSTARTD_ATTRS = Site\nMY_LIMITS = 3\n"))
    assert settings.warnings == ()


def test_an_unknown_knob_of_negotiatords_own_prefix_is_named(tmp_path):
    settings = load_settings(_write(tmp_path, "NEGOTIATORD_TURBO = True\n"))
    assert settings.warnings == ("NEGOTIATORD_TURBO is not a knob negotiatord knows: it is ignored",)


def test_a_per_group_knob_of_a_group_not_in_group_names_is_an_error_naming_its_line(tmp_path):
    """GroupEntry::hgq_construct_tree asks for GROUP_QUOTA_DYNAMIC_<g> of each listed group only:
    HTCondor silently leaves group_chemistry without its quota."""
    _write(tmp_path, "GROUP_QUOTA_DYNAMIC_group_chemestry = 0.4\n", "groups.conf")
    config = _write(tmp_path, "GROUP_NAMES = group_physics, group_chemistry\n"
                              "GROUP_QUOTA_DYNAMIC_group_physics = 0.6\n"
                              "include : $(CONFIG_ROOT)/groups.conf\n")
    with pytest.raises(ConfigError) as raised:
        load_settings(config)
    message = str(raised.value)
    assert f"GROUP_QUOTA_DYNAMIC_group_chemestry ({tmp_path / 'groups.conf'}, line 1)" in message
    assert "did you mean group_chemistry?" in message


@pytest.mark.parametrize("line", [
    "GROUP_ACCEPT_SURPLUS_group_a = True", "GROUP_PRIO_FACTOR_Group_A = 2", "GROUP_LIMIT_group_a = Cpus:4",
    "GROUP_QUOTA_PREEMPTION_DELAY_group_a = 60", "GROUP_QUOTA_MAX_ALLOCATION_ROUNDS = 2",
])
def test_per_group_knobs_of_listed_groups_and_htcondors_own_group_knobs_load(tmp_path, line):
    """Group names compare case-insensitively, as HTCondor's param names do."""
    settings = load_settings(_write(tmp_path, f"GROUP_NAMES = group_a\nGROUP_QUOTA_group_a = 2\n{line}\n"))
    assert settings.warnings == ()
