"""`constrain: request`: the grammar made from a step's requestMatch (llama.cpp's converter, after our lowering)."""
from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from ladr_lab.errors import ModelError
from ladr_lab.round.validators import make_validator

llama_cpp = pytest.importorskip("llama_cpp", reason="the local extra (llama-cpp-python) is not installed")
from ladr_lab.models.constrain import constrained_grammar, lower_schema  # noqa: E402  (after the skip: it needs llama_cpp)

ROOT = Path(__file__).resolve().parents[2]


def _request_matches():
    for path in sorted((ROOT / "examples").glob("*.yaml")):
        doc = yaml.safe_load(path.read_text())
        for step in doc.get("steps") or []:
            rm = (step.get("retrieve") or {}).get("requestMatch")
            if isinstance(rm, dict):
                yield pytest.param(rm, id=f"{path.stem}:{step['id']}")


@pytest.mark.parametrize("schema", list(_request_matches()))
def test_every_example_requestmatch_makes_a_grammar(schema):
    """(llama.cpp parses each of them in tests/models/local/test_local.py, which has a model's vocabulary to parse with)"""
    text = constrained_grammar(schema)
    assert "root ::= request | prose" in text.splitlines()
    assert "root ::= request | answer | prose" in constrained_grammar(schema, json_answer=True).splitlines()
    assert "root ::= prose" in constrained_grammar(None).splitlines()


@pytest.mark.parametrize(("schema", "keyword", "where"), [
    ({"type": "object", "not": {"required": ["x"]}}, "not", "/"),
    ({"type": "object", "properties": {"files": {"type": "array", "items": {"type": "string"}, "uniqueItems": True}}},
     "uniqueItems", "/properties/files"),
    ({"type": "object", "properties": {"topK": {"type": "integer", "minimum": 1}}}, "minimum", "/properties/topK"),
    ({"type": "object", "properties": {"q": {"type": "string", "pattern": "^a+$", "maxLength": 3}}}, "maxLength",
     "/properties/q"),
    ({"type": "object", "minProperties": 2, "properties": {"a": {}, "b": {}}}, "minProperties", "/"),
    # a list of types beside other keywords: the converter would keep only the types (a TypeError before)
    ({"type": "object", "properties": {"files": {"type": ["array", "null"], "items": {"type": "string"}}}},
     "type", "/properties/files"),
])
def test_a_keyword_the_grammar_cannot_hold_is_refused_by_name_and_place(schema, keyword, where):
    with pytest.raises(ModelError) as err:
        constrained_grammar(schema, where='step "s" requestMatch')
    assert f'"{keyword}"' in str(err.value) and f'step "s" requestMatch{where}' in str(err.value)


def test_a_list_of_bare_types_is_a_choice_the_grammar_holds():
    schema = {"type": "object", "required": ["files"], "properties": {"files": {"type": ["array", "null"]}}}
    assert lower_schema(schema, "requestMatch", "") == schema
    assert "root ::= request | prose" in constrained_grammar(schema).splitlines()


def test_a_required_key_the_schema_does_not_list_is_refused_and_listed_it_is_held():
    with pytest.raises(ModelError, match='"required"'):
        constrained_grammar({"type": "object", "required": ["files"]})
    constrained_grammar({"type": "object", "required": ["files"], "properties": {"files": {}}})


RESEARCH = yaml.safe_load((ROOT / "examples" / "research.yaml").read_text())["steps"][0]["retrieve"]["requestMatch"]
scalars = st.one_of(st.none(), st.booleans(), st.integers(-3, 12), st.text(max_size=3))
values = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                       st.dictionaries(st.sampled_from(
                                                           ["request", "topK", "files", "subfolders", "glob",
                                                            "metatag", "name", "contains", "similarTo", "x"]),
                                                           inner, max_size=4)), max_leaves=12)


strings = st.lists(st.text(max_size=3), max_size=2)
near_valid = st.fixed_dictionaries({}, optional={
    "request": st.fixed_dictionaries({}, optional={
        "files": st.one_of(strings, scalars), "subfolders": strings, "glob": st.one_of(st.text(max_size=3), scalars),
        "metatag": st.fixed_dictionaries({}, optional={"name": st.text(max_size=3), "contains": st.text(max_size=2),
                                                       "similarTo": scalars}),
        "x": scalars}),
    "topK": st.integers(-1, 10), "x": scalars})


