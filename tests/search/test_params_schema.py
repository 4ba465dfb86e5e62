"""`PARAMS_SCHEMA`, seed 002's `retrieve` params as one JSON Schema, and `load_request`, its checker, agree."""
from __future__ import annotations

import pytest

from ladr_lab.search import InvalidRequestParams
from ladr_lab.search.request import KNOWN, PARAMS_SCHEMA, load_request

# every parameter docs/server.md's table lists for `retrieve` (seed 002, plus the `fields` and `timeoutMs` extensions)
SEED_002 = {"query", "k", "candidateK", "mode", "modality", "fusion", "rerank", "mmr", "transform", "filter",
            "minScore", "recency", "unit", "level", "tokenBudget", "session", "cursor", "includeText",
            "includeVector", "fields", "seed", "indexVersion", "strict", "timeoutMs"}


def _wrong(schema: dict):
    """A value the property's schema refuses."""
    if "enum" in schema:
        return "no-such-value"
    return {"string": 3, "integer": "x", "number": "x", "boolean": "yes", "object": "x", "array": "x"}.get(
        schema.get("type"), {"bad": 1})


def test_the_schema_names_seed_002s_params_and_the_checker_reads_the_same_names():
    assert set(PARAMS_SCHEMA["properties"]) == SEED_002
    assert PARAMS_SCHEMA["required"] == ["query"]
    assert KNOWN == SEED_002 | {"_meta"}
    assert load_request({"query": "x", "sizeHint": 3}).unknown == ["sizeHint"]


@pytest.mark.parametrize("name", sorted(SEED_002))
def test_a_value_the_schema_refuses_is_refused_by_the_engine_naming_the_param(engine, name):
    schema = PARAMS_SCHEMA["properties"][name]
    params = {"query": _wrong(schema)} if name == "query" else {"query": "x", name: _wrong(schema)}
    with pytest.raises(InvalidRequestParams, match=rf"^{name}\b"):
        engine.retrieve(params)


def test_the_schema_enums_are_the_checkers_vocabularies():
    props = PARAMS_SCHEMA["properties"]
    for name in ("mode", "modality", "unit"):
        for value in props[name]["enum"]:
            assert getattr(load_request({"query": "x", name: value}), name) == value
    for field in props["fields"]["items"]["enum"]:
        assert field in load_request({"query": "x", "fields": [field]}).fields
    assert props["k"]["minimum"] == 1
    with pytest.raises(InvalidRequestParams, match="k must be >= 1"):
        load_request({"query": "x", "k": 0})
