"""The engine and re-judging ask the same judge: on the same output and schema they give the same verdict,
the same reason and the same error (review finding R1: an unresolvable `$ref` was a LadrError for the
engine and a raw jsonschema error for re-judging)."""
from __future__ import annotations

import dataclasses

import pytest

from ladr_lab.analysis import rejudge_rows
from ladr_lab.engine import Run
from ladr_lab.errors import LadrError
from ladr_lab.models import ScriptedModel
from ladr_lab.round import Judge, judge

SCHEMA = {"type": "object", "properties": {"files": {"type": "array", "maxItems": 2, "items": {"type": "string"}},
                                           "request": {"type": "object"}}}
LADDER = """
    - id: s
      retrieve:
        to: { slate: Knowledge, folder: docs }
        as: Docs
        maxRounds: 1
        requestMatch: { type: object, properties: { files: { type: array, maxItems: 2, items: { type: string } },
                                                    request: { type: object } } }
    """

OUTPUTS = {
    "wrapped request": '{"request": {"files": ["core.md"]}}',
    "bare request": '{"files": ["core.md"]}',
    "fenced JSON": 'Let me look:\n```json\n{"files": ["core.md", "faq.md"]}\n```',
    "prose": "Retrieval is per step, and dedup keeps a file from coming twice.",
    "schema failure (maxItems)": '{"files": ["a.md", "b.md", "c.md"]}',
    "not an object": '["core.md"]',
}


def _first_call(ladder, slates, output: str):
    lad = ladder(LADDER)
    run = Run(lad, model=ScriptedModel({"s": [output, "Done."]}), slates=slates)
    run.run()
    return run, run.trace.calls("s")[0]


@pytest.mark.parametrize("name", sorted(OUTPUTS))
def test_the_engine_and_re_judging_give_the_same_verdict(ladder, slates, name):
    output = OUTPUTS[name]
    run, call = _first_call(ladder, slates, output)
    (row,) = [r for r in rejudge_rows(run.trace, {"s": SCHEMA}, detail="all") if r["round"] == 1]
    # what the engine decided, as recorded
    assert row["old"] == (call.request_match == "retrieval")
    # what re-judging decides with the same schema: the same verdict, in the same words
    assert row["new"] == row["old"] and not row["flipped"]
    assert row["new_reason"] == call.reason
    assert (row["extraction"], row["form"]) == (call.verdict.extraction, call.verdict.form)
    # and the judge behind re-judging agrees with the engine's judge field by field, error included
    mine = Judge()
    assert mine.matches("requestMatch", SCHEMA, output, old=row["old"]) == row["new"]
    assert mine.request(SCHEMA, output, valid=row["new"]).judgement == judge(output, SCHEMA).judgement \
        == call.verdict


def test_a_flip_names_the_keyword_the_engine_would_name(ladder, slates):
    output = OUTPUTS["schema failure (maxItems)"]
    loose = {"type": "object"}
    lad = ladder(LADDER.replace("maxItems: 2", "maxItems: 9"))
    run = Run(lad, model=ScriptedModel({"s": [output, "Done."]}), slates=slates)
    run.run()
    (row,) = [r for r in rejudge_rows(run.trace, {"s": SCHEMA}) if r["round"] == 1]
    engine = judge(output, SCHEMA)
    assert row["flipped"] and row["new"] is False
    assert (row["keyword"], row["schema_path"], row["instance_path"], row["message"]) == (
        engine.judgement.keyword, engine.judgement.schema_path, engine.judgement.instance_path,
        engine.judgement.message) == ("maxItems", "/properties/files", "/files", "['a.md', 'b.md', 'c.md'] is too long")
    assert row["new_reason"] == engine.reason
    assert judge(output, loose).is_request


@pytest.mark.parametrize("output", [OUTPUTS["bare request"], OUTPUTS["wrapped request"]])
def test_an_unresolvable_ref_is_the_same_ladr_error_for_both(ladder, slates, output):
    broken = {"$ref": "#/nope"}
    with pytest.raises(LadrError) as engine_error:
        judge(output, broken)
    run, _ = _first_call(ladder, slates, output)
    with pytest.raises(LadrError) as rejudge_error:
        rejudge_rows(run.trace, {"s": broken})
    assert type(rejudge_error.value) is type(engine_error.value)
    assert str(rejudge_error.value) == str(engine_error.value)
    assert "the schema cannot be applied: $ref" in str(engine_error.value)
    # a run whose schema was built in Python with the same $ref fails with the same words
    lad = ladder(LADDER)
    step = lad.steps[0]
    step = dataclasses.replace(step, retrieve=dataclasses.replace(step.retrieve, request_match=broken))
    lad = dataclasses.replace(lad, steps=(step, *lad.steps[1:]))
    res = Run(lad, model=ScriptedModel({"s": [output, "Done."]}), slates=slates).run()
    assert res.status == "error" and str(engine_error.value) in (res.error or "")
