"""negotiatord.ads reads every ClassAd file of the shared data set, in every
form, exactly as classad2 reads each ad, and reports bad ads without losing
their neighbours.  classad2 (parseAds / parseNext / printOld / printJson) is
the reference throughout."""

from __future__ import annotations

import gzip
import json
import string
from pathlib import Path

import classad2
import pytest
from classad2 import ParserType
from hypothesis import given, settings
from hypothesis import strategies as st

from negotiatord.ads import AdFormatError, AdProblem, iter_ads, parse_ads, read_ads
from negotiatord.ads.longform import SEPARATOR, separators

DATA = Path(__file__).resolve().parents[3] / "shared" / "data"
HTCONDOR = DATA / "htcondor"

# Blank-line separated long-form files, with the ad counts their SOURCES.txt gives.
BLANK_LINE_FILES = {
    DATA / "ospool/pool_sample.ads.gz": 205,
    HTCONDOR / "StatusAds/partionable8core": 5,
    HTCONDOR / "StatusAds/basic4slot": 4,
    HTCONDOR / "StatusAds/small1slot": 1,
    HTCONDOR / "StatusAds/cmd_status-af_orig_first_test.ads": 8,
    HTCONDOR / "StatusAds/cmd_status-af_orig_second_test.ads": 8,
    HTCONDOR / "job_ads/test.old.ad": 1,
    HTCONDOR / "job_ads/test_multiple.old.ad": 2,
    HTCONDOR / "job_ads/job_startd_multimatch.ad": 1,
}
# Files whose ads are delimited by `***` (condor_history) or `### ad` lines.
BANNER_FILES = sorted((HTCONDOR / "history").iterdir()) + [DATA / "ospool/negotiator_cycle_stats.txt"]


def text_of(path: Path) -> str:
    data = path.read_bytes()
    return (gzip.decompress(data) if path.suffix == ".gz" else data).decode()


def same_ads(ours: list[classad2.ClassAd], reference: list[classad2.ClassAd]) -> None:
    assert len(ours) == len(reference)
    for mine, theirs in zip(ours, reference):
        assert set(mine.keys()) == set(theirs.keys())
        assert mine.printOld() == theirs.printOld()
        assert mine.printJson() == theirs.printJson()


def banner_blocks(text: str) -> list[str]:
    """The test's own split of a banner-delimited file, for the reference."""
    blocks, block = [], []
    for line in text.splitlines():
        if line.startswith(("***", "###")) or not line.strip():
            if block:
                blocks.append("\n".join(block))
            block = []
        else:
            block.append(line)
    return blocks + (["\n".join(block)] if block else [])


# --- the shared data set --------------------------------------------------


@pytest.mark.parametrize("path", sorted(BLANK_LINE_FILES), ids=lambda p: p.name)
def test_blank_line_files_read_as_classad2_reads_them(path: Path) -> None:
    batch = read_ads(path)
    assert batch.problems == []
    assert len(batch.ads) == BLANK_LINE_FILES[path]
    assert batch.positions == list(range(1, len(batch.ads) + 1))
    same_ads(batch.ads, list(classad2.parseAds(text_of(path), ParserType.Old)))


@pytest.mark.parametrize("path", BANNER_FILES, ids=lambda p: p.name)
def test_banner_files_split_at_banners(path: Path) -> None:
    text = text_of(path)
    banners = sum(line.startswith(("***", "###")) for line in text.splitlines())
    batch = read_ads(path)
    assert batch.problems == []
    assert len(batch.ads) == banners
    same_ads(batch.ads, [classad2.parseOne(block, ParserType.Old) for block in banner_blocks(text)])
    # classad2.parseAds alone would merge the whole file into fewer ads
    assert len(list(classad2.parseAds(text, ParserType.Old))) < banners


def test_history_ads_are_distinct_jobs() -> None:
    batch = read_ads(HTCONDOR / "history/sandyHistory.hist")
    assert sorted(ad["ProcId"] for ad in batch.ads) == [0, 1, 2, 3, 4]
    assert not any(key.startswith("***") for ad in batch.ads for key in ad.keys())


def test_job_queue_log_is_not_classads() -> None:
    path = HTCONDOR / "job_ads/real_job_submission.job_queue.log"
    batch = read_ads(path)
    assert batch.ads == []
    first_line = text_of(path).splitlines()[0]
    assert batch.problems[0].line == 1
    assert first_line in batch.problems[0].reason


