"""One ad must never stop negotiation: deep, wide, huge and malformed expressions, at intake and
in the cycle, in-process and in the dry run, mixed with the sample pool.

Every hostile job is made unmatchable (``&& TARGET.Hostile =?= true``, which no slot has) after
its hostile part, which the cycle still reads and compiles, so the sample's own jobs must match
exactly as they do without it.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
from functools import lru_cache
from pathlib import Path

from hypothesis import given, settings as hypothesis_settings, strategies as st

from negotiatord.accountant import AccountantState
from negotiatord.ads.limits import MAX_EXPRESSION_CHARS, MAX_NESTING, MAX_OPERATORS
from negotiatord.fastpath.interpreter.evaluator import FastEvaluator
from negotiatord.feed.intake import Intake, take_in_text
from negotiatord.feed.kinds import AdKind
from negotiatord.pool.builder import build_snapshot
from negotiatord.runtime import run_cycle
from negotiatord.settings import load_settings

ROOT = Path(__file__).resolve().parents[2]
CONFIG = ROOT / "config" / "default.conf"
SLOTS = (ROOT / "samples" / "slots.ads").read_text()
JOBS = (ROOT / "samples" / "jobs.ads").read_text()
TEMPLATE = [line for line in JOBS.split("\n\n")[0].splitlines()
            if not line.startswith(("Requirements", "ClusterId", "ProcId", "GlobalJobId"))]
NOW = 1790000200


@lru_cache(maxsize=1)
def _settings():
    return load_settings(CONFIG)


def hostile_job(number: int, requirements: str, attribute: str = "Requirements") -> str:
    """A sample job ad, keyed ``hostile#<number>``, whose ``attribute`` is ``requirements``."""
    fields = [*TEMPLATE, f"ClusterId = {9000 + number}", "ProcId = 0", f'GlobalJobId = "hostile#{number}"']
    if attribute == "Requirements":
        return "\n".join([*fields, f"Requirements = {requirements}"])
    return "\n".join([*fields, f"{attribute} = {requirements}", "Requirements = TARGET.Hostile =?= true"])


def unmatchable(expression: str) -> str:
    return f"{expression} && (TARGET.Hostile =?= true)"


def negotiate(jobs: str, slots: str = SLOTS) -> tuple[Intake, Intake, object]:
    """Intake of both texts as the daemon does it, then one cycle over what was filed."""
    slot_intake = take_in_text(AdKind.SLOT, slots, "POST /v1/ads/slots")
    job_intake = take_in_text(AdKind.JOB, jobs, "POST /v1/ads/jobs")
    settings = _settings()
    snapshot = build_snapshot([ad for _, ad in slot_intake.accepted], [ad for _, ad in job_intake.accepted], settings)
    result = run_cycle(snapshot, AccountantState(), settings, NOW, FastEvaluator(snapshot.table, settings, NOW))
    return slot_intake, job_intake, result


def matches(result: object) -> set[tuple[str, str]]:
    return {(match.job, match.slot) for match in result.matches}


@lru_cache(maxsize=1)
def baseline() -> frozenset[tuple[str, str]]:
    _, _, result = negotiate(JOBS)
    assert result.matches
    return frozenset(matches(result))


def and_chain(clauses: int) -> str:
    return " && ".join(f'(TARGET.Attr_{i} =!= "value_{i}")' for i in range(clauses))


def sum_of(terms: int) -> str:
    return " + ".join(f"x{i}" for i in range(terms)) + " >= 0"


# -- the reported cases ------------------------------------------------------------------------------


def test_600_and_clauses_are_refused_at_intake_naming_the_ad_and_the_pool_negotiates() -> None:
    """26 KB of ``&&`` clauses: more operators than classad2 evaluates (its trees stop at ~400
    levels), refused before classad2 reads it; before, it was filed and every cycle failed."""
    text = hostile_job(1, and_chain(600))
    assert 20_000 < len(text) < MAX_EXPRESSION_CHARS
    _, jobs, result = negotiate(text + "\n\n" + JOBS)
    [problem] = jobs.problems
    assert problem.key == "hostile#1" and problem.position == 1 and problem.line == 1
    assert problem.reason.startswith("line 18: Requirements: 1,799 operators")
    assert matches(result) == baseline()
    assert not result.problems


