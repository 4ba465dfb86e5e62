"""An edited schema written back into a ladder's YAML in place: the rest of the text is kept as written."""
from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ladr_lab.analysis.rewrite import replace_schema, schema_text, to_yaml_text
from ladr_lab.config import load_ladder_text
from ladr_lab.errors import ConfigError, ConfigErrors

HEAD = """name: x   # keep me
slates:
  - title: K
    folders: [{name: docs}]
steps:
"""
BLOCK = HEAD + """  - id: r
    retrieve:
      to: {slate: K, folder: docs}
      as: D
      maxRounds: 2
      requestMatch:
        type: object     # inline comment
        required: [files]
    systemPrompt: hi     # after
  - id: g
    if:
      jsonMatches: {type: object, required: [ok]}
      then: continue
      else: prune
    slateWrite:
      to: {slate: K, folder: docs, file: out.md}
      match: '{"type": "object"}'
"""
FLOW = HEAD + """  - id: r
    retrieve: {to: {slate: K, folder: docs}, as: D, maxRounds: 2, requestMatch: {type: object, required: [files]}}
"""


def _lines_changed(a: str, b: str) -> int:
    import difflib
    return sum(1 for ln in difflib.ndiff(a.splitlines(), b.splitlines()) if ln[:1] in "+-")


def test_a_block_schema_is_replaced_and_nothing_else_moves():
    lad = load_ladder_text(BLOCK)
    assert schema_text(lad, "r") == "type: object     # inline comment\nrequired: [files]"
    new = replace_schema(lad, "r", {"type": "object", "required": ["files", "glob"]},
                         text="type: object     # inline comment\nrequired: [files, glob]")
    assert new.step("r").retrieve.request_match["required"] == ["files", "glob"]
    assert new.text == BLOCK.replace("required: [files]", "required: [files, glob]")


def test_without_text_the_schema_is_written_in_ladder_style():
    lad = load_ladder_text(BLOCK)
    new = replace_schema(lad, "r", {"type": "object", "properties": {"files": {"type": "array"}}})
    assert "        properties:\n          files: {type: array}\n" in new.text
    assert "# keep me" in new.text and "systemPrompt: hi     # after" in new.text


def test_inside_a_flow_mapping_the_schema_is_written_as_json():
    lad = load_ladder_text(FLOW)
    new = replace_schema(lad, "r", {"type": "object", "required": ["glob"]}, text="type: object\nrequired:\n  - glob")
    assert 'requestMatch: {"type": "object", "required": ["glob"]}}' in new.text
    assert _lines_changed(FLOW, new.text) == 2


def test_gate_and_write_schemas_and_json_strings():
    lad = load_ladder_text(BLOCK)
    assert schema_text(lad, "g", "match") == "type: object"
    new = replace_schema(lad, "g", {"type": "object", "required": ["fact"]}, "match")
    assert new.step("g").slate_write.match == {"type": "object", "required": ["fact"]}
    new = replace_schema(new, "g", {"type": "object", "required": ["sure"]}, "jsonMatches")
    assert new.step("g").gate.json_matches["required"] == ["sure"]
    assert "      match:\n        type: object\n        required: [fact]\n" in new.text
    assert "      jsonMatches:\n        type: object\n        required: [sure]\n      then: continue" in new.text
    assert _lines_changed(BLOCK, new.text) == 8            # two one-line values became two blocks of two


def test_a_multiline_block_replacing_an_inline_value_opens_on_the_next_line():
    lad = load_ladder_text(BLOCK)
    new = replace_schema(lad, "g", {"type": "object", "required": ["ok", "why"]}, "jsonMatches",
                         text="type: object\nrequired:\n  - ok\n  - why")
    assert "      jsonMatches:\n        type: object\n        required:\n          - ok\n" in new.text


def test_refusals():
    lad = load_ladder_text(BLOCK)
    with pytest.raises(ConfigError, match='no step "nope"'):
        replace_schema(lad, "nope", {"type": "object"})
    with pytest.raises(ConfigError, match="has no retrieve.requestMatch"):
        replace_schema(lad, "g", {"type": "object"})
    with pytest.raises(ConfigError, match="cannot edit"):
        replace_schema(lad, "r", {"type": "object"}, "equals")
    with pytest.raises(ConfigErrors):
        replace_schema(lad, "r", {"type": "objekt"})


SCHEMAS = st.recursive(
    st.fixed_dictionaries({"type": st.sampled_from(["object", "string", "array", "integer"])}),
    lambda inner: st.fixed_dictionaries({"type": st.just("object"),
                                         "properties": st.dictionaries(st.from_regex(r"[a-z]{1,6}", fullmatch=True),
                                                                       inner, max_size=3)},
                                        optional={"required": st.lists(st.from_regex(r"[a-z]{1,6}", fullmatch=True),
                                                                       max_size=2, unique=True)}),
    max_leaves=6)


@settings(max_examples=40, deadline=None)
@given(SCHEMAS, st.sampled_from(["yaml", "json", "none"]))
def test_any_schema_round_trips_through_the_text(schema, form):
    lad = load_ladder_text(BLOCK)
    text = {"yaml": to_yaml_text(schema), "json": json.dumps(schema, indent=2), "none": None}[form]
    new = replace_schema(lad, "r", schema, text=text)
    assert new.step("r").retrieve.request_match == schema
    assert new.step("g").gate.json_matches == lad.step("g").gate.json_matches and "# keep me" in new.text