@pytest.mark.parametrize("path", [DATA / "ospool/pool_sample.ads.gz", HTCONDOR / "history/sandyHistory.hist"],
                         ids=lambda p: p.name)
def test_round_trip_through_new_form_and_json(path: Path) -> None:
    original = read_ads(path).ads
    new_form = parse_ads("\n".join(str(ad) for ad in original), "new")
    as_json = parse_ads("[\n" + ",\n".join(ad.printJson() for ad in original) + "\n]\n", "json")
    # printJson never puts a raw line break inside a value, so each ad fits on one line
    one_object_per_line = parse_ads("\n".join(" ".join(ad.printJson().split("\n")) for ad in original))
    for batch in (new_form, as_json, one_object_per_line):
        assert batch.problems == []
        same_ads(batch.ads, original)


# --- malformed ads in the middle of a batch -------------------------------

SLOTS = [f'Name = "slot{i}@host"\nCpus = {i}\nMemory = {1024 * i}' for i in range(1, 6)]


def test_bad_long_form_ad_is_reported_and_neighbours_kept() -> None:
    ads = list(SLOTS)
    ads[2] = 'Name = "slot3@host"\nRequirements = (Cpus >\nMemory = 3072'
    text = "\n\n".join(ads) + "\n"
    # classad2 alone keeps a truncated ad without a word
    truncated = classad2.parseNext(ads[2], ParserType.Old)
    assert truncated is not None and "Memory" not in truncated

    batch = parse_ads(text, "jobs.ads")
    assert batch.positions == [1, 2, 4, 5]
    same_ads(batch.ads, [classad2.parseNext(ads[i], ParserType.Old) for i in (0, 1, 3, 4)])
    [problem] = batch.problems
    assert (problem.source, problem.position, problem.line) == ("jobs.ads", 3, 9)
    assert "line 10" in problem.reason and "Requirements = (Cpus >" in problem.reason
    assert str(problem).startswith("jobs.ads:9 (ad 3): ")


@pytest.mark.parametrize("bad_line", ["Cpus 4", "= 4", "Memory =", "Rank == 1"])
def test_bad_long_form_line_is_named(bad_line: str) -> None:
    text = "\n\n".join([SLOTS[0], SLOTS[1] + "\n" + bad_line, SLOTS[2]])
    batch = parse_ads(text)
    assert batch.positions == [1, 3]
    [problem] = batch.problems
    assert (problem.position, problem.line) == (2, 5)
    assert "line 8" in problem.reason and bad_line.strip() in problem.reason


def test_bad_first_and_last_ads() -> None:
    batch = parse_ads("\n\n".join(["garbage here", *SLOTS[:2], "Cpus = (1"]))
    assert batch.positions == [2, 3]
    assert [(p.position, p.line) for p in batch.problems] == [(1, 1), (4, 11)]


def test_bad_new_form_ad_is_reported_with_classad2_message() -> None:
    bad = '[ Name = "slot3@host"; Cpus = 3 Memory = 3072 ]'
    good = [f'[ Name = "slot{i}@host"; Cpus = {i} ]' for i in (1, 2, 4)]
    text = "\n".join([good[0], good[1], bad, good[2]]) + "\n"
    batch = parse_ads(text, "<http body>")
    assert batch.positions == [1, 2, 4]
    same_ads(batch.ads, [classad2.parseNext(g, ParserType.New) for g in good])
    [problem] = batch.problems
    assert (problem.position, problem.line) == (3, 3)
    assert classad2_message(bad, ParserType.New) in problem.reason


def test_bad_json_object_is_reported_with_classad2_message() -> None:
    bad = '{"Name": "slot3@host" "Cpus": 3}'
    good = [f'{{"Name": "slot{i}@host", "Cpus": {i}}}' for i in (1, 2, 4)]
    text = "[\n" + ",\n".join([good[0], good[1], bad, good[2]]) + "\n]\n"
    batch = parse_ads(text)
    assert batch.positions == [1, 2, 4]
    same_ads(batch.ads, [classad2.parseNext(g, ParserType.JSON) for g in good])
    [problem] = batch.problems
    assert (problem.position, problem.line) == (3, 4)
    assert classad2_message(bad, ParserType.JSON) in problem.reason


def classad2_message(text: str, parser: ParserType) -> str:
    try:
        assert classad2.parseNext(text, parser) is None
    except ValueError:
        pass
    message = classad2.lastError().strip()
    assert message
    return message


