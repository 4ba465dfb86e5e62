"""Edits given as schemas by step are checked as standalone schemas (config.iter_schema_problems) before any
recorded output is judged against them; a `$ref` that does not resolve is left to the verdict, which raises the
engine's own error for it."""
from __future__ import annotations

import pytest

from ladr_lab.analysis.edits import Edits
from ladr_lab.errors import ConfigError


def test_good_edits_are_kept_as_given():
    assert Edits({"s": {"type": "object"}}).tests == {"s": {"requestMatch": {"type": "object"}}}
    assert Edits({"s": '{"jsonMatches": {"type": "string"}, "equals": 4}'}).tests == {
        "s": {"jsonMatches": {"type": "string"}, "equals": "4"}}
    assert Edits({"s": {"match": '{"type": "array"}'}}).tests == {"s": {"match": {"type": "array"}}}


@pytest.mark.parametrize("given, rule, said", [
    ("{", "schema-json", "the schema given for step 's' is not JSON: "),
    ([1], "schema-type", "the schema given for step 's' must be a mapping"),
    ({}, "empty-schema", "the requestMatch given for step 's' must be a non-empty JSON Schema"),
    ({"type": "objekt"}, "invalid-schema", "the requestMatch given for step 's' is not a valid JSON Schema: 'objekt'"),
    ({"minLength": -1}, "invalid-schema", "the requestMatch given for step 's' is not a valid JSON Schema: -1 is less"),
])
def test_a_bad_edit_is_a_config_error_named_by_the_ladder_rule(given, rule, said):
    with pytest.raises(ConfigError) as info:
        Edits({"s": given})
    assert info.value.rule == rule and str(info.value).startswith(said) and info.value.step_id == "s"


def test_an_unknown_keyword_is_only_a_warning_and_a_ref_is_left_to_the_verdict():
    assert Edits({"s": {"requried": ["a"]}}).tests == {"s": {"requestMatch": {"requried": ["a"]}}}
    # judging with it raises the engine's own error (tests/round/test_same_judge.py)
    assert Edits({"s": {"$ref": "#/nope"}}).tests == {"s": {"requestMatch": {"$ref": "#/nope"}}}
