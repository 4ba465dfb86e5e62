"""Verdicts as data: the extraction rule, matched or not, the form, and a failure's deciding keyword with
its schema path and instance path (issue 9 item 1), for rounds, gates and slateWrite alike."""
from __future__ import annotations

import pytest

from ladr_lab.engine import Run
from ladr_lab.models import ScriptedModel
from ladr_lab.round.verdict import judge, judge_equals, judge_json
from ladr_lab.trace import Judgement

SCHEMA = {"type": "object", "required": ["request"], "properties": {"request": {
    "type": "object", "properties": {"files": {"type": "array", "maxItems": 2, "items": {"type": "string"}}}}}}


def test_a_failure_names_the_deciding_keyword_and_both_paths():
    v = judge('{"request": {"files": ["a", "b", "c"]}}', SCHEMA)
    assert not v.is_request
    assert v.judgement == Judgement(test="requestMatch", matched=False, extraction="strict", keyword="maxItems",
                                    schema_path="/properties/request/properties/files",
                                    instance_path="/request/files", message="['a', 'b', 'c'] is too long")
    assert "is too long (at request/files)" in v.reason


@pytest.mark.parametrize("output,extraction", [
    ('{"request": {"files": ["a"]}}', "strict"),
    ('Sure:\n```json\n{"request": {"files": ["a"]}}\n```', "fence"),
    ('I will ask {"request": {"files": ["a"]}} now', "balanced"),
])
def test_a_match_names_the_rule_that_found_the_json_and_the_form(output, extraction):
    v = judge(output, SCHEMA)
    assert v.is_request and v.request == {"files": ["a"]}
    assert (v.judgement.matched, v.judgement.extraction, v.judgement.form) == (True, extraction, "wrapped")


def test_a_bare_match_says_what_let_it_through():
    loose = judge('{"files": ["a"]}', {"type": "object"})
    assert loose.judgement.form == "bare" and "the schema has no `required`, so any JSON object matches" in loose.reason
    tight = judge('{"files": ["a"]}', {"type": "object", "required": ["files"]})
    assert "it has the required `files`" in tight.reason
    # no `required`, but closed and counted (research_browse.yaml's shape): not "any JSON object"
    closed = {"type": "object", "additionalProperties": False, "minProperties": 1, "maxProperties": 1,
              "properties": {"files": {"type": "array"}, "subfolders": {"type": "array"}}}
    why = judge('{"subfolders": ["concepts/"]}', closed).reason
    assert "any JSON object" not in why
    assert "no `required` but allows only the declared properties, with minProperties 1 and maxProperties 1" in why


def test_no_json_is_a_final_answer_with_no_extraction_rule():
    v = judge("Plain prose.", SCHEMA)
    assert v.judgement == Judgement(test="requestMatch", matched=False)


def test_pointers_escape_slashes_and_tildes():
    j, _, _ = judge_json('{"a/b": {"c~d": 5}}', {"properties": {"a/b": {"properties": {"c~d": {"type": "string"}}}}},
                         "jsonMatches")
    assert (j.keyword, j.schema_path, j.instance_path) == ("type", "/properties/a~1b/properties/c~0d", "/a~1b/c~0d")


def test_equals_is_judged_on_the_stripped_output():
    assert judge_equals("  OK\n", "OK")[0] == Judgement(test="equals", matched=True)
    assert judge_equals("ok", "OK")[0].matched is False


def test_the_trace_carries_every_verdict(ladder, slates):
    lad = ladder("""
        - id: s
          retrieve:
            to: { slate: Knowledge, folder: docs }
            as: Docs
            maxRounds: 1
            requestMatch: { type: object, required: [files], properties: { files: { maxItems: 1 } } }
          if: { jsonMatches: { type: object, required: [ok] }, then: continue, else: prune }
        - id: w
          slateWrite: { to: { slate: Memory, folder: facts, file: core.md }, on: append,
                        match: { type: object, properties: { n: { minimum: 3 } } } }
        """)
    run = Run(lad, model=ScriptedModel({"s": ['{"files": ["a", "b"]}'], "w": ['{"n": 1}']}), slates=slates)
    run.run()
    (first,) = run.trace.calls("s")       # failing requestMatch, it was the final answer
    assert first.request_match == "final"
    assert (first.verdict.keyword, first.verdict.instance_path) == ("maxItems", "/files")
    gate = run.trace.of_type("gate")[0]
    assert gate.verdict.matched is False and gate.verdict.keyword == "required" and gate.action == "prune"
    w = run.trace.writes()[0]
    assert w.status == "skipped" and (w.verdict.keyword, w.verdict.schema_path) == ("minimum", "/properties/n")