def test_json_list_element_that_is_not_an_object() -> None:
    batch = parse_ads('[{"A": 1}, 5, {"B": 2}, [3], {"C": 3}]')
    assert batch.positions == [1, 3, 5]
    assert [p.position for p in batch.problems] == [2, 4]
    assert "'5'" in batch.problems[0].reason


@pytest.mark.parametrize("text", ['[A = 1]\n[B = 2]\n[C = "3', '[{"A": 1},\n{"B": 2},\n{"C": "3'])
def test_truncated_input_keeps_the_complete_ads(text: str) -> None:
    batch = parse_ads(text)
    assert [dict(ad) for ad in batch.ads] == [{"A": 1}, {"B": 2}]
    [problem] = batch.problems
    assert (problem.position, problem.line) == (3, 3)
    assert "not terminated" in problem.reason


def test_stray_text_between_new_form_ads() -> None:
    batch = parse_ads("[A = 1]\njunk\n[B = 2]")
    assert batch.positions == [1, 3]
    assert (batch.problems[0].position, batch.problems[0].line) == (2, 2)


# --- long-form details ----------------------------------------------------


def test_multi_line_values_are_joined() -> None:
    text = ("Name = \"slot1\"\nChildCpus = \n {\n 1,\n 2,\n 4 }\n"
            "Nested = [\n  x = 1;\n  y = \"a]b\"\n]\nRequirements = (Cpus > 1 &&\n  Memory > 2)\nRank = 0\n")
    one_line = ('Name = "slot1"\nChildCpus = { 1, 2, 4 }\nNested = [ x = 1; y = "a]b" ]\n'
                "Requirements = (Cpus > 1 && Memory > 2)\nRank = 0\n")
    batch = parse_ads(text)
    assert batch.problems == []
    same_ads(batch.ads, [classad2.parseNext(one_line, ParserType.Old)])
    assert batch.ads[0]["ChildCpus"] == [1, 2, 4]


def test_comment_lines_are_skipped_as_classad2_does() -> None:
    ad_text = "# a slot\nName = \"slot1\"\n# between\nCpus = 4"
    batch = parse_ads("# header only\n\n" + ad_text)
    assert batch.positions == [1]  # the comment-only block is not an ad
    same_ads(batch.ads, [classad2.parseNext(ad_text, ParserType.Old)])


def test_duplicated_attribute_last_wins_as_in_classad2() -> None:
    texts = {
        ParserType.Old: "Cpus = 1\nMemory = 2\ncpus = 3",
        ParserType.New: "[ Cpus = 1; Memory = 2; cpus = 3 ]",
        ParserType.JSON: '{"Cpus": 1, "Memory": 2, "cpus": 3}',
    }
    for parser, text in texts.items():
        [ad] = parse_ads(text).ads
        reference = classad2.parseNext(text, parser)
        assert ad["Cpus"] == reference["Cpus"] == 3
        assert len(ad) == 2
        same_ads([ad], [reference])


def test_old_form_string_escaping_is_classad2s() -> None:
    text = 'Cmd = "C:\\condor\\bin"\nArgs = "say \\"hi\\""'
    [ad] = parse_ads(text).ads
    same_ads([ad], [classad2.parseNext(text, ParserType.Old)])
    assert ad["Cmd"] == "C:\\condor\\bin"


def test_crlf_line_ends() -> None:
    text = "\n\n".join(SLOTS)
    same_ads(parse_ads(text.replace("\n", "\r\n")).ads, parse_ads(text).ads)


def test_iter_ads_yields_positions_and_problems() -> None:
    outcomes = list(iter_ads("\n\n".join([SLOTS[0], "oops", SLOTS[1]]), "s"))
    assert [position for position, _ in outcomes] == [1, 2, 3]
    assert isinstance(outcomes[1][1], AdProblem)
    assert [ad["Cpus"] for _, ad in (outcomes[0], outcomes[2])] == [1, 2]


# --- whole-input errors and files -----------------------------------------


def test_gzip_is_read_whatever_the_name(tmp_path: Path) -> None:
    text = "\n\n".join(SLOTS)
    (tmp_path / "slots.ads.gz").write_bytes(gzip.compress(text.encode()))
    (tmp_path / "slots.bin").write_bytes(gzip.compress(text.encode()))
    (tmp_path / "slots.ads").write_text(text)
    expected = parse_ads(text).ads
    for name in ("slots.ads.gz", "slots.bin", "slots.ads"):
        batch = read_ads(tmp_path / name)
        same_ads(batch.ads, expected)
        assert batch.problems == []