def test_1000_terms_are_refused_at_intake_naming_the_ad() -> None:
    text = hostile_job(1, sum_of(1000))
    assert 2_000 < len(text.splitlines()[-1]) < 10_000
    _, jobs, result = negotiate(text + "\n\n" + JOBS)
    [problem] = jobs.problems
    assert problem.key == "hostile#1" and "Requirements: 1,000 operators" in problem.reason
    assert matches(result) == baseline()


def test_the_longest_chain_within_the_limits_negotiates() -> None:
    """A chain as long as the limits allow is read, analysed and compiled without recursion."""
    _, jobs, result = negotiate(hostile_job(1, unmatchable(f"({sum_of(MAX_OPERATORS - 4)})")) + "\n\n" + JOBS)
    assert not jobs.problems
    assert matches(result) == baseline()
    assert not result.problems


def test_a_slot_start_of_1000_terms_is_refused_naming_the_slot() -> None:
    slot = SLOTS.split("\n\n")[0]
    slot = "\n".join(line for line in slot.splitlines() if not line.startswith(("Start", "Name")))
    slot += f'\nName = "hostile@slot"\nStart = ({sum_of(1000)}) && (MY.Hostile =?= true)'
    slots, _, result = negotiate(JOBS, SLOTS + "\n\n" + slot)
    [problem] = slots.problems
    assert problem.key == "hostile@slot" and "Start: 1,00" in problem.reason
    assert matches(result) == baseline()


def test_a_slot_start_as_long_as_the_limits_allow_leaves_the_pool_negotiating() -> None:
    """Against the same slot with a plain START that matches nothing: the slot still weighs in
    the pool either way."""
    slot = SLOTS.split("\n\n")[0]
    slot = "\n".join(line for line in slot.splitlines() if not line.startswith(("Start", "Name")))
    slot += '\nName = "hostile@slot"\nStart = '
    long_start = f"({sum_of(MAX_OPERATORS - 4)}) && (MY.Hostile =?= true)"
    slots, _, result = negotiate(JOBS, SLOTS + "\n\n" + slot + long_start)
    assert not slots.problems and "hostile@slot" in dict(slots.accepted)
    _, _, plain = negotiate(JOBS, SLOTS + "\n\n" + slot + "MY.Hostile =?= true")
    assert matches(result) == matches(plain)
    assert not result.problems


def test_50000_terms_are_refused_naming_the_ad_and_the_attribute() -> None:
    _, jobs, result = negotiate(hostile_job(1, sum_of(50_000)) + "\n\n" + JOBS)
    [problem] = jobs.problems
    assert problem.key == "hostile#1" and problem.position == 1
    assert "Requirements" in problem.reason and "characters" in problem.reason
    assert matches(result) == baseline()


