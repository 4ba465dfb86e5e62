"""Assertions on experiment cells: every kind passing and failing, negation, every spelling load_asserts reads and
the errors it gives, retrieval grounding against a real run's trace, graders and python checks."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ladr_lab import LadrError, Run, ScriptedModel, load_ladder
from ladr_lab.experiments.assertions import NAME_CHARS, Assertion, check_all, check_assertion, load_asserts
from ladr_lab.experiments.checks import KINDS, AssertionResult

ROOT = Path(__file__).resolve().parents[2]


def cell(output: str = "Dedup keeps each file once across rounds.", **kw) -> dict:
    base = {"row": "1", "variant": "a", "status": "completed", "output": output, "llm_calls": 2, "tokens_in": 100,
            "tokens_out": 20, "cost": 0.01, "seconds": 1.5, "error": None, "input.context": "How does dedup work?"}
    return base | kw


def one(spec, c=None, trace=None, **kw) -> AssertionResult:
    (a,) = load_asserts(spec)
    return check_assertion(a, cell() if c is None else c, trace, **kw)


@pytest.fixture(scope="module")
def trace():
    """A real run of examples/research_small.yaml: round 1 asks for ./retrieve/dedup.md (fetched) and nope.md
    (not found), round 2 asks for dedup.md again (already in context), round 3 answers."""
    model = ScriptedModel(['{"files": ["./retrieve/dedup.md", "nope.md"]}', '{"files": ["retrieve/dedup.md"]}',
                           "Dedup keeps each file once."])
    run = Run(load_ladder(ROOT / "examples" / "research_small.yaml"), model=model, input="How does dedup work?")
    assert run.run().status == "completed"
    return run.trace


# ---- content kinds ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("spec, passes, reason", [
    ("contains: dedup", False, "output does not contain 'dedup'"),
    ("contains: Dedup", True, "output contains 'Dedup'"),
    ("icontains: DEDUP", True, "output contains 'DEDUP' (ignoring case)"),
    ("icontains: merge", False, "output does not contain 'merge' (ignoring case)"),
    ("regex: ^Dedup\\b.*rounds\\.$", True, "output matches regex"),
    ("regex: ^keeps", False, "output does not match regex"),
    ("equals: Dedup keeps each file once across rounds.", True, "output equals"),
    ("equals: Dedup", False, "output does not equal 'Dedup'"),
    ("starts-with: Dedup keeps", True, "output starts with 'Dedup keeps'"),
    ("starts-with: keeps", False, "output does not start with 'keeps'"),
])
def test_text_kinds_pass_and_fail(spec, passes, reason):
    r = one(spec)
    assert r.passed is passes and r.reason.startswith(reason)


def test_equals_strips_the_output():
    assert one("equals: OK", cell("\n  OK \n")).passed is True


@pytest.mark.parametrize("output, passes, reason", [
    ('{"ok": 1}', True, "JSON found (strict)"),
    ('Here it is:\n```json\n{"ok": 1}\n```\n', True, "JSON found (fence)"),
    ("no braces here", False, "no JSON found in the output"),
])
def test_is_json_reads_what_the_engine_extracts(output, passes, reason):
    r = one("is-json", cell(output))
    assert r.passed is passes and r.reason == reason


SCHEMA = {"type": "object", "required": ["files"], "properties": {"files": {"type": "array", "minItems": 1}}}


def test_json_schema_validates_the_extracted_json():
    ok = one({"type": "json-schema", "value": SCHEMA}, cell('Reading:\n```json\n{"files": ["a.md"]}\n```'))
    assert ok.passed is True and ok.reason == "JSON found (fence) and it matches the schema"
    bad = one({"type": "json-schema", "value": SCHEMA}, cell('{"files": []}'))
    assert bad.passed is False and "does not match the schema" in bad.reason and "files" in bad.reason
    none = one({"type": "json-schema", "value": SCHEMA}, cell("prose only"))
    assert none.passed is False and none.reason == "no JSON found in the output"


def test_a_schema_in_a_json_string_and_is_json_with_a_schema():
    (a,) = load_asserts(["json-schema: " + json.dumps(SCHEMA)])
    assert a.value == SCHEMA
    (b,) = load_asserts({"type": "is-json", "value": SCHEMA})
    assert b.value == SCHEMA and check_assertion(b, cell('{"nope": 1}')).passed is False


# ---- budgets and status ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("spec, passes, reason", [
    ("max-calls: 2", True, "2 model calls ≤ 2"),
    ("max-calls: 1", False, "2 model calls > 1"),
    ("max-cost: 0.02", True, "0.01 cost (USD) ≤ 0.02"),
    ("max-cost: 0.005", False, "0.01 cost (USD) > 0.005"),
    ("max-tokens: 120", True, "120 tokens ≤ 120"),
    ("max-tokens: 119", False, "120 tokens > 119"),
    ("max-seconds: 2", True, "1.5 seconds ≤ 2"),
    ("max-seconds: 1", False, "1.5 seconds > 1"),
    ("status", True, "status is 'completed'"),
    ("status: aborted", False, "status is 'completed', not 'aborted'"),
])
def test_budget_and_status_kinds(spec, passes, reason):
    r = one(spec)
    assert r.passed is passes and r.reason == reason


def test_a_missing_metric_cannot_be_checked():
    r = one("max-cost: 1", {"status": "completed", "output": "x", "cost": float("nan")})
    assert r.passed is None and r.reason == "the cell has no cost"


def test_an_errored_cell_fails_content_assertions_negated_or_not():
    bad = cell("", status="error", error="ModelError: model down")
    for spec in ("contains: x", "not-contains: x", "is-json", "llm-rubric: anything at all"):
        r = one(spec, bad, grader="offline")
        assert r.passed is False and r.reason == "the cell ended in error: ModelError: model down", spec
    assert one("status: error", bad).passed is True
    assert one("max-calls: 0", bad | {"llm_calls": 0}).passed is True


# ---- negation -----------------------------------------------------------------------------------------------

def test_not_prefix_inverts_and_says_so():
    r = one("not-contains: dedup")
    assert r.passed is True and r.reason == "output does not contain 'dedup': not-contains passes"
    r = one("not-icontains: dedup")
    assert r.passed is False and r.reason.endswith("not-icontains fails")
    assert one({"type": "contains", "value": "Dedup", "negate": True}).passed is False
    (a,) = load_asserts("not-regex: ^x")
    assert a.kind == "regex" and a.negate and a.name == "not-regex:^x"


def test_negation_keeps_an_unchecked_result_unchecked():
    r = one("not-fetched: a.md")          # no trace
    assert r.passed is None and r.reason == "no trace to check retrieval against"


@given(output=st.text(max_size=30), needle=st.text(min_size=1, max_size=5).filter(lambda s: s.strip() == s and s),
       kind=st.sampled_from(["contains", "icontains", "starts-with", "equals"]))
def test_negation_always_inverts_a_checked_result(output, needle, kind):
    plain = check_assertion(Assertion(kind, needle), cell(output))
    negated = check_assertion(Assertion(kind, needle, negate=True), cell(output))
    assert plain.passed is not None and negated.passed is (not plain.passed)


# ---- fetched ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("path", ["retrieve/dedup.md", "./retrieve/dedup.md", "/retrieve/dedup.md",
                                  "retrieve\\dedup.md", "retrieve/*.md", "**/dedup.md", "retrieve/d?dup.md"])
def test_fetched_accepts_the_shapes_paths_are_written_in(trace, path):
    r = one(f"fetched: {path}", trace=trace)
    assert r.passed is True and r.reason == "fetched retrieve/dedup.md in round 1"


def test_fetched_fails_for_what_was_never_fetched(trace):
    r = one("fetched: gates/*.md", trace=trace)
    assert r.passed is False and r.reason == "never fetched gates/*.md (fetched: retrieve/dedup.md)"
    r = one("fetched: *.md", trace=trace)            # a star stays in one folder
    assert r.passed is False


def test_fetched_says_when_a_path_was_asked_for_but_not_found(trace):
    r = one("fetched: ./nope.md", trace=trace)
    assert r.passed is False and r.reason == "never fetched ./nope.md: asked for it, not found in round 1"


def test_never_fetched_and_not_fetched(trace):
    assert one("never-fetched: nope.md", trace=trace).passed is True
    r = one("not-fetched: retrieve/dedup.md", trace=trace)
    assert r.passed is False and r.reason.endswith("not-fetched fails")
    (a,) = load_asserts("never-fetched: x.md")
    assert (a.kind, a.negate, a.name) == ("fetched", True, "not-fetched:x.md")


def test_fetched_reads_a_trace_file_and_events(trace, tmp_path):
    trace.to_jsonl(tmp_path / "t.jsonl")
    assert one("fetched: retrieve/dedup.md", trace=tmp_path / "t.jsonl").passed is True
    assert one("fetched: retrieve/dedup.md", trace=trace.to_dicts()).passed is True
    missing = one("fetched: a.md", trace=tmp_path / "gone.jsonl")
    assert missing.passed is None and missing.reason.startswith("the trace cannot be read")


# ---- python -----------------------------------------------------------------------------------------------

def short(output):
    return len(output) < 100


def calls_ok(output, cell):
    return cell["llm_calls"] <= 3, f"{cell['llm_calls']} calls"


def grounded(output, cell, trace):
    return {"pass": trace is not None, "reason": "has a trace", "score": 0.9}


def test_python_functions_of_one_two_and_three_parameters(trace):
    assert one(short).passed is True and one(short).reason == "short returned True"
    r = one(calls_ok)
    assert r.passed is True and r.reason == "calls_ok: 2 calls"
    r = one(grounded, trace=trace)
    assert r.passed is True and r.reason == "grounded: has a trace" and r.score == 0.9
    assert one(grounded).passed is False
    (a,) = load_asserts(short)
    assert a.kind == "python" and a.name == "python:short"


@pytest.mark.parametrize("returned, threshold, passes, score", [
    (0.7, None, True, 0.7), (0.3, None, False, 0.3), (0.7, 0.8, False, 0.7), (1, None, True, 1.0),
    ((False, "too long"), None, False, None), ({"pass": True, "reason": "fine"}, None, True, None),
    ({"score": 0.2}, None, False, 0.2), ({"pass": True, "score": 0.6}, 0.9, False, 0.6),
])
def test_python_return_shapes(returned, threshold, passes, score):
    r = one({"type": "python", "value": lambda output: returned, "threshold": threshold})
    assert r.passed is passes and r.score == score


def test_python_return_that_says_nothing_is_unchecked():
    r = one(lambda output: None)
    assert r.passed is None and "returned None" in r.reason


def test_a_raising_python_check_fails_without_stopping():
    def boom(output):
        raise ValueError("no good")
    r = one(boom)
    assert r.passed is False and r.reason == "boom raised ValueError: no good"


def test_python_by_module_and_function_name():
    (a,) = load_asserts("python: os.path:isabs")
    assert a.name == "python:os.path:isabs"
    assert check_assertion(a, cell("/abs")).passed is True and check_assertion(a, cell("rel")).passed is False


@pytest.mark.parametrize("spec, words", [
    ("python: no_such_module_xyz:f", "cannot import module 'no_such_module_xyz'"),
    ("python: os.path:nope", "module 'os.path' has no 'nope'"),
    ("python: justaname", 'needs a callable or "module:function"'),
    ({"type": "python", "value": lambda: True}, "must take 1 to 3 positional arguments"),
])
def test_python_that_cannot_be_called_is_refused_at_load(spec, words):
    with pytest.raises(LadrError, match="row 3") as info:
        load_asserts(spec, where="row 3")
    assert words in str(info.value)


# ---- model-graded -------------------------------------------------------------------------------------------

RUBRIC = "The answer explains that dedup skips files already shown in earlier rounds"


def test_offline_stand_in_is_deterministic():
    ok = one(f"llm-rubric: {RUBRIC}", cell("Dedup skips files already shown in earlier rounds."), grader="offline")
    assert ok.passed is True and ok.score == 1.0 and "offline stand-in" in ok.reason
    bad = one(f"model-graded: {RUBRIC}", cell("Dedup is a feature."), grader="offline")
    assert bad.passed is False and bad.score == pytest.approx(1 / 7)
    assert "missing: skips, files, already, shown, earlier, rounds" in bad.reason
    again = one(f"model-graded: {RUBRIC}", cell("Dedup is a feature."), grader="offline")
    assert again == bad


def test_a_scripted_grader_verdict_is_read():
    grader = ScriptedModel(['{"pass": false, "reason": "it never names the rounds"}'])
    r = one(f"model-graded: {RUBRIC}", grader=grader)
    assert r.passed is False and r.reason == "grader script: it never names the rounds"
    assert "Rubric:\n" + RUBRIC in grader.calls[0]["messages"][-1]["content"]


def test_an_unparsable_grader_verdict_is_unchecked():
    r = one(f"model-graded: {RUBRIC}", grader=ScriptedModel(["Looks good to me!"]))
    assert r.passed is None and "Looks good to me!" in r.reason


def test_a_failing_grader_or_none_leaves_the_cell_unchecked():
    r = one(f"model-graded: {RUBRIC}", grader=ScriptedModel([]))
    assert r.passed is None and r.reason.startswith("the grader script failed: ScriptExhausted")
    r = one(f"model-graded: {RUBRIC}")
    assert r.passed is None and "no grader model was given" in r.reason


# ---- load_asserts spellings -----------------------------------------------------------------------------------

def test_empty_specs_give_nothing():
    assert load_asserts(None) == [] and load_asserts("") == [] and load_asserts("  \n") == []
    assert load_asserts(float("nan")) == [] and load_asserts([]) == []


def test_a_csv_cell_of_several_lines():
    got = load_asserts("contains: dedup\n\n# a comment\nmax-calls: 3\nnot-regex: ^\\{\n")
    assert [(a.kind, a.value, a.negate, a.name) for a in got] == [
        ("contains", "dedup", False, "contains:dedup"), ("max-calls", 3, False, "max-calls:3"),
        ("regex", "^\\{", True, "not-regex:^\\{")]


def test_a_json_string_cell_and_mappings():
    text = json.dumps([{"type": "contains", "value": "x", "name": "has x"}, "max-cost: 0.5",
                       {"kind": "status", "value": "completed"}])
    got = load_asserts(text)
    assert [a.name for a in got] == ["has x", "max-cost:0.5", "status:completed"]
    assert load_asserts('{"type": "icontains", "value": "Y"}')[0].kind == "icontains"


def test_an_assertion_and_mixed_lists_pass_through():
    a = Assertion("contains", "x")
    got = load_asserts([a, "contains: x", short])
    assert [b.name for b in got] == ["contains:x", "contains:x#2", "python:short"] and got[0] is a


def test_numbers_are_coerced_from_text():
    got = load_asserts({"type": "max-seconds", "value": " 2.5 "})
    assert got[0].value == 2.5
    assert load_asserts({"type": "python", "value": short, "threshold": "0.8"})[0].threshold == 0.8


def test_derived_names_are_shortened():
    (a,) = load_asserts("contains: " + "x" * 100)
    assert len(a.name) == NAME_CHARS and a.name.endswith("…")


@pytest.mark.parametrize("spec, words", [
    ("contians: dedup", 'unknown assertion kind "contians" (did you mean "contains"?)'),
    ("not-fetchd: a.md", '(did you mean "not-fetched"?)'),
    ("The answer is good", "is not an assertion: write KIND: VALUE"),
    ({"type": "contains", "vaule": "x"}, 'unknown key "vaule" in an assertion (did you mean "value"?)'),
    ({"type": "contains", "kind": "contains", "value": "x"}, "both type and kind"),
    ({"value": "x"}, 'an assertion needs a "type"'),
    ("regex: ([a-z", "'([a-z' is not a valid regular expression"),
    ("max-calls: three", "assertion \"max-calls:three\" needs a whole number >= 0, got 'three'"),
    ("max-calls: 2.5", "needs a whole number"),
    ("max-cost: -1", "needs a number >= 0"),
    ({"type": "json-schema", "value": {"type": "objekt"}}, "not a valid JSON Schema"),
    ({"type": "json-schema", "value": {"$ref": "#/$defs/nope"}}, "does not resolve"),
    ("json-schema: {not json", "the schema is not valid JSON"),
    ("contains:", "needs a non-empty text value"),
    ('[{"type": "contains"', "read as JSON, and this is not valid JSON"),
    (42, "not int"),
])
def test_bad_specs_are_refused_with_where_and_why(spec, words):
    with pytest.raises(LadrError) as info:
        load_asserts(spec, where="inputs.csv row 4")
    assert str(info.value).startswith("inputs.csv row 4: ") and words in str(info.value)


kinds = st.sampled_from([k for k in KINDS if k not in ("python", "json-schema", "model-graded", "status", "is-json",
                                                       "regex")])
values = st.text(alphabet="ab.*/ -x", min_size=1, max_size=60).filter(lambda s: s.strip())


@given(st.lists(st.tuples(st.booleans(), kinds, values), max_size=12))
def test_names_from_load_asserts_are_unique_and_short(items):
    specs = [{"type": ("not-" if neg else "") + kind, "value": "3" if kind.startswith("max-") else value}
             for neg, kind, value in items]
    got = load_asserts(specs)
    names = [a.name for a in got]
    assert len(set(names)) == len(names) == len(items)
    assert all(len(n) <= NAME_CHARS for n in names)


# ---- check_all ---------------------------------------------------------------------------------------------

def test_check_all_gives_results_by_name_in_order(trace):
    got = check_all("contains: Dedup\nmax-calls: 1\nfetched: retrieve/dedup.md\nllm-rubric: dedup rounds",
                    cell(), trace, grader="offline")
    assert list(got) == ["contains:Dedup", "max-calls:1", "fetched:retrieve/dedup.md", "model-graded:dedup rounds"]
    assert [r.passed for r in got.values()] == [True, False, True, True]


def test_check_assertion_checks_an_assertion_made_by_hand():
    assert check_assertion(Assertion("max-calls", "3"), cell()).passed is True
    assert check_assertion(Assertion("not-contains", "zzz"), cell()).passed is True
    with pytest.raises(LadrError, match="needs a non-empty text value"):
        check_assertion(Assertion("contains"), cell())


def test_check_assertion_refuses_what_is_not_an_assertion():
    with pytest.raises(LadrError, match="takes an Assertion"):
        check_assertion("contains: x", cell())        # type: ignore[arg-type]
