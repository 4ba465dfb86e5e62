"""The plain sparse request's lean path (plain.py): decided from the params alone, and its answer is byte for byte
the general pipeline's (latency and the cursor token aside), over folders that change between requests."""
from __future__ import annotations

import json
import os
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ladr_lab.search import EmbeddedEngine
from ladr_lab.search.plain import plain_answer
from ladr_lab.server import Dispatcher
from ladr_lab.slate import SlateStore

WORDS = ["alpha", "beta", "gamma", "delta", "omega", "kernel", "tensor", "ladder", "café"]


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """A slate of 40 short files drawn from 9 words (ties are common) and a dispatcher over it, sparse only."""
    root = tmp_path_factory.mktemp("plain") / "S"
    folder = root / "docs"
    folder.mkdir(parents=True)
    for i in range(40):
        words = [WORDS[(i * j + i // 5) % len(WORDS)] for j in range(1, 2 + i % 4)]
        (folder / f"d{i:02d}.md").write_text(" ".join(words), encoding="utf-8")
    (folder / ".metatags.json").write_text(json.dumps({"d01.md": {"year": 2001}}), encoding="utf-8")
    store = SlateStore()
    store.bind("S", root)
    engine = EmbeddedEngine.from_store(store, dense=False, chunks=False)
    return folder, Dispatcher(engine)


_VOLATILE = re.compile(r'"latencyMs":[0-9.e+-]+|"nextCursor":"[0-9a-f]+"')


def _both(d, msg):
    """The answer of the lean path and of the general path (forced by the engine's switch) to one message."""
    text = json.dumps(msg, ensure_ascii=False)
    lean = d.handle_text(text)
    d.engine.lean = False
    try:
        general = d.handle_text(text)
    finally:
        d.engine.lean = True
    return lean, general


def _change(folder, step: int) -> None:
    """One change to the folder between requests: a new file, a rewrite, an append, a deletion, a metatag edit."""
    kind = step % 5
    path = folder / f"n{step % 7}.md"
    if kind == 0:
        path.write_text(" ".join(WORDS[step % 9: step % 9 + 2]), encoding="utf-8")
    elif kind == 1 and path.exists():
        with path.open("a", encoding="utf-8") as f:
            f.write(" omega")
    elif kind == 2:
        (folder / "d03.md").write_text(WORDS[step % 9] + " kernel", encoding="utf-8")
    elif kind == 3 and path.exists():
        os.remove(path)
    else:
        tags = {"d01.md": {"year": 2000 + step}, "d02.md": {"label": f"v{step}"}}
        (folder / ".metatags.json").write_text(json.dumps(tags), encoding="utf-8")


params = st.fixed_dictionaries(
    {"query": st.lists(st.sampled_from(WORDS + ["nothing"]), min_size=0, max_size=3).map(" ".join)},
    optional={"k": st.integers(1, 120), "mode": st.just("sparse"), "includeText": st.booleans(),
              "fields": st.lists(st.sampled_from(["score", "confidence", "scores", "text", "meta", "trust", "id"]),
                                 max_size=4)})


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(p=params, rid=st.one_of(st.integers(-5, 10**12), st.text(max_size=5)), change=st.integers(0, 60))
def test_property_the_lean_path_answers_byte_for_byte_as_the_general_path(world, p, rid, change):
    folder, d = world
    if change % 3 == 0:
        _change(folder, change)
    assert plain_answer(d.engine, p) is not None   # the lean path takes every such request
    lean, general = _both(d, {"jsonrpc": "2.0", "id": rid, "method": "retrieve", "params": p})
    assert _VOLATILE.sub("", lean) == _VOLATILE.sub("", general)
    res = json.loads(lean)["result"]
    assert ("nextCursor" in res) == ('"nextCursor"' in general)
    if "nextCursor" in res:   # a lean cursor is a real one: the next page is the general path's next page
        nxt = {"query": p["query"], "cursor": res["nextCursor"]}
        mine = d.handle_text(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "retrieve", "params": nxt}))
        theirs = d.handle_text(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "retrieve",
                                           "params": {**nxt, "cursor": json.loads(general)["result"]["nextCursor"]}}))
        assert _VOLATILE.sub("", mine) == _VOLATILE.sub("", theirs)
        assert json.loads(mine)["result"]["indexVersion"] == res["indexVersion"]   # pinned to its snapshot


@pytest.mark.parametrize("p", [
    {"query": "alpha", "k": 0}, {"query": "alpha", "k": 2.0}, {"query": "alpha", "k": True},
    {"query": "alpha", "mode": "dense"}, {"query": "alpha", "includeText": 1}, {"query": "alpha", "fields": ["nope"]},
    {"query": "alpha", "filter": {"field": "year", "op": "eq", "value": 1}}, {"query": "alpha", "recency": {"field": "modified", "halfLifeDays": 3}},
    {"query": "alpha", "cursor": "x"}, {"query": [{"type": "text", "text": "alpha"}]}, {"query": "alpha", "k": 10**6},
    {"query": "alpha", "minScore": 0.5}, {"query": "alpha", "_meta": {"progressToken": 1}},
])
def test_anything_but_a_plain_request_goes_the_general_way(world, p):
    _, d = world
    assert plain_answer(d.engine, p) is None
    lean, general = _both(d, {"jsonrpc": "2.0", "id": 7, "method": "retrieve", "params": p})
    assert _VOLATILE.sub("", lean) == _VOLATILE.sub("", general)


@pytest.mark.parametrize("msg", [
    {"jsonrpc": "2.0", "id": True, "method": "retrieve", "params": {"query": "alpha"}},
    {"jsonrpc": "2.0", "id": 1.5, "method": "retrieve", "params": {"query": "alpha"}},
    {"jsonrpc": "1.0", "id": 1, "method": "retrieve", "params": {"query": "alpha"}},
    {"jsonrpc": "2.0", "method": "retrieve", "params": {"query": "alpha"}},
    {"jsonrpc": "2.0", "id": 1, "method": "retrieve", "params": {"query": "alpha"}, "extra": 1},
    {"jsonrpc": "2.0", "id": "\ud800", "method": "retrieve", "params": {"query": "alpha"}},
])
def test_an_envelope_the_lean_path_does_not_know_is_answered_as_before(world, msg):
    _, d = world
    lean, general = _both(d, msg)
    assert (lean is None and general is None) or _VOLATILE.sub("", lean) == _VOLATILE.sub("", general)


def test_a_snapshot_keeps_the_tails_it_wrote_and_a_new_snapshot_starts_afresh(tmp_path):
    folder = tmp_path / "S" / "docs"
    folder.mkdir(parents=True)
    for i in range(1, 9):   # distinct scores: the bulk path (no ties) writes every page
        (folder / f"k{i}.md").write_text(" ".join(["kernel"] * i + ["filler"] * (9 - i)), encoding="utf-8")
    store = SlateStore()
    store.bind("S", tmp_path / "S")
    d = Dispatcher(EmbeddedEngine.from_store(store, dense=False, chunks=False))
    msg = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "retrieve",
                      "params": {"query": "kernel", "k": 3, "includeText": False}})
    first = json.loads(d.handle_text(msg))["result"]
    snap = d.engine.corpus.sync()
    assert len(snap.tails[False]) == 3
    (folder / ".metatags.json").write_text(json.dumps({"k8.md": {"label": "new"}}), encoding="utf-8")
    again = json.loads(d.handle_text(msg))["result"]
    assert again["indexVersion"] != first["indexVersion"] and d.engine.corpus.sync() is not snap
    assert again["hits"][0]["meta"]["label"] == "new" and "label" not in first["hits"][0]["meta"]