def test_problem_source_is_the_file(tmp_path: Path) -> None:
    path = tmp_path / "jobs.ads"
    path.write_text("\n\n".join([SLOTS[0], "Cpus = (1"]))
    [problem] = read_ads(path).problems
    assert str(problem).startswith(f"{path}:5 (ad 2): ")


def test_unreadable_bytes(tmp_path: Path) -> None:
    path = tmp_path / "bad.ads"
    path.write_bytes(b"\x1f\x8bnot really gzip")
    with pytest.raises(AdFormatError, match=str(path)):
        read_ads(path)


@pytest.mark.parametrize("text", ['"just a string"', "42", "null", '<?xml version="1.0"?><classads/>'])
def test_input_that_holds_no_ads_at_all(text: str) -> None:
    with pytest.raises(AdFormatError, match="body"):
        parse_ads(text, "body")


def test_problem_without_line() -> None:
    assert str(AdProblem("<http body>", 2, None, "bad")) == "<http body> (ad 2): bad"


def test_empty_inputs() -> None:
    for text in ("", "\n\n  \n", "[]", "[ ]\n"):
        batch = parse_ads(text)
        assert (batch.ads, batch.problems) == ([], [])


# --- property: any small ad printed by classad2 reads back equal ----------

_KEYWORDS = {"true", "false", "undefined", "error", "is", "isnt"}
names = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,11}", fullmatch=True).filter(lambda n: n.lower() not in _KEYWORDS)
expressions = st.sampled_from(
    ["Cpus * 2", 'Owner == "alice" && Memory > 1024', "ifThenElse(x, 1, 2.5)", "MY.Cpus + TARGET.Cpus"]
).map(classad2.ExprTree)
# classad2 prints reals with 16 significant digits, so only reals that survive that
# are drawn: the property is about reading, not about classad2's printing.
reals = st.floats(min_value=-1e300, max_value=1e300).map(lambda x: float(f"{x:.15g}"))


def ad_strategy(forbidden_in_strings: str) -> st.SearchStrategy[classad2.ClassAd]:
    strings = st.text(st.characters(blacklist_categories=("Cc", "Cs", "Zl", "Zp"),
                                    blacklist_characters=forbidden_in_strings), max_size=12)
    scalars = st.one_of(st.integers(min_value=-(2**63), max_value=2**63 - 1), reals, st.booleans(), st.none(),
                        strings, expressions)
    values = st.one_of(scalars, st.lists(scalars, max_size=3), st.dictionaries(names, scalars, min_size=1, max_size=3))
    return st.dictionaries(names, values, min_size=1, max_size=6).map(classad2.ClassAd)


AD_STRATEGIES = {
    # The long form cannot carry a line break inside a string (printOld writes it
    # raw), and printOld writes a backslash inside a list element in a way the
    # Old parser then rejects (classad2 cannot read `A = { "\\" }` back either).
    "old": ad_strategy(forbidden_in_strings="\\"),
    "new": ad_strategy(forbidden_in_strings=""),
    "json": ad_strategy(forbidden_in_strings=""),
}


def _printed(form: str, batch: list[classad2.ClassAd]) -> str:
    if form == "old":
        return "\n".join(ad.printOld() for ad in batch)  # printOld ends each ad with a newline
    if form == "new":
        return "\n".join(str(ad) for ad in batch)
    return "[" + ",".join(ad.printJson() for ad in batch) + "]"


@pytest.mark.parametrize("form", sorted(AD_STRATEGIES))
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_printed_ads_read_back_equal(form: str, data: st.DataObject) -> None:
    batch = data.draw(st.lists(AD_STRATEGIES[form], min_size=1, max_size=4))
    result = parse_ads(_printed(form, batch))
    assert result.problems == []
    assert result.ads == batch
    assert result.positions == list(range(1, len(batch) + 1))


def test_classad_equality_is_discriminating() -> None:
    assert classad2.ClassAd({"A": 1}) != classad2.ClassAd({"A": 2})
    assert classad2.ClassAd({"A": 1}) != classad2.ClassAd({"A": 1, "B": string.ascii_letters})


# --- one broken ad in a batch costs only itself -----------------------------------------------

_GOOD = ['[ MyType = "Machine"; Name = "slot1@a" ]', '[ MyType = "Machine"; Name = "slot3@a" ]',
         '[ MyType = "Machine"; Name = "slot4@a" ]']
_GOOD_JSON = ['{"MyType": "Machine", "Name": "slot1@a"}', '{"MyType": "Machine", "Name": "slot3@a"}',
              '{"MyType": "Machine", "Name": "slot4@a"}']


