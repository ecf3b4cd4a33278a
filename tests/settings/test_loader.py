"""The config layer: HTCondor's own reader in a child process, typed and checked by the loader.

References no one here wrote: HTCondor itself (``htcondor2.param`` in a separate process, its
error messages, its macro/include/if machinery), classad2 for expression values, and the worked
examples of Erlandson's "Consumption Policies and Unifying Heterogeneous Resource Constraints"
(the design document ``../shared/seeds/003_95491ebc54d17725.txt``, cited below as seed 003).
Every load costs one child process (~0.2 s), so related checks share a load.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import classad2
import pytest

from negotiatord.settings import (
    ROOT_GROUP,
    ConfigError,
    CycleWorker,
    GroupSettings,
    GroupTree,
    PslotLoading,
    Settings,
    load_settings,
)
from negotiatord.settings import loader
from negotiatord.settings.groups import WEIGHT_UNIT

CONFIG_DIR = Path(__file__).resolve().parents[2] / "config"


def _eval(text: str, slot: dict, job: dict | None = None):
    return classad2.ExprTree(text).eval(classad2.ClassAd(slot), classad2.ClassAd(job or {}))


def _write(tmp_path: Path, text: str, name: str = "negotiator.conf") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def _htcondor_typed_defaults(names: list[str]) -> dict:
    """What htcondor2.param itself returns for ``names`` under an empty config (own process)."""
    code = ("import json, sys, htcondor2; "
            "print(json.dumps({n: htcondor2.param.get(n) for n in sys.argv[1:]}))")
    env = {k: v for k, v in os.environ.items() if not k.upper().startswith("_CONDOR_")}
    env["CONDOR_CONFIG"] = os.devnull
    out = subprocess.run([sys.executable, "-c", code, *names], env=env, check=True,
                         capture_output=True, text=True)
    return json.loads(out.stdout)


# --- the example configs -------------------------------------------------------------------

def test_cpu_centric_matches_seed_cost_example():
    s = load_settings(CONFIG_DIR / "cpu_centric.conf")
    assert s.consumption_policy is True
    assert s.slot_weight == "Cpus"
    # Seed 003 "Match Cost With Consumption Policies": W = 8, uses 1 cpu, W' = 7, cost 1.
    slot, job = {"Cpus": 8, "Memory": 4096, "Disk": 10000}, {"RequestCpus": 1}
    used = _eval(s.consumption["cpus"], slot, job)
    before = _eval(s.slot_weight, slot)
    after = _eval(s.slot_weight, {**slot, "Cpus": slot["Cpus"] - used})
    assert (before, after, before - after) == (8, 7, 1)


def test_memory_centric_expands_macro_in_both_expressions():
    s = load_settings(CONFIG_DIR / "memory_centric.conf")
    # $(MEMORY_QUANTUM) was expanded by HTCondor in both places.
    assert s.slot_weight == "floor(Memory / 128)"
    assert s.consumption["memory"] == "quantize(target.RequestMemory, {128})"
    # Seed 003: "If total memory available is 1GB, then this slot + policy can support up to
    # 8 matches, and total weight (prior to matching) is 8".
    assert _eval(s.slot_weight, {"Memory": 1024}) == 8
    assert _eval(s.consumption["memory"], {}, {"RequestMemory": 200}) == 256
    assert _eval(s.consumption["disk"], {}, {"RequestDisk": 1}) == 1024


def test_static_slot_policy_consumes_whole_slot():
    s = load_settings(CONFIG_DIR / "static_slot.conf")
    assert s.slot_weight == "1"
    slot = {"TotalSlotCpus": 16, "TotalSlotMemory": 65536, "TotalSlotDisk": 1000}
    assert _eval(s.consumption["cpus"], slot) == 16
    assert _eval(s.consumption["memory"], slot) == 65536
    assert _eval(s.consumption["disk"], slot) == 900


def test_multi_centric_weight_is_the_scarcer_resource():
    s = load_settings(CONFIG_DIR / "multi_centric.conf")
    assert s.consumption["memory"] == "quantize(target.RequestMemory, {256})"
    assert s.consumption["disk"] == "quantize(target.RequestDisk, {128})"
    assert _eval(s.slot_weight, {"Cpus": 8, "Memory": 512}) == 2    # memory-bound
    assert _eval(s.slot_weight, {"Cpus": 2, "Memory": 8192}) == 2   # cpu-bound
    assert _eval(s.slot_weight, {"Cpus": 3, "Memory": 8192}) == 3


def test_hierarchical_groups_tree_and_dynamic_quotas():
    s = load_settings(CONFIG_DIR / "hierarchical_groups.conf")
    assert [g.name for g in s.groups] == ["group_a", "group_a.x", "group_a.y", "group_b"]
    quotas = {g.name: g.dynamic_quota for g in s.groups}
    assert quotas == {"group_a": 0.7, "group_a.x": 0.5, "group_a.y": 0.5, "group_b": 0.3}
    assert all(g.static_quota is None for g in s.groups)
    assert s.accept_surplus is True and all(g.accept_surplus for g in s.groups)
    assert s.group_tree.parent("GROUP_A.X") == "group_a"
    assert s.group_tree.parent("group_b") == ROOT_GROUP
    # The CPU-centric policy came in through `include : $(CONFIG_ROOT)/cpu_centric.conf`.
    assert s.consumption_policy is True and s.consumption["cpus"] == "target.RequestCpus"


def test_default_config_uses_if_include_and_per_group_override():
    s = load_settings(CONFIG_DIR / "default.conf")
    # The include sits inside `if version >= 8.1.2`: its values prove the branch was taken.
    assert s.consumption_policy is True
    assert s.consumption == {"cpus": "target.RequestCpus", "memory": "target.RequestMemory",
                             "disk": "target.RequestDisk"}
    assert s.slot_weight == "Cpus" and s.use_slot_weights is True
    assert s.pslot_loading is PslotLoading.DEPTH_FIRST
    assert s.accept_surplus is True
    tree = s.group_tree
    assert tree.settings_of("group_physics").accept_surplus is True
    assert tree.settings_of("group_chemistry").accept_surplus is False   # GROUP_ACCEPT_SURPLUS_<g>
    assert tree.settings_of("group_physics.cms").dynamic_quota == 0.5
    assert tree.parent("group_physics.cms") == "group_physics"
    timing = (s.negotiator_interval, s.negotiator_min_interval, s.negotiator_cycle_delay)
    assert timing == (20, 5, 5)


def test_every_example_config_loads():
    configs = sorted(CONFIG_DIR.glob("*.conf"))
    assert {p.name for p in configs} >= {
        "default.conf", "cpu_centric.conf", "memory_centric.conf", "static_slot.conf",
        "multi_centric.conf", "hierarchical_groups.conf"}
    # Each expression param parses (the loader checked), so classad2 accepts them again here.
    for path in configs:
        s = load_settings(path)
        assert isinstance(s, Settings) and s.source == path
        for text in [s.slot_weight, s.group_sort_expr, *s.consumption.values()]:
            classad2.ExprTree(text)


# --- HTCondor's defaults and lookup rules --------------------------------------------------

@pytest.fixture(scope="module")
def empty_settings(tmp_path_factory) -> Settings:
    return load_settings(_write(tmp_path_factory.mktemp("empty"), "# nothing set\n"))


def test_unset_params_take_htcondors_defaults(empty_settings):
    s = empty_settings
    ref = _htcondor_typed_defaults([
        "CONSUMPTION_POLICY", "CONSUMPTION_CPUS", "CONSUMPTION_MEMORY", "CONSUMPTION_DISK",
        "SLOT_WEIGHT", "NEGOTIATOR_USE_SLOT_WEIGHTS", "NEGOTIATOR_PRE_JOB_RANK",
        "NEGOTIATOR_POST_JOB_RANK", "GROUP_ACCEPT_SURPLUS", "GROUP_AUTOREGROUP",
        "NEGOTIATOR_ALLOW_QUOTA_OVERSUBSCRIPTION", "GROUP_SORT_EXPR", "PRIORITY_HALFLIFE",
        "DEFAULT_PRIO_FACTOR", "CONCURRENCY_LIMIT_DEFAULT", "NEGOTIATOR_INTERVAL",
        "NEGOTIATOR_MIN_INTERVAL"])
    assert s.consumption_policy == ref["CONSUMPTION_POLICY"]
    assert s.consumption == {"cpus": ref["CONSUMPTION_CPUS"], "memory": ref["CONSUMPTION_MEMORY"],
                             "disk": ref["CONSUMPTION_DISK"]}
    assert s.slot_weight == ref["SLOT_WEIGHT"] == "Cpus"
    assert s.use_slot_weights == ref["NEGOTIATOR_USE_SLOT_WEIGHTS"]
    assert s.pre_job_rank == ref["NEGOTIATOR_PRE_JOB_RANK"]
    assert s.post_job_rank == ref["NEGOTIATOR_POST_JOB_RANK"]
    assert s.accept_surplus == ref["GROUP_ACCEPT_SURPLUS"]
    assert s.autoregroup == ref["GROUP_AUTOREGROUP"]
    assert s.allow_quota_oversubscription == ref["NEGOTIATOR_ALLOW_QUOTA_OVERSUBSCRIPTION"]
    assert s.group_sort_expr == ref["GROUP_SORT_EXPR"]
    assert s.priority_halflife == ref["PRIORITY_HALFLIFE"]
    assert s.default_prio_factor == ref["DEFAULT_PRIO_FACTOR"]
    assert s.concurrency_limit_default == ref["CONCURRENCY_LIMIT_DEFAULT"]
    assert s.negotiator_interval == ref["NEGOTIATOR_INTERVAL"]
    assert s.negotiator_min_interval == ref["NEGOTIATOR_MIN_INTERVAL"]
    # Not in HTCondor's param table; the manual documents 20 s.
    assert s.negotiator_cycle_delay == 20
    assert s.groups == () and s.pslot_loading is PslotLoading.DEPTH_FIRST
    # HTCondor's own *_LIMIT knobs (DETECTED_CPUS_LIMIT, ...) are not concurrency limits.
    assert s.concurrency_limits == {} and s.concurrency_scope_defaults == {}


LOOKUP_RULES = """\
GROUP_NAMES = Group_A, group_a.Sub  other
# Param names are case-insensitive: none of these is spelled like the group.
group_quota_dynamic_GROUP_A = 0.25
GROUP_QUOTA_DYNAMIC_GROUP_A.SUB = 1
GROUP_ACCEPT_SURPLUS_group_a = True
GROUP_AUTOREGROUP_GROUP_A.sub = True
Group_Prio_Factor_OTHER = 10
# A static quota computed by HTCondor's macro expansion, then evaluated like param_double.
SLOTS = 12
GROUP_QUOTA_other = $(SLOTS) / 4
# The negotiator's subsystem override wins over the plain name; other daemons' do not apply.
SLOT_WEIGHT = Cpus
NEGOTIATOR.SLOT_WEIGHT = floor(Memory / 1024)
STARTD.SLOT_WEIGHT = 1
NEGOTIATOR.CONSUMPTION_GPUS = target.RequestGpus
# Empty: no pre-job rank at all; an empty numeric param means HTCondor's default.
NEGOTIATOR_PRE_JOB_RANK =
PRIORITY_HALFLIFE =
NEGOTIATORD_PSLOT_LOADING = Breadth_First
# Concurrency limits: ours, scoped, and HTCondor's own DETECTED_CPUS_LIMIT (not a limit).
Matlab_LIMIT = 4
license.fluent_LIMIT = 2
CONCURRENCY_LIMIT_DEFAULT_LICENSE = 1
DETECTED_CPUS_LIMIT = 3
# if/else: `defined` sees Matlab_LIMIT through a differently-cased name.
if defined MATLAB_LIMIT
  CONCURRENCY_LIMIT_DEFAULT = 10
