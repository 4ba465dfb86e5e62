"""Schema typos in a ladder: unknown keywords warned at any depth with a did-you-mean from the dialect, and a
misspelt type named with the type it likely meant."""
from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ladr_lab.config import check_text, iter_problems
from ladr_lab.config.keywords import dialect_keywords, iter_unknown_keywords, schema_ok
from ladr_lab.config.schemas import metaschema_errors

HEAD = """name: t
slates: [{ title: K, folders: [{ name: docs }] }]
steps:
  - id: s
    fields: [{ name: I, type: slateRead, from: { slate: K, folder: docs, metatag: index } }]
"""


def problems(body: str):
    return [p for p in iter_problems(HEAD + body)]


def test_the_issue_typos_are_warned_with_a_did_you_mean_and_validation_still_passes():
    body = """    retrieve:
      to: { slate: K, folder: docs }
      as: R
      maxRounds: 2
      requestMatch:
        type: object
        requried: [request]
        properties:
          request: { type: object, minLenght: 1 }
"""
    ladder, found = check_text(HEAD + body)
    assert ladder is not None                       # warnings never fail validation
    got = [(p.rule, p.severity, p.path[-1], p.suggestion, p.line) for p in found]
    assert got == [("unknown-schema-keyword", "warning", "requried", "required", 12),
                   ("unknown-schema-keyword", "warning", "minLenght", "minLength", 14)]
    assert str(found[1]).startswith('Step "s": retrieve.requestMatch has an unknown keyword "minLenght" '
                                    "(at properties/request)")
    assert found[1].path == ("steps", 0, "retrieve", "requestMatch", "properties", "request", "minLenght")


def test_every_schema_of_the_ladder_is_walked_at_any_depth():
    gate = {"type": "object", "allOf": [{"properties": {"x": {"type": "array", "itemz": {}}}}],
            "$defs": {"d": {"maxLenght": 3}}, "items": {"minimun": 1}}
    match = {"type": "object", "properties": {"fact": {"type": "string", "patern": "x"}},
             "additionalProperties": {"requird": ["a"]}}
    body = f"""    if: {{ jsonMatches: {json.dumps(gate)}, then: continue, else: prune }}
    slateWrite: {{ to: {{ slate: K, folder: docs, file: f.md }}, match: {json.dumps(match)} }}
"""
    got = sorted((p.path[-1], p.suggestion) for p in problems(body))
    assert got == [("itemz", "items"), ("maxLenght", "maxLength"), ("minimun", "minimum"), ("patern", "pattern"),
                   ("requird", "required")]


def test_names_extensions_and_values_are_not_keywords():
    schema = {"type": "object", "required": ["requried"], "x-ui": {"widget": "z"},
              "properties": {"requried": {"const": {"minLenght": 1}}, "titel": {"enum": [{"typo": 1}]}},
              "default": {"whatever": 1}, "examples": [{"anything": 2}]}
    assert list(iter_unknown_keywords(schema)) == []


def test_the_dialect_decides_what_is_known():
    assert {"title", "description", "default", "examples", "$comment", "prefixItems"} <= dialect_keywords({})
    draft4 = {"$schema": "http://json-schema.org/draft-04/schema#", "type": "object", "$comment": "x",
              "prefixItems": [{}]}
    assert sorted(k for _, k, _ in iter_unknown_keywords(draft4)) == ["$comment", "prefixItems"]


@pytest.mark.parametrize("typo, meant", [("objekt", "object"), ("arry", "array"), ("strin", "string"),
                                         ("Integer", "integer")])
def test_a_misspelt_type_is_an_error_with_a_did_you_mean(typo, meant):
    body = f"""    slateWrite: {{ to: {{ slate: K, folder: docs, file: f.md }}, match: {{ type: object, properties: {{ a: {{ type: {typo} }} }} }} }}
"""
    (p,) = problems(body)
    assert p.rule == "invalid-schema" and p.severity == "error" and p.suggestion == meant
    assert f"'{typo}' is not a JSON Schema type" in str(p) and str(p).endswith(f'(did you mean "{meant}"?)')
    (q,) = problems(body.replace(f"type: {typo}", f"type: [null, {typo}]"))
    assert q.suggestion == meant


VALUES = st.one_of(st.integers(-2, 3), st.sampled_from(["string", "objekt", "(", "a.*", "object", "array"]),
                   st.booleans(), st.lists(st.sampled_from(["a", "b", 1]), max_size=2))


def _schemas(children):
    keyword = st.sampled_from(["type", "required", "minLength", "maxItems", "pattern", "enum", "const", "format"])
    leaf = st.dictionaries(keyword, VALUES, max_size=3)
    nested = st.one_of(
        st.builds(lambda c: {"properties": {"p": c}}, children),
        st.builds(lambda c: {"items": c}, children),
        st.builds(lambda c: {"items": [c]}, children),
        st.builds(lambda cs: {"allOf": cs}, st.lists(children, max_size=2)),
        st.builds(lambda c: {"not": c, "$defs": {"d": c}}, children),
        st.booleans(),
    )
    return st.one_of(leaf, nested, st.builds(lambda a, b: {**a, **b} if isinstance(b, dict) else a, leaf, nested))


SCHEMAS = st.recursive(st.dictionaries(st.sampled_from(["type", "minimum", "pattern"]), VALUES, max_size=2),
                       _schemas, max_leaves=8).filter(lambda s: isinstance(s, dict))


@settings(max_examples=150, deadline=None)
@given(schema=SCHEMAS, dialect=st.sampled_from([None, "http://json-schema.org/draft-07/schema#",
                                                "http://json-schema.org/draft-04/schema#"]))
def test_the_cached_check_by_subschema_agrees_with_the_whole_metaschema_check(schema, dialect):
    if dialect:
        schema = {**schema, "$schema": dialect}
    assert schema_ok(schema) == (not metaschema_errors(schema)), schema
