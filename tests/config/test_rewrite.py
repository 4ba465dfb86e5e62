"""An edited schema written back into a ladder's YAML in place: the rest of the text is kept as written."""
from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ladr_lab.config import load_ladder_text
from ladr_lab.config.rewrite import replace_schema, rewrite_schema, schema_text, to_yaml_text
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


ANCHORED = HEAD + """  - id: a
    retrieve:
      to: {slate: K, folder: docs}
      as: D
      maxRounds: 1  # keep it small
      requestMatch: &rm
        type: object
        required: [request]
  - id: b
    retrieve: {to: {slate: K, folder: docs}, as: D, maxRounds: 1, requestMatch: *rm}
  - id: c
    retrieve: {to: {slate: K, folder: docs}, as: D, maxRounds: 1, requestMatch: {type: object}}
"""
EDITED = {"type": "object", "required": ["request"], "additionalProperties": False}


def test_editing_an_anchored_schema_keeps_the_anchor_and_names_the_steps_it_changes():
    lad = load_ladder_text(ANCHORED)
    text = schema_text(lad, "a")
    assert not text.startswith("&")                       # the anchor is not part of the schema shown
    for source in (text + "\nadditionalProperties: false", None):
        r = rewrite_schema(lad, "a", EDITED, text=source)
        assert r.anchor == "rm" and r.shared_with == ("b",) and not r.unshared and not r.rewritten
        assert r.ladder.step("b").retrieve.request_match == EDITED       # b names the same node
        assert "# keep it small" in r.ladder.text and "requestMatch: *rm" in r.ladder.text
        assert len(r.warnings) == 1 and '"b"' in r.warnings[0] and "changes" in r.warnings[0]


def test_editing_an_alias_gives_the_step_its_own_copy_in_place():
    lad = load_ladder_text(ANCHORED)
    r = rewrite_schema(lad, "b", EDITED, text=schema_text(lad, "b") + "\nadditionalProperties: false")
    assert r.anchor == "rm" and r.shared_with == ("a",) and r.unshared and not r.rewritten
    assert r.ladder.step("a").retrieve.request_match == {"type": "object", "required": ["request"]}
    assert r.ladder.step("b").retrieve.request_match == EDITED
    assert "# keep it small" in r.ladder.text and "# keep me" in r.ladder.text    # comments kept
    assert '"a"' in r.warnings[0] and "own copy" in r.warnings[0]
    assert replace_schema(lad, "b", EDITED).text == rewrite_schema(lad, "b", EDITED).ladder.text


def test_a_schema_shared_by_nobody_reports_nothing():
    lad = load_ladder_text(ANCHORED)
    r = rewrite_schema(lad, "c", EDITED)
    assert r.anchor is None and r.shared_with == () and r.warnings == []


def test_a_whole_document_rewrite_says_its_comments_are_lost(monkeypatch):
    from ladr_lab.config import rewrite
    monkeypatch.setattr(rewrite, "_splice", lambda *a, **k: None)     # a document the splice cannot handle
    r = rewrite_schema(load_ladder_text(BLOCK), "r", {"type": "object"})
    assert r.rewritten and "# keep me" not in r.ladder.text
    assert any("comments" in w for w in r.warnings)
