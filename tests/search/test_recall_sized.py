"""Recall sized by need (pipeline.py): a request no later stage needs more than k for recalls k + 1 and a
cursor recalls further as it pages; the answers are exactly those of the full candidateK recall."""
from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ladr_lab.search import EmbeddedEngine
from ladr_lab.search.sparse import SparseIndex
from ladr_lab.slate import SlateStore

WORDS = ["alpha", "beta", "gamma", "delta", "omega", "kernel", "tensor", "ladder"]


@pytest.fixture(scope="module")
def engines(tmp_path_factory):
    """Two engines over one slate of 60 short files drawn from 8 words (so BM25 ties are common): sized
    recall on, and off (the full candidateK recall every time)."""
    root = tmp_path_factory.mktemp("sized") / "S"
    folder = root / "docs"
    folder.mkdir(parents=True)
    tags = {}
    for i in range(60):
        words = [WORDS[(i * j + i // 7) % len(WORDS)] for j in range(1, 2 + i % 4)]
        (folder / f"d{i:02d}.md").write_text(" ".join(words), encoding="utf-8")
        tags[f"d{i:02d}.md"] = {"year": 2000 + i % 5}
    (folder / ".metatags.json").write_text(json.dumps(tags), encoding="utf-8")
    out = []
    for sized in (True, False):
        store = SlateStore()
        store.bind("S", root)
        out.append(EmbeddedEngine.from_store(store, dense=False, chunks=False, sized_recall=sized))
    return out


def _pages(engine, params, as_json):
    """Every page of a request, following its cursors: (hits, whether a cursor came, usage) each."""
    call = (lambda p: json.loads(engine.retrieve_json(p))) if as_json else engine.retrieve
    res = call(params)
    pages = []
    while True:
        pages.append((res["hits"], "nextCursor" in res, res["usage"]))
        if "nextCursor" not in res or len(pages) > 80:
            return pages
        res = call({"query": params["query"], "cursor": res["nextCursor"]})


requests = st.fixed_dictionaries(
    {"query": st.lists(st.sampled_from(WORDS), min_size=1, max_size=3).map(" ".join),
     "k": st.integers(1, 12), "mode": st.just("sparse")},
    optional={"candidateK": st.integers(1, 70), "minScore": st.floats(0.0, 3.0),
              "tokenBudget": st.integers(1, 30), "includeText": st.booleans(),
              "fields": st.lists(st.sampled_from(["score", "confidence", "scores", "text", "meta"]), max_size=3),
              "filter": st.builds(lambda y: {"field": "year", "op": "gte", "value": y}, st.integers(2000, 2004))})


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(params=requests, as_json=st.booleans())
def test_property_sized_recall_answers_exactly_as_the_full_recall(engines, params, as_json):
    sized, full = (_pages(e, params, as_json) for e in engines)
    assert [(h, c) for h, c, _ in sized] == [(h, c) for h, c, _ in full]
    for (_, _, us), (_, _, uf) in zip(sized, full, strict=True):
        assert {k: v for k, v in us.items() if k not in ("latencyMs", "candidates")} == \
            {k: v for k, v in uf.items() if k not in ("latencyMs", "candidates")}
        # the funnel: what recall carried is never more than candidateK, nor than the full recall carried
        assert us["candidates"] <= uf["candidates"] <= us["effective"].get("candidateK", 10**9)


def test_a_plain_request_recalls_k_plus_one_and_the_cursor_recalls_further(engines):
    sized, full = engines
    params = {"query": "alpha beta", "k": 5, "mode": "sparse"}
    a, b = sized.retrieve(params), full.retrieve(params)
    assert a["hits"] == b["hits"] and a["usage"]["candidates"] == 6 and b["usage"]["candidates"] > 6
    assert a["usage"]["effective"] == b["usage"]["effective"] == {"k": 5, "candidateK": 100}
    nxt = sized.retrieve({"query": "alpha beta", "cursor": a["nextCursor"]})
    assert nxt["hits"] == full.retrieve({"query": "alpha beta", "cursor": b["nextCursor"]})["hits"]
    assert nxt["usage"]["candidates"] == 11


@pytest.mark.parametrize("params", [
    {"k": 5, "mode": "sparse", "session": "s1"},                                  # dedup drops from inside
    {"k": 5, "mode": "sparse", "recency": {"field": "modified", "halfLifeDays": 30}},  # reorders
])
def test_a_stage_that_needs_more_than_k_gets_the_full_recall(engines, params):
    res = engines[0].retrieve({"query": "alpha beta gamma", **params})
    assert res["usage"]["candidates"] > 6


def test_the_sparse_index_breaks_ties_across_the_cut_by_key():
    idx = SparseIndex()
    for key in ("z", "m", "a", "q", "b"):   # the same text: one score for all, tantivy orders them its own way
        idx.upsert(key, "same words here")
    idx.commit()
    view = idx.view()
    for limit in range(1, 6):
        assert [k for k, _ in view.search("words", limit)] == ["a", "b", "m", "q", "z"][:limit]