else
  CONCURRENCY_LIMIT_DEFAULT = 1
endif
"""


@pytest.fixture(scope="module")
def lookup_settings(tmp_path_factory) -> Settings:
    path = _write(tmp_path_factory.mktemp("rules"), LOOKUP_RULES)
    with pytest.MonkeyPatch.context() as mp:
        # An environment override is part of HTCondor's config; it is not a built-in param.
        mp.setenv("_CONDOR_SCRATCH_LIMIT", "7")
        return load_settings(path)


def test_group_params_are_case_insensitive(lookup_settings):
    s = lookup_settings
    assert [g.name for g in s.groups] == ["Group_A", "group_a.Sub", "other"]
    a, sub, other = s.groups
    assert (a.dynamic_quota, a.accept_surplus, a.autoregroup) == (0.25, True, False)
    assert (sub.dynamic_quota, sub.accept_surplus, sub.autoregroup) == (1.0, False, True)
    # declared as Group_A: parents match case-insensitively and are named as declared
    assert s.group_tree.parent(sub.name) == "Group_A"
    assert (other.static_quota, other.dynamic_quota, other.prio_factor) == (3.0, None, 10.0)


def test_macros_subsystem_override_and_empty_values(lookup_settings):
    s = lookup_settings
    assert s.slot_weight == "floor(Memory / 1024)"
    assert s.pre_job_rank is None
    assert s.post_job_rank is not None      # still HTCondor's default
    assert s.priority_halflife == 86400     # empty: HTCondor's default (param table)
    assert s.consumption["gpus"] == "target.RequestGpus"
    assert s.consumption["cpus"] == "quantize(target.RequestCpus,{1})"  # HTCondor's default
    assert s.pslot_loading is PslotLoading.BREADTH_FIRST


def test_concurrency_limits_are_the_configs_own(lookup_settings):
    s = lookup_settings
    assert s.concurrency_limits == {"matlab": 4, "license.fluent": 2, "scratch": 7}
    assert s.concurrency_scope_defaults == {"license": 1}
    assert s.concurrency_limit_default == 10


# --- the group tree ------------------------------------------------------------------------

def _tree(*names: str) -> GroupTree:
    return GroupTree([GroupSettings(name, None, None, False, False, None) for name in names])


def test_group_tree_is_built_once_per_settings_object(lookup_settings):
    assert lookup_settings.group_tree is lookup_settings.group_tree
    assert lookup_settings.group_tree.names == (ROOT_GROUP, "Group_A", "group_a.Sub", "other")


def test_group_tree_links_groups_under_none_whatever_the_order_of_group_names():
    tree = _tree("b.y", "B", "a", "b.X", "a.z")
    assert tree.names == (ROOT_GROUP, "b.y", "B", "a", "b.X", "a.z")       # GROUP_NAMES order
    # HTCondor's hgq_groups: breadth-first from <none>, siblings by name, case-insensitively
    assert tree.breadth_first == (ROOT_GROUP, "a", "B", "a.z", "b.X", "b.y")
    assert tree.children(ROOT_GROUP) == ("B", "a") and tree.children("b") == ("b.y", "b.X")
    assert tree.parent("B.Y") == "B" and tree.parent("a") == ROOT_GROUP and tree.parent(ROOT_GROUP) is None
    assert tree.lineage("b.x") == ("b.X", "B", ROOT_GROUP) and tree.lineage(ROOT_GROUP) == (ROOT_GROUP,)
    assert tree.declared("A.Z") == "a.z" and tree.declared("<NONE>") == ROOT_GROUP
    assert tree.declared("c") is None and tree.settings_of(ROOT_GROUP) is None
    with pytest.raises(KeyError):
        tree.lineage("c")


@pytest.mark.parametrize("customer, group", [
    ("group_a.x.alice@site", "Group_A.X"),        # the deepest configured group of the path
    ("GROUP_A.y.bob@site", "Group_A"),            # group_a.y is not configured
    ("group_a.x.sub.carol@site", "Group_A.X"),
    ("alice@site", ROOT_GROUP),                   # no group path
    ("group_b.dave@site", ROOT_GROUP),            # group_b is not configured
    ("group_a.x", "Group_A.X"),                   # a group's own record
    ("group_a.q", "Group_A"),
    (ROOT_GROUP, ROOT_GROUP),
])
def test_assigned_group_follows_htcondors_get_assigned_group(customer, group):
    assert _tree("Group_A", "Group_A.X").assigned_group(customer) == group


# --- bad configs ---------------------------------------------------------------------------

def test_missing_file(tmp_path):
    with pytest.raises(ConfigError, match="no such config file") as err:
        load_settings(tmp_path / "absent.conf")
    assert str(tmp_path / "absent.conf") in str(err.value)


def test_syntax_error_names_file_and_line(tmp_path):
    path = _write(tmp_path, "# fine\nSLOT_WEIGHT = Cpus\nthis line is not a param\n")
    with pytest.raises(ConfigError) as err:
        load_settings(path)
    message = str(err.value)
    assert str(path) in message and "Line 3" in message
    # The daemon process survived HTCondor's exit(1): a good config still loads.
    assert load_settings(CONFIG_DIR / "cpu_centric.conf").slot_weight == "Cpus"


def test_include_of_missing_file_names_both(tmp_path):
    path = _write(tmp_path, "A = 1\ninclude : $(CONFIG_ROOT)/nowhere.conf\n")
    with pytest.raises(ConfigError) as err:
        load_settings(path)
    message = str(err.value)
    assert str(tmp_path / "nowhere.conf") in message
    assert str(path) in message and "Line 2" in message


BAD_VALUES = [
    pytest.param("GROUP_NAMES = group_a\nGROUP_QUOTA_DYNAMIC_group_a = abc\n",
                 "GROUP_QUOTA_DYNAMIC_group_a = 'abc': not a number", id="non-numeric quota"),
    # htcondor2.param would silently read 86400 here.
    pytest.param("PRIORITY_HALFLIFE = one day\n",
                 "PRIORITY_HALFLIFE = 'one day': not a number", id="non-numeric typed param"),
    pytest.param("GROUP_ACCEPT_SURPLUS = maybe\n",
                 "GROUP_ACCEPT_SURPLUS = 'maybe': not a boolean", id="bad boolean"),
    pytest.param("SLOT_WEIGHT = floor(Memory / \n",
                 "SLOT_WEIGHT = 'floor(Memory /': not a valid ClassAd expression",
                 id="bad slot weight"),
    pytest.param("CONSUMPTION_MEMORY = quantize(target.RequestMemory, {128}\n",
                 "CONSUMPTION_MEMORY = ", id="bad consumption expression"),
    pytest.param("NEGOTIATOR_POST_JOB_RANK = 3 4\n", "NEGOTIATOR_POST_JOB_RANK = '3 4'",
                 id="bad rank"),
    pytest.param("NEGOTIATORD_PSLOT_LOADING = random\n",
                 "NEGOTIATORD_PSLOT_LOADING = 'random': must be one of depth_first, breadth_first, one_per_cycle",
                 id="unknown loading mode"),
    pytest.param("NEGOTIATORD_CYCLE_WORKER = process\n",
                 "NEGOTIATORD_CYCLE_WORKER = 'process': must be one of fork, thread", id="unknown cycle worker"),
    pytest.param("GROUP_NAMES = group_a, group_b.x\n",
                 "'group_b.x' needs its parent group 'group_b'", id="undeclared parent"),
    pytest.param("GROUP_NAMES = group_a, GROUP_A\n",
                 "group 'GROUP_A' is listed twice (as 'group_a'", id="duplicate group"),
    pytest.param("GROUP_NAMES = g\nGROUP_QUOTA_g = 4\nGROUP_QUOTA_DYNAMIC_g = 0.5\n",
                 "group 'g' has both GROUP_QUOTA_g and GROUP_QUOTA_DYNAMIC_g", id="both quotas"),
    pytest.param("GROUP_NAMES = g\nGROUP_QUOTA_DYNAMIC_g = 1.5\n",
                 "GROUP_QUOTA_DYNAMIC_g = '1.5': a dynamic quota", id="dynamic quota above 1"),
    pytest.param("GROUP_NAMES = g\nGROUP_QUOTA_g = -2\n",
                 "GROUP_QUOTA_g = '-2': must be >= 0", id="negative static quota"),
    pytest.param("GROUP_NAMES = group-cms\n", "group name 'group-cms' is not usable",
                 id="unconfigurable group name"),
    pytest.param("GROUP_NAMES = group_a, <none>\n",
                 "GROUP_NAMES: the name <none> is reserved for the root group", id="root declared"),
    pytest.param("GROUP_NAMES = g\nGROUP_QUOTA_g = 1e400\n", "GROUP_QUOTA_g = 'inf': not a finite number",
                 id="infinite static quota"),
    pytest.param("MATLAB_LIMIT = lots\n", "MATLAB_LIMIT = 'lots': not a number",
                 id="non-numeric limit"),
    pytest.param("NEGOTIATORD_HTTP_PORT = 70000\n",
                 "NEGOTIATORD_HTTP_PORT = '70000': must be a whole number from 0 to 65535", id="port out of range"),
    pytest.param("NEGOTIATORD_TLS_CERTIFICATE = cert.pem\n",
                 "NEGOTIATORD_TLS_CERTIFICATE and NEGOTIATORD_TLS_KEY go together", id="certificate without key"),
    pytest.param("CLASSAD_LIFETIME = 0\n", "CLASSAD_LIFETIME = '0': must be > 0", id="zero ad lifetime"),
    pytest.param("NEGOTIATION_CYCLE_STATS_LENGTH = 101\n",
                 "NEGOTIATION_CYCLE_STATS_LENGTH = '101': must be a whole number from 0 to 100",
                 id="too many cycle stats"),
]


@pytest.mark.parametrize("text, expected", BAD_VALUES)
def test_bad_value_names_the_param(tmp_path, text, expected):
    path = _write(tmp_path, text)
    with pytest.raises(ConfigError) as err:
        load_settings(path)
    # the message names the line that set the knob it starts with (HTCondor's own errors name the
    # file and line too); an error about no one knob names the file
    assert_names_the_line(str(err.value), path, text)
    assert expected in str(err.value)


def assert_names_the_line(message: str, path: Path, text: str) -> None:
    """``message`` starts with ``path``, and with the line that set the knob it is about when it
    starts with one that ``text`` sets (HTCondor's own errors name the file and line too)."""
    assert message.startswith(f"{path}")
    about = message[len(str(path)):]
    line = re.match(r", line (\d+): ", about)
    rest = about[line.end():] if line else about.removeprefix(": ")
    knob = re.match(r"[A-Za-z_]\w*", rest)
    lines = [number for number, written in enumerate(text.splitlines(), start=1)
             if knob and written.split("=")[0].strip() == knob.group()]
    assert (int(line.group(1)) if line else None) == (lines[-1] if lines else None), message


def test_reader_that_hangs_is_cut_off(tmp_path, monkeypatch):
    monkeypatch.setattr(loader, "CHILD_TIMEOUT_S", 0.001)
    with pytest.raises(ConfigError, match="did not finish reading"):
        load_settings(_write(tmp_path, "A = 1\n"))


# --- the daemon's knobs --------------------------------------------------------------------

def test_daemon_knobs_default_to_loopback_and_the_collectors_lifetime(empty_settings):
    service = empty_settings.service
    assert (service.http_address, service.http_port) == ("127.0.0.1", 9680)
    assert service.state_dir is None and service.token_file is None and service.tls_certificate is None
    assert service.collector_host is None
    # HTCondor's param table has no CLASSAD_LIFETIME (it is the collector's code default): the
    # manual's 900 s stands in
    assert _htcondor_typed_defaults(["CLASSAD_LIFETIME"]) == {"CLASSAD_LIFETIME": None}
    assert service.classad_lifetime == 900
    assert service.cycle_stats_length == _htcondor_typed_defaults(
        ["NEGOTIATION_CYCLE_STATS_LENGTH"])["NEGOTIATION_CYCLE_STATS_LENGTH"]


def test_daemon_knobs_are_read_and_paths_resolved_next_to_the_config(tmp_path):
    s = load_settings(_write(tmp_path, """\
NEGOTIATORD_HTTP_ADDRESS = 0.0.0.0
NEGOTIATORD_HTTP_PORT = 0
NEGOTIATORD_STATE_DIR = var/negotiatord
NEGOTIATORD_TOKEN_FILE = $(NEGOTIATORD_STATE_DIR)/secret
NEGOTIATORD_ACCOUNTANT_DB = /srv/accountant.sqlite
NEGOTIATORD_TLS_CERTIFICATE = tls/cert.pem
NEGOTIATORD_TLS_KEY = tls/key.pem
NEGOTIATORD_MAX_BODY_BYTES = 1024 * 1024
NEGOTIATORD_MATCH_RETENTION = 3600
CLASSAD_LIFETIME = 300
COLLECTOR_HOST = cm.example.org:9618
NEGOTIATION_CYCLE_STATS_LENGTH = 5
"""))
    service = s.service
    assert (service.http_address, service.http_port) == ("0.0.0.0", 0)
    assert service.state_dir == tmp_path / "var" / "negotiatord"
    assert service.token_file == tmp_path / "var" / "negotiatord" / "secret"   # $(macro) expanded first
    assert service.accountant_db == Path("/srv/accountant.sqlite")
    assert (service.tls_certificate, service.tls_key) == (tmp_path / "tls" / "cert.pem", tmp_path / "tls" / "key.pem")
    assert service.max_body_bytes == 1024 * 1024                                 # evaluated like param_integer
    assert (service.match_retention, service.classad_lifetime) == (3600, 300)
    assert service.collector_host == "cm.example.org:9618" and service.cycle_stats_length == 5


def test_per_group_resource_amounts_and_preemption_knobs(tmp_path):
    # The per-resource syntax of Kueue's ResourceFlavor quotas, written as HTCondor params.
    settings = load_settings(_write(tmp_path, "\n".join([
        "GROUP_NAMES = a, b",
        "GROUP_RESOURCE_QUOTA_a = Cpus:64, memory : 262144, GPUs:4",
        "GROUP_BORROWING_LIMIT_a = 10",
        "GROUP_FAIRSHARE_WEIGHT_a = 0",
        "GROUP_LIMIT_b = Cpus:8",
        "GROUP_GUARANTEED_b = Cpus:2",
        "GROUP_QUOTA_PREEMPTION_DELAY_b = 60",
        "NEGOTIATORD_FAIR_SHARING = True",
        "NEGOTIATORD_FAIR_SHARING_STRATEGIES = lessthaninitialshare",
        "NEGOTIATORD_QUOTA_PREEMPTION = True",
    ])))
    a, b = settings.groups
    assert a.resource_quota == {"cpus": 64.0, "memory": 262144.0, "gpus": 4.0}
    assert a.borrowing_limit == {WEIGHT_UNIT: 10.0}
    assert (a.fairshare_weight, b.fairshare_weight) == (0.0, 1.0)
    assert (b.limit, b.guaranteed, b.quota_preemption_delay) == ({"cpus": 8.0}, {"cpus": 2.0}, 60.0)
    assert (a.limit, a.quota_preemption_delay) == (None, 0.0)
    assert settings.fair_sharing and settings.quota_preemption
    assert settings.fair_sharing_strategies == ("LessThanInitialShare",)


def test_preemption_knobs_default_off(empty_settings):
    assert not empty_settings.fair_sharing and not empty_settings.quota_preemption
    assert empty_settings.fair_sharing_strategies == ("LessThanOrEqualToFinalShare", "LessThanInitialShare")


@pytest.mark.parametrize("line, named", [
    ("GROUP_LIMIT_a = Cpus 8", "'Cpus 8'"),
    ("GROUP_LIMIT_a = Cpus:-1", "'Cpus:-1'"),
    ("GROUP_LIMIT_a = Cpus:8, cpus:4", "cpus is given twice"),
    ("GROUP_GUARANTEED_a = Cpus:lots", "'Cpus:lots'"),
    ("NEGOTIATORD_FAIR_SHARING_STRATEGIES = Greedy", "'Greedy'"),
])
def test_bad_resource_amounts_name_the_knob_and_entry(tmp_path, line, named):
    with pytest.raises(ConfigError) as err:
        load_settings(_write(tmp_path, f"GROUP_NAMES = a\n{line}\n"))
    assert line.split(" = ")[0] in str(err.value) and named in str(err.value)


def test_the_cycle_runs_on_a_thread_unless_the_config_asks_for_a_forked_child(tmp_path):
    assert load_settings(_write(tmp_path, "")).service.cycle_worker is CycleWorker.THREAD
    chosen = load_settings(_write(tmp_path, "NEGOTIATORD_CYCLE_WORKER = Fork\n", "fork.conf"))
    assert chosen.service.cycle_worker is CycleWorker.FORK