@settings(max_examples=500, deadline=None)
@given(st.one_of(values, near_valid))
def test_lowering_keeps_exactly_what_the_schema_accepts(value):
    """minProperties 1 becomes a choice of which property is there, a small integer range its values: the lowered
    schema accepts exactly what requestMatch accepts."""
    lowered = lower_schema(copy.deepcopy(RESEARCH), "requestMatch", "")
    assert "minProperties" not in str(lowered) and "minimum" not in str(lowered)
    assert make_validator(RESEARCH).is_valid(value) == make_validator(lowered).is_valid(value)


@settings(max_examples=300, deadline=None)
@given(near_valid)
def test_the_near_valid_strategy_reaches_both_verdicts(value):
    """(a guard on the strategy above: it must produce accepted and refused values, or the property proves nothing)"""
    SEEN.add(make_validator(RESEARCH).is_valid(value))


SEEN: set = set()


def test_both_verdicts_were_seen():
    test_the_near_valid_strategy_reaches_both_verdicts()
    assert SEEN == {True, False}


def test_lowered_branches_are_valid_examples():
    ok = {"request": {"files": ["a.md"]}, "topK": 8}
    assert make_validator(lower_schema(copy.deepcopy(RESEARCH), "r", "")).is_valid(ok)
    assert not make_validator(lower_schema(copy.deepcopy(RESEARCH), "r", "")).is_valid({"request": {}})
    assert not make_validator(lower_schema(copy.deepcopy(RESEARCH), "r", "")).is_valid({"request": {"glob": "x"}, "topK": 9})


def test_the_safety_net_refuses_json_that_requestmatch_refuses_and_lets_prose_by():
    from ladr_lab.models.constrain import check_constrained

    check_constrained("The answer is in retrieve/dedup.md.", RESEARCH, "local")
    check_constrained('{"request": {"files": ["a.md"]}}', RESEARCH, "local")
    with pytest.raises(ModelError, match="requestMatch refuses"):
        check_constrained('{"request": {}}', RESEARCH, "local")
    with pytest.raises(ModelError, match="does not parse"):
        check_constrained('{"request": ', RESEARCH, "local")
    check_constrained('{"verdict": "reject"}', RESEARCH, "local", json_answer=True)   # a step that tests JSON answers
    with pytest.raises(ModelError, match="only an answer was allowed"):
        check_constrained('{"request": {"files": ["a.md"]}}', None, "local")         # the forced final


def test_a_call_that_may_not_retrieve_is_constrained_to_an_answer_and_a_json_step_may_answer_in_json():
    from ladr_lab.models import CallInfo
    from ladr_lab.models.constrain import CallConstraint

    asking = CallConstraint.of(CallInfo(step="s", request_match=RESEARCH))
    assert asking.kind == "request" and not asking.json_answer and asking.request_match == RESEARCH
    final = CallConstraint.of(CallInfo(step="s", request_match=RESEARCH, forced_final=True))
    assert final.kind == "answer" and final.request_match is None
    assert final.grammar.splitlines()[-2] == "root ::= prose"
    gate = {"type": "object", "required": ["verdict"], "properties": {"verdict": {"enum": ["accept"]}}}
    judged = CallConstraint.of(CallInfo(step="s", request_match=RESEARCH, output_schema=gate))
    # any object may be the answer: the gate's own schema would decide its test for the model (a "reject" impossible)
    assert judged.json_answer and judged.kind == "request+json"
    assert "root ::= request | answer | prose" in judged.grammar.splitlines()
    judged.check('{"verdict": "reject", "score": 1}', "local")


def test_a_constrained_call_says_so_in_the_trace_and_the_why_line():
    from ladr_lab.trace.events import Event, LlmCall
    from ladr_lab.trace.story import describe

    call = LlmCall(step="s", node=1, round=1, iteration=1, messages=[], output="prose", forced_final=False,
                   request_match="final", model="local", reason="not JSON", constrained="request")
    again = Event.from_dict(call.to_dict())
    assert again.constrained == "request"
    lines = "\n".join(describe(again).text_lines())
    assert "why: not JSON [the model's decoding was constrained to a JSON object valid against requestMatch" in lines
    plain = LlmCall(step="s", node=1, round=1, iteration=1, messages=[], output="x", forced_final=False,
                    request_match="final", model="m", reason="not JSON")
    assert "constrained" not in plain.to_dict() and "constrained" not in "\n".join(describe(plain).text_lines())
    from ladr_lab.trace.story import CONSTRAINED

    for kind in ("request", "request+json", "answer", "answer+json", "grammar"):
        call = LlmCall(step="s", node=1, round=1, iteration=1, messages=[], output="x", forced_final=False,
                       request_match="final", model="local", reason="r", constrained=kind)
        assert f"why: r [{CONSTRAINED[kind]}]" in "\n".join(describe(call).text_lines())