@pytest.mark.parametrize("broken", [
    '[ MyType = "Machine"; Name = "slot2@a; Cpus = 1 ]',       # a string left open
    "[ MyType = 'Machine; Name = \"slot2@a\" ]",              # a quoted name left open
    '[ MyType = "Machine"; Name = "slot2@a"; Cpus = (1 + ]',  # a parenthesis left open
    '[ MyType = "Machine"; Name = "slot2@a"; L = { 1, 2 ]',   # a list left open
    '[ MyType = "Machine"; Name = "slot2@a"; N = [ x = 1 ]',  # a nested ad left open
    '[ MyType = "Machine"; Name = "slot2@a" /* a comment left open ]',
])
@pytest.mark.parametrize("quotes_after", [False, True])
def test_a_new_form_ad_left_open_costs_only_itself(broken: str, quotes_after: bool) -> None:
    """Every ad of the body is accepted or refused by position, whatever the second one left
    open, and whether or not the ads after it hold quotes of their own."""
    good = [ad.replace('"slot', '"x" + "slot') if quotes_after else ad for ad in _GOOD]
    text = "\n".join([good[0], broken, good[1], good[2]]) + "\n"
    batch = parse_ads(text)
    assert batch.positions == [1, 3, 4], batch.problems
    assert [(p.position, p.line) for p in batch.problems] == [(2, 2)]


@pytest.mark.parametrize("broken", ['{"MyType": "Machine", "Name": "slot2@a, "Cpus": 1}',
                                    '{"MyType": "Machine", "Name": "slot2@a", "L": [1, 2}'])
def test_a_json_ad_left_open_costs_only_itself(broken: str) -> None:
    """condor_q -json and condor_status -json print one object per line or start each object
    on a line of its own: the next one is found there."""
    one_per_line = "[\n" + ",\n".join([_GOOD_JSON[0], broken, _GOOD_JSON[1], _GOOD_JSON[2]]) + "\n]\n"
    batch = parse_ads(one_per_line)
    assert batch.positions == [1, 3, 4] and [(p.position, p.line) for p in batch.problems] == [(2, 3)]
    laid_out = [json.dumps(json.loads(ad), indent=2) for ad in _GOOD_JSON]      # as condor_q -json prints
    laid_out.insert(1, broken.replace(", ", ",\n  "))
    pretty = "[\n" + "\n,\n".join(laid_out) + "\n]\n"
    batch = parse_ads(pretty)
    assert batch.positions == [1, 3, 4], (pretty, batch.problems)
    assert [p.position for p in batch.problems] == [2]


def test_multi_line_ads_with_an_ad_left_open() -> None:
    """Ads laid out over several lines (as ``condor_status -long:new`` prints them): the next ad
    starts at the broken one's own indentation."""
    ads = ["[\n  Name = \"slot1@a\";\n  Nested = [\n    x = 1\n  ]\n]",
           "[\n  Name = \"slot2@a;\n  Cpus = 1\n]",
           "[\n  Name = \"slot3@a\";\n  Text = \"two\nlines\"\n]"]
    batch = parse_ads("\n".join(ads) + "\n")
    assert batch.positions == [1, 3] and [(p.position, p.line) for p in batch.problems] == [(2, 7)]
    assert batch.ads[1]["Text"] == "two\nlines"          # a string may span lines: classad2 reads it so


def test_ads_on_one_line_after_one_left_open_are_refused_with_it() -> None:
    """With no line break to find the next ad at, the rest of the input is refused with the ad
    that was left open, and the reason says so."""
    batch = parse_ads(" ".join([_GOOD[0], '[ Name = "open ]', _GOOD[1]]))
    assert batch.positions == [1]
    [problem] = batch.problems
    assert problem.position == 2 and "not terminated" in problem.reason


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(["\n", "\n\n", "A = 1", "  ", "\t", "***", "*** banner", "###", "## x", "*", "**",
                                 "x", "\n   \n", "\n***\n"]), max_size=30),
       st.integers(min_value=1, max_value=9))
def test_separators_searched_a_window_at_a_time_are_finditers(pieces: list[str], window: int) -> None:
    """The long form's separators, searched a bounded window per call (a regular expression holds
    the GIL while it searches), are exactly what one ``finditer`` over the text finds."""
    text = "\n" + "".join(pieces) + "\n"
    assert [m.span() for m in separators(text, window)] == [m.span() for m in SEPARATOR.finditer(text)]