def test_the_dry_run_reports_50000_terms_as_a_malformed_ad_and_does_not_crash(tmp_path: Path) -> None:
    """In a child process, so that a crash of classad2 shows as a failed test."""
    jobs = tmp_path / "jobs.ads"
    jobs.write_text(hostile_job(1, sum_of(50_000)) + "\n\n" + hostile_job(2, and_chain(600)) + "\n\n" + JOBS)
    done = subprocess.run([sys.executable, "-m", "negotiatord", "negotiate", "--config", str(CONFIG),
                           "--slots", str(ROOT / "samples" / "slots.ads"), "--jobs", str(jobs), "--now", str(NOW)],
                          capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert done.returncode == 3, done.stderr[-2000:]
    assert "Traceback" not in done.stderr
    assert f"{jobs}:1 (ad 1): line 18: Requirements: 438,893 characters" in done.stderr
    assert f"{jobs}:20 (ad 2): line 37: Requirements: 1,799 operators" in done.stderr
    found = {(match["job"], match["slot"]) for match in json.loads(done.stdout)["matches"]}
    assert found == baseline()


# -- random hostile ads ------------------------------------------------------------------------------

def _nested(depth: int) -> str:
    return "(" * depth + "TARGET.Memory" + ")" * depth + " > 0"


def _unary(count: int) -> str:
    return "!" * count + "false"


def _ternary(count: int) -> str:
    return " ".join(f"x{i} ? false :" for i in range(count)) + " false"


def _string(length: int) -> str:
    return f'"{"x" * length}" == TARGET.Name'


def _garbage(seed: int) -> str:
    rng = random.Random(seed)
    return bytes(rng.randrange(256) for _ in range(rng.randrange(1, 300))).decode("latin-1").replace("\n", " ")


def _shape(make, operators, nesting=lambda n: 1):
    """Hostile text made by ``make`` from a size, with whether it is beyond the limits, from its
    operators and nesting as built (``unmatchable`` adds 3 operators)."""
    def built(size: int) -> tuple[str, bool]:
        text = unmatchable(make(size))
        beyond = operators(size) + 3 > MAX_OPERATORS or nesting(size) > MAX_NESTING
        return text, beyond or len(text) > MAX_EXPRESSION_CHARS
    return built


# (hostile text, whether it is beyond the limits: True, False, or None when it may be either)
_SHAPES = st.one_of(
    st.integers(1, MAX_OPERATORS // 2).map(_shape(and_chain, lambda n: 3 * n - 1)),
    st.integers(1, 3 * MAX_OPERATORS).map(_shape(lambda n: f"({sum_of(n)})", lambda n: n)),
    st.integers(1, 3 * MAX_NESTING).map(_shape(lambda n: f"({_nested(n)})", lambda n: 2, lambda n: n + 1)),
    st.integers(1, 3 * MAX_OPERATORS).map(_shape(lambda n: f"({_unary(n)})", lambda n: n)),
    st.integers(1, 3 * MAX_OPERATORS // 2).map(_shape(lambda n: f"({_ternary(n)})", lambda n: 2 * n)),
    st.integers(0, 2 * MAX_EXPRESSION_CHARS).map(_shape(lambda n: f"({_string(n)})", lambda n: 2)),
    st.integers(0, 2**32).map(lambda seed: (_garbage(seed), None)),
)


def in_form(ads: list[str], form: str) -> str:
    """Long-form ad texts as one text in ``form``: the long form, the new form, or JSON with every
    value as an expression."""
    if form == "old":
        return "\n\n".join(ads)
    statements = [[line.partition("=") for line in ad.splitlines()] for ad in ads]
    if form == "new":
        return "\n".join("[" + "; ".join(f"{n.strip()} = {v.strip()}" for n, _, v in ad) + "]" for ad in statements)
    return json.dumps([{n.strip(): f"/Expr({v.strip()})/" for n, _, v in ad} for ad in statements]).replace("/", "\\/")


@hypothesis_settings(max_examples=15, derandomize=True, deadline=None)
@given(st.lists(st.tuples(_SHAPES, st.sampled_from(["Requirements", "Rank"])), min_size=1, max_size=3),
       st.integers(0, 3), st.sampled_from(["old", "new", "json"]))
def test_hostile_ads_are_named_and_the_rest_of_the_pool_negotiates(hostile: list, where: int, form: str) -> None:
    samples = JOBS.split("\n\n")
    bad = [hostile_job(number, text if form == "old" or beyond is not None else text.translate(_BRACKETS_AND_QUOTES),
                       attribute) for number, ((text, beyond), attribute) in enumerate(hostile)]
    mixed = samples[:where] + bad + samples[where:]
    _, jobs, result = negotiate(in_form(mixed, form))
    refused = {problem.position: problem for problem in jobs.problems}
    accepted = dict(jobs.accepted)
    for number, ((_, beyond), attribute) in enumerate(hostile):
        key, position = f"hostile#{number}", where + number + 1
        if beyond:
            assert refused[position].key == key and attribute in refused[position].reason
        elif beyond is False:
            assert key in accepted, refused.get(position)
        else:
            assert key in accepted or position in refused
    assert len(refused) + len(accepted) == len(mixed)
    assert matches(result) == baseline()


# Garbage that would end or open an ad in the bracketed forms is kept within its own ad.
_BRACKETS_AND_QUOTES = str.maketrans("[]{}\"';\\/", " " * 9)
