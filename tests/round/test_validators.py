"""A schema pasted from somewhere never fetches, never hangs: `$ref`s resolve inside the schema or are refused at
load time; `$ref` cycles are refused; patterns run under a time limit when outputs are judged."""
from __future__ import annotations

import time

import pytest

from ladr_lab import Run, ScriptedModel, load_ladder_text
from ladr_lab.config import iter_problems
from ladr_lab.round.validators import PATTERN_SECONDS, make_validator

LADDER = """\
name: refs
slates:
  - title: K
    path: {slate}
    folders: [{{name: docs}}]
steps:
  - id: a
    systemPrompt: x
    retrieve:
      to: {{slate: K, folder: docs}}
      as: D
      maxRounds: 2
      requestMatch: {schema}
"""


def problems(tmp_path, schema: str) -> list:
    (tmp_path / "K" / "docs").mkdir(parents=True, exist_ok=True)
    return list(iter_problems(LADDER.format(slate=tmp_path / "K", schema=schema), file="refs.yaml"))


@pytest.mark.parametrize("ref", ["http://127.0.0.1:9/s.json", "file:///etc/passwd", "other.json", "#/$defs/nope"])
def test_a_ref_that_does_not_resolve_inside_the_schema_is_a_load_error_and_nothing_is_fetched(tmp_path, ref) -> None:
    (err,) = problems(tmp_path, "{$ref: '" + ref + "'}")
    assert err.rule == "schema-ref" and f"$ref {ref!r} does not resolve inside this schema" in str(err)
    assert err.line == 13 and 'Step "a"' in str(err)


def test_refs_that_lead_back_to_themselves_are_a_load_error(tmp_path) -> None:
    (err,) = problems(tmp_path, "{$ref: '#'}")
    assert err.rule == "schema-ref" and "lead back to themselves" in str(err)
    (err,) = problems(tmp_path, "{$defs: {a: {$ref: '#/$defs/b'}, b: {$ref: '#/$defs/a'}}, $ref: '#/$defs/a'}")
    assert "lead back to themselves" in str(err)


@pytest.mark.parametrize("schema", [
    "{$defs: {r: {type: object, required: [request]}}, $ref: '#/$defs/r'}",
    "{$ref: 'https://json-schema.org/draft/2020-12/schema'}",            # a metaschema jsonschema knows
    "{type: object, properties: {request: {$ref: '#/$defs/req'}}, required: [request], "
    "$defs: {req: {type: object, properties: {more: {$ref: '#/$defs/req'}}}}}",   # recursion that consumes input
])
def test_local_refs_and_recursive_shapes_still_load(tmp_path, schema) -> None:
    assert problems(tmp_path, schema) == []


def test_a_backtracking_pattern_times_out_as_not_matching() -> None:
    v = make_validator({"type": "object", "properties": {"request": {"type": "string", "pattern": "^(a|aa)+$"}}})
    start = time.perf_counter()
    errors = list(v.iter_errors({"request": "a" * 40 + "!"}))
    assert time.perf_counter() - start < 20 * PATTERN_SECONDS
    assert len(errors) == 1 and "took longer than" in errors[0].message and "not matching" in errors[0].message
    assert v.is_valid({"request": "aaaa"}) and not v.is_valid({"request": "b"})


def test_pattern_properties_are_bounded_too() -> None:
    v = make_validator({"type": "object", "patternProperties": {"^(a|aa)+$": {"type": "integer"}}})
    assert v.is_valid({"aa": 1}) and not v.is_valid({"aa": "x"})
    errors = list(v.iter_errors({"a" * 40 + "!": "x"}))
    assert [e.message for e in errors if "took longer" in e.message]


def test_a_run_whose_output_meets_a_backtracking_pattern_finishes(tmp_path) -> None:
    (tmp_path / "K" / "docs").mkdir(parents=True)
    schema = "{type: object, required: [request], properties: {request: {type: string, pattern: '^(a|aa)+$'}}}"
    ladder = load_ladder_text(LADDER.format(slate=tmp_path / "K", schema=schema))
    run = Run(ladder, model=ScriptedModel({"a": ['{"request": "' + "a" * 40 + '!"}']}), input="q")
    result = run.run()
    assert result.status == "completed"                    # not a request: the output is the final answer
    (call,) = run.trace.to_dataframe("calls").itertuples()
    assert call.request_match == "final" and "took longer than" in call.reason


def test_a_schema_built_in_python_with_a_remote_ref_ends_the_run_with_a_clear_error(tmp_path) -> None:
    (tmp_path / "K" / "docs").mkdir(parents=True)
    ladder = load_ladder_text(LADDER.format(slate=tmp_path / "K", schema="{type: object}"))
    # a ladder built in Python skips the load-time check: the frozen schema is swapped in underneath it
    object.__setattr__(ladder.steps[0].retrieve, "request_match", {"$ref": "http://127.0.0.1:9/s.json"})
    result = Run(ladder, model=ScriptedModel({"a": ['{"request": {}}']}), input="q").run()
    assert result.status == "error" and "internal error" not in result.error
    assert "does not resolve inside it" in result.error and result.error_step == "a"
