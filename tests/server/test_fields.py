"""`fields`: the hit fields a client asks for (an extension of seed 002's `retrieve`, advertised as
`capabilities.retrieve.fields`); without it every field comes, as a seed-conformant client expects."""
from __future__ import annotations

import json

import pytest

from ladr_lab.search.request import HIT_FIELDS
from ladr_lab.server.protocol import to_json


def call(d, method, params=None):
    msg = {"jsonrpc": "2.0", "id": 1, "method": method}
    if params is not None:
        msg["params"] = params
    return json.loads(d.handle_text(json.dumps(msg)))

ALL = {"id", "score", "confidence", "scores", "text", "modality", "unit", "level", "meta", "citation", "trust"}


def test_the_field_selection_is_advertised(dispatcher):
    caps = call(dispatcher, "initialize", {"protocolVersion": "2025-06-18"})["result"]["capabilities"]
    assert caps["retrieve"]["fields"] == list(HIT_FIELDS)
    assert set(HIT_FIELDS) >= ALL | {"vector", "chunk"}


def test_without_fields_every_field_comes(dispatcher):
    hits = call(dispatcher, "retrieve", {"query": "transformer", "k": 3})["result"]["hits"]
    assert hits and all(set(h) == ALL for h in hits)


@pytest.mark.parametrize("mode", ["sparse", "dense", "hybrid"])
@pytest.mark.parametrize("field", sorted(ALL | {"vector"}))
def test_each_field_alone_comes_with_the_id(dispatcher, field, mode):
    params = {"query": "transformer attention", "k": 3, "mode": mode, "includeVector": True, "fields": [field]}
    fast = call(dispatcher, "retrieve", params)["result"]
    plain = json.loads(to_json(dispatcher.engine.retrieve(params)))
    every = call(dispatcher, "retrieve", {**params, "fields": None})["result"]
    assert fast["hits"] and [set(h) for h in fast["hits"]] == [{"id", field}] * len(fast["hits"])
    # the same values as the whole hit, in the JSON path and the dict path alike
    assert fast["hits"] == plain["hits"] == [{"id": h["id"], field: h[field]} for h in every["hits"]]


def test_chunk_fields_and_an_empty_selection(dispatcher):
    res = call(dispatcher, "retrieve", {"query": "network", "unit": "chunk", "k": 2, "fields": ["chunk"]})["result"]
    assert res["hits"] and all(set(h) == {"id", "chunk"} and "docId" in h["chunk"] for h in res["hits"])
    res = call(dispatcher, "retrieve", {"query": "transformer", "k": 2, "fields": []})["result"]
    assert res["hits"] and all(set(h) == {"id"} for h in res["hits"])
    assert set(res) >= {"usage", "indexVersion"}   # only the hits are narrowed


def test_text_follows_include_text(dispatcher):
    res = call(dispatcher, "retrieve", {"query": "transformer", "k": 2, "includeText": False,
                                        "fields": ["text", "score"]})["result"]
    assert res["hits"] and all(set(h) == {"id", "score"} for h in res["hits"])


def test_a_cursor_page_keeps_the_selection(dispatcher):
    first = call(dispatcher, "retrieve", {"query": "transformer networks", "k": 1, "mode": "sparse",
                                          "fields": ["score"]})["result"]
    nxt = call(dispatcher, "retrieve", {"query": "transformer networks", "cursor": first["nextCursor"]})["result"]
    assert nxt["hits"] and set(nxt["hits"][0]) == {"id", "score"}


@pytest.mark.parametrize("fields,needle", [(["score", "nope"], "'nope'"), ("score", "array"), ([1], "array"),
                                           (["Score"], "'Score'")])
def test_an_unknown_field_is_invalid_params(dispatcher, fields, needle):
    err = call(dispatcher, "retrieve", {"query": "transformer", "fields": fields})["error"]
    assert err["code"] == -32602 and "fields" in err["message"] and needle in err["message"]
