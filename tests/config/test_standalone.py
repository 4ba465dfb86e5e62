"""`iter_schema_problems`: a schema checked on its own (the schema editor's text, an edit given to rejudge) with
the ladder rules' checks and codes, located by line where text was given."""
from __future__ import annotations

import pytest

from ladr_lab.config import check_text, iter_schema_problems
from ladr_lab.config.standalone import NOT_A_SCHEMA, read_schema


def _problems(schema, **kw) -> list[tuple[str | None, int | None, str]]:
    return [(p.rule, p.line, p.message) for p in iter_schema_problems(schema, **kw)]


def test_a_good_schema_has_no_problems_as_text_or_value():
    assert _problems("type: object\nrequired: [request]") == []
    assert _problems('{"type": "object"}', format="json") == []
    assert _problems({"type": "object", "$defs": {"a": {"type": "string"}}, "$ref": "#/$defs/a"}) == []


def test_syntax_errors_are_located():
    [(rule, line, message)] = _problems('{"type": "object",', format="json")
    assert (rule, line) == ("schema-json", 1) and message.startswith("not JSON: ")
    [(rule, line, message)] = _problems("type: object\n  broken: [\n")
    assert (rule, line) == ("yaml-syntax", 2) and "YAML" in message


@pytest.mark.parametrize("schema, rule", [("", "schema-type"), ("[]", "schema-type"), ("3", "schema-type"),
                                          ("{}", "empty-schema"), ({}, "empty-schema"), ([1], "schema-type")])
def test_a_schema_is_a_non_empty_mapping(schema, rule):
    assert _problems(schema) == [(rule, None, NOT_A_SCHEMA)]


def test_metaschema_errors_at_their_lines_with_a_type_suggestion():
    problems = list(iter_schema_problems("properties:\n  a:\n    type: objct\n    minLength: -1"))
    assert [(p.rule, p.line, p.path) for p in problems] == [
        ("invalid-schema", 3, ("properties", "a", "type")), ("invalid-schema", 4, ("properties", "a", "minLength"))]
    assert problems[0].suggestion == "object" and 'did you mean "object"?' in problems[0].message
    assert problems[1].message == "-1 is less than the minimum of 0 (at properties/a/minLength)"


def test_a_ref_that_does_not_resolve_is_found_as_the_schema_ref_rule_finds_it():
    [(rule, line, message)] = _problems("type: object\nproperties:\n  a: {$ref: '#/$defs/nope'}")
    assert (rule, line) == ("schema-ref", 3) and "'#/$defs/nope' does not resolve" in message
    assert _problems({"$ref": "#/nope"}, refs=False) == []
    # the same schema in a ladder: the config rule says the same
    text = ("name: x\nslates: [{title: K, folders: [{name: d}]}]\nsteps:\n  - id: s\n    retrieve:\n"
            "      to: {slate: K, folder: d}\n      requestMatch: {$ref: '#/nope'}\n")
    _lad, found = check_text(text)
    assert "schema-ref" in [p.rule for p in found if p.severity == "error"]


def test_unknown_keywords_are_warnings_at_the_keys_line():
    problems = list(iter_schema_problems("type: object\nrequried: [a]"))
    assert [(p.rule, p.severity, p.line, p.suggestion) for p in problems] == [
        ("unknown-schema-keyword", "warning", 2, "required")]
    assert problems[0].message == 'unknown keyword "requried" (did you mean "required"?) — JSON Schema ignores it'


def test_a_schema_uri_that_is_not_a_string_is_an_error_not_a_crash():
    assert _problems("$schema: 3\ntype: object") == [
        ("invalid-schema", 1, "$schema must be a metaschema URI (a string) (at $schema)")]


def test_read_schema_gives_the_value_and_where_its_parts_are():
    value, pos, error = read_schema('{\n "type": "object"\n}', "JSON")
    assert value == {"type": "object"} and error is None and pos.of(("type",))[0] == 2
    assert read_schema("a: [", "yaml")[2].rule == "yaml-syntax"
    with pytest.raises(ValueError, match="yaml or json"):
        read_schema("{}", "toml")
