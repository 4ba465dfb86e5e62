"""EmbeddedEngine.retrieve: every parameter of seed 002, the funnel, strict, snapshots, cursors, sessions."""
from __future__ import annotations

import json
import os
import time

import pytest

import ladr_lab.models
from ladr_lab.models import ScriptedModel
from ladr_lab.search import EmbeddedEngine, InvalidRequestParams, OptionUnsupported, SnapshotGone
from ladr_lab.slate import SlateStore


def ids(result):
    return [h["id"] for h in result["hits"]]


def P(name):
    return f"Papers:papers/{name}"


def test_modes_find_the_obvious_document(engine):
    for mode in ("sparse", "dense", "hybrid"):
        res = engine.retrieve({"query": "transformer attention complexity", "k": 2, "mode": mode})
        assert ids(res)[0] == P("attention.md"), mode
        assert res["usage"]["mode"] == mode
        assert len(res["hits"]) <= 2


def test_hit_shape(engine):
    res = engine.retrieve({"query": "residual networks image recognition", "k": 1, "mode": "hybrid"})
    hit = res["hits"][0]
    assert hit["id"] == P("resnet.md")
    assert set(hit) >= {"id", "score", "confidence", "text", "modality", "unit", "level", "meta", "scores",
                        "citation", "trust"}
    assert "vector" not in hit
    assert hit["unit"] == "document" and hit["level"] == 0 and hit["modality"] == "text"
    assert hit["meta"]["year"] == 2015 and hit["meta"]["folder"] == "papers" and hit["meta"]["path"] == "resnet.md"
    assert hit["citation"] == {"source": "Papers", "uri": "slate:Papers/papers/resnet.md",
                               "title": "Deep Residual Learning", "path": "papers/resnet.md"}
    assert set(hit["scores"]) >= {"sparse", "dense", "fused"}
    assert 0.0 <= hit["confidence"] <= 1.0
    assert hit["trust"] == {"level": "trusted", "score": 1.0, "injectionSuspected": False, "sanitized": False}
    assert hit["text"].startswith("# Deep Residual Learning")
    assert res["indexVersion"] and res["usage"]["candidates"] >= 1 and res["usage"]["latencyMs"] >= 0
    json.dumps(res)  # plain JSON


def test_include_text_and_vector(engine):
    res = engine.retrieve({"query": "memory gates", "k": 1, "includeText": False, "includeVector": True})
    hit = res["hits"][0]
    assert "text" not in hit
    assert len(hit["vector"]) == 384 and abs(sum(x * x for x in hit["vector"]) - 1) < 1e-9


def test_injection_is_flagged(engine):
    res = engine.retrieve({"query": "previous instructions system prompt", "k": 1, "mode": "sparse"})
    assert ids(res) == [P("inject.md")]
    assert res["hits"][0]["trust"]["injectionSuspected"] is True
    assert res["hits"][0]["trust"]["level"] == "untrusted"


def test_filters_run_before_ranking(engine):
    res = engine.retrieve({"query": "transformer attention", "k": 10, "mode": "hybrid",
                           "filter": {"and": [{"field": "lang", "op": "eq", "value": "en"},
                                              {"field": "year", "op": "gte", "value": 2017}]}})
    assert ids(res) and all(h["meta"]["lang"] == "en" and h["meta"]["year"] >= 2017 for h in res["hits"])
    res = engine.retrieve({"query": "attention", "mode": "dense", "filter": {"field": "lang", "op": "eq", "value": "fr"}})
    assert ids(res) == [P("fr/transformeur.md")]
    with pytest.raises(InvalidRequestParams, match='"colour" is not a filter field'):
        engine.retrieve({"query": "x", "filter": {"field": "colour", "op": "eq", "value": "red"}})


def test_min_score_and_recency(engine, store, papers_root):
    base = engine.retrieve({"query": "transformer", "k": 10, "mode": "sparse"})
    cut = base["hits"][1]["score"]
    res = engine.retrieve({"query": "transformer", "k": 10, "mode": "sparse", "minScore": cut})
    assert all(h["score"] >= cut for h in res["hits"]) and len(res["hits"]) == 2
    # recency on a numeric year field is not a date: use file times instead
    old = papers_root / "papers" / "bert.md"
    t = time.time() - 400 * 86400
    os.utime(old, (t, t))
    store.slate("Papers").refresh()  # an edit that moves no directory's time is seen after refresh()
    res = engine.retrieve({"query": "transformer language", "k": 10, "mode": "sparse",
                           "recency": {"field": "modified", "halfLifeDays": 30}})
    bert = next(h for h in res["hits"] if h["id"] == P("bert.md"))
    assert bert["scores"]["recency"] < 1e-3
    assert bert["score"] == pytest.approx(bert["scores"]["sparse"] * bert["scores"]["recency"])
    assert ids(res)[-1] == P("bert.md")


def test_units_chunk(engine):
    res = engine.retrieve({"query": "quadratic sequence length", "k": 2, "unit": "chunk", "mode": "sparse"})
    hit = res["hits"][0]
    assert hit["unit"] == "chunk" and hit["id"].startswith(P("attention.md") + "#")
    assert hit["chunk"]["docId"] == P("attention.md") and hit["chunk"]["context"] == "Attention Is All You Need"
    assert "quadratic" in hit["text"]


def test_token_budget_packs_hits(engine):
    res = engine.retrieve({"query": "transformer networks", "tokenBudget": 40, "mode": "sparse"})
    assert 1 <= len(res["hits"]) < 6
    assert res["usage"]["tokens"] <= 40 or len(res["hits"]) == 1
    res = engine.retrieve({"query": "transformer networks", "tokenBudget": 1, "mode": "sparse"})
    assert len(res["hits"]) == 1 and "tokenBudget" in res["usage"]["notes"][0]


def test_funnel_is_clamped_and_reported():
    store = SlateStore()
    from pathlib import Path
    store.bind("K", Path(__file__).resolve().parents[2] / "sample_slates" / "knowledge")
    eng = EmbeddedEngine.from_store(store, max_k=20)
    res = eng.retrieve({"query": "retrieve rounds", "k": 50, "candidateK": 5})
    assert len(res["hits"]) <= 20
    assert res["usage"]["effective"] == {"k": 20, "candidateK": 20}
    assert any("maxK" in n for n in res["usage"]["notes"]) and any("candidateK raised" in n for n in res["usage"]["notes"])


class FakeReranker:
    method = "cross-encoder"
    model = "fake"

    def score(self, query, passages):
        return [float(len(p)) for p in passages]  # longest first: easy to check


def test_rerank_funnel_and_confidence(store):
    eng = EmbeddedEngine.from_store(store, reranker=FakeReranker(), rerank_max=3)
    res = eng.retrieve({"query": "transformer networks memory", "k": 5, "mode": "sparse",
                        "rerank": {"method": "cross-encoder", "topN": 10}})
    assert res["usage"]["effective"]["topN"] == 3 and len(res["hits"]) == 3 and res["usage"]["reranked"] == 3
    lens = [len(h["text"]) for h in res["hits"]]
    assert lens == sorted(lens, reverse=True)
    assert all(h["scores"]["rerank"] == h["score"] and h["confidence"] == pytest.approx(1.0) for h in res["hits"])
    with pytest.raises(OptionUnsupported):
        eng.retrieve({"query": "x", "rerank": {"method": "cross-encoder", "model": "other"}})
    assert eng.capabilities()["retrieve"]["rerankBuiltin"] is True


def test_strict_and_degrading(engine):
    asks = [{"rerank": {"method": "cross-encoder"}}, {"transform": "hyde"}, {"unit": "community"},
            {"modality": "image"}, {"level": 2}, {"frobnicate": 1},
            {"query": [{"type": "image", "uri": "x.png"}, {"type": "text", "text": "attention"}]}]
    for extra in asks:
        params = {"query": "attention", **extra}
        with pytest.raises(OptionUnsupported):
            engine.retrieve(params)
        res = engine.retrieve({**params, "strict": False})
        assert res["usage"]["notes"], extra
    assert engine.retrieve({"query": "attention", "rerank": False})["hits"]


def test_sparse_only_engine(store):
    eng = EmbeddedEngine.from_store(store, dense=False, chunks=False)
    assert eng.capabilities()["retrieve"]["modes"] == ["sparse"]
    with pytest.raises(OptionUnsupported):
        eng.retrieve({"query": "attention", "mode": "dense"})
    assert eng.retrieve({"query": "attention", "mode": "dense", "strict": False})["usage"]["mode"] == "sparse"
    with pytest.raises(OptionUnsupported):
        eng.retrieve({"query": "attention", "unit": "chunk"})


def test_transforms_through_a_configured_model(store):
    model = ScriptedModel({"transform:rewrite": ["residual deep networks"],
                           "transform:multi-query": ["long memory recurrent\nimage recognition"]})
    eng = EmbeddedEngine.from_store(store, transform_model=model)
    res = eng.retrieve({"query": "that resnet thing", "transform": "rewrite", "k": 1, "mode": "sparse"})
    assert res["rewrittenQuery"] == "residual deep networks" and ids(res) == [P("resnet.md")]
    res = eng.retrieve({"query": "q", "transform": "multi-query", "k": 2, "mode": "sparse"})
    assert set(ids(res)) == {P("lstm.md"), P("resnet.md")}
    assert model.calls[0]["messages"][1]["content"] == "that resnet thing"
    assert eng.capabilities()["transform"] == ["rewrite", "hyde", "multi-query", "decompose"]
    # seed 002: a server that cannot fix a stochastic step SHOULD note it and not advertise determinism
    assert eng.capabilities()["retrieve"]["deterministic"] is False
    assert any("may answer differently each time" in n for n in res["usage"]["notes"])
    plain = eng.retrieve({"query": "resnet", "k": 1, "mode": "sparse"})
    assert not any("differently" in n for n in plain["usage"].get("notes", []))
    offline = EmbeddedEngine.from_store(store, transform_model=ladr_lab.models.OfflineModel())
    assert offline.capabilities()["retrieve"]["deterministic"] is True


def test_mmr_diversifies(tmp_path):
    root = tmp_path / "S"
    (root / "d").mkdir(parents=True)
    (root / "d" / "a1.md").write_text("solar panels solar energy solar power")
    (root / "d" / "a2.md").write_text("solar panels solar energy solar power plants")
    (root / "d" / "b.md").write_text("wind energy turbines")
    store = SlateStore()
    store.bind("S", root)
    eng = EmbeddedEngine.from_store(store)
    plain = ids(eng.retrieve({"query": "solar energy", "k": 3, "mode": "dense"}))
    diverse = ids(eng.retrieve({"query": "solar energy", "k": 3, "mode": "dense", "mmr": {"lambda": 0.3}}))
    assert plain[2] == "S:d/b.md" and diverse[1] == "S:d/b.md"
    assert ids(eng.retrieve({"query": "solar energy", "k": 3, "mode": "dense", "mmr": {"lambda": 1.0}})) == plain


def test_fusion_options(engine):
    a = engine.retrieve({"query": "transformer", "k": 5, "mode": "hybrid",
                         "fusion": {"method": "weighted", "weights": {"dense": 0, "sparse": 1}}})
    b = engine.retrieve({"query": "transformer", "k": 5, "mode": "sparse"})
    assert [h["id"] for h in a["hits"] if h["scores"]["fused"] > 0] == ids(b)
    c = engine.retrieve({"query": "transformer", "k": 5, "mode": "hybrid", "fusion": {"method": "rrf", "rrfK": 1}})
    assert c["hits"][0]["scores"]["fused"] > 0.5
    with pytest.raises(InvalidRequestParams):
        engine.retrieve({"query": "x", "fusion": {"method": "borda"}})
    # weights are relative: scaled to sum to 1, so huge weights give the same finite scores as small ones
    huge = engine.retrieve({"query": "transformer", "k": 5, "mode": "hybrid",
                            "fusion": {"method": "weighted", "weights": {"dense": 1e308, "sparse": 1e308}}})
    small = engine.retrieve({"query": "transformer", "k": 5, "mode": "hybrid",
                             "fusion": {"method": "weighted", "weights": [1, 1]}})
    assert [(h["id"], h["score"]) for h in huge["hits"]] == [(h["id"], h["score"]) for h in small["hits"]]
    assert all(0 <= h["score"] <= 1 for h in huge["hits"]) and huge["hits"]
    with pytest.raises(InvalidRequestParams):
        engine.retrieve({"query": "x", "fusion": {"method": "weighted", "weights": {"dense": float("inf")}}})


def test_seed_determinism_across_engines(store):
    params = {"query": "transformer networks", "k": 4, "mode": "hybrid", "mmr": {"lambda": 0.5}, "seed": 7}
    a = EmbeddedEngine.from_store(store).retrieve(params)
    b = EmbeddedEngine.from_store(store).retrieve(params)
    strip = lambda r: [(h["id"], h["score"], h["confidence"]) for h in r["hits"]]  # noqa: E731
    assert strip(a) == strip(b)


def test_confidence_does_not_depend_on_the_other_hits(engine):
    a = engine.retrieve({"query": "transformer attention", "k": 5, "mode": "hybrid"})
    b = engine.retrieve({"query": "transformer attention", "k": 1, "mode": "hybrid",
                         "filter": {"field": "year", "op": "eq", "value": 2017}})
    conf = {h["id"]: h["confidence"] for h in a["hits"]}
    assert b["hits"][0]["confidence"] == conf[b["hits"][0]["id"]]


def test_index_versions_pin_snapshots(engine, papers_root):
    first = engine.retrieve({"query": "zeppelin airship", "mode": "sparse"})
    assert first["hits"] == []
    v1 = first["indexVersion"]
    (papers_root / "papers" / "zeppelin.md").write_text("The zeppelin is a rigid airship.")
    now = engine.retrieve({"query": "zeppelin airship", "mode": "sparse"})
    assert ids(now) == [P("zeppelin.md")] and now["indexVersion"] != v1
    pinned = engine.retrieve({"query": "zeppelin airship", "mode": "sparse", "indexVersion": v1})
    assert pinned["hits"] == [] and pinned["indexVersion"] == v1
    with pytest.raises(SnapshotGone):
        engine.retrieve({"query": "x", "indexVersion": "no-such-version"})


def test_old_snapshots_are_collected(store, papers_root):
    eng = EmbeddedEngine.from_store(store, keep_snapshots=2)
    v = [eng.retrieve({"query": "x"})["indexVersion"]]
    for i in range(3):
        (papers_root / "papers" / f"new{i}.md").write_text(f"new file {i}")
        v.append(eng.retrieve({"query": "x"})["indexVersion"])
    assert len(set(v)) == 4
    eng.retrieve({"query": "x", "indexVersion": v[-1]})
    with pytest.raises(SnapshotGone):
        eng.retrieve({"query": "x", "indexVersion": v[0]})


def test_writes_through_the_store_are_searchable_at_once(engine, store):
    engine.retrieve({"query": "warm"})
    store.slate("Papers").folder("papers").write_text("notes/new.md", "quantum entanglement experiment")
    for mode in ("sparse", "dense", "hybrid"):
        assert ids(engine.retrieve({"query": "quantum entanglement", "k": 1, "mode": mode})) == [P("notes/new.md")]
    store.slate("Papers").folder("papers").set_metatag("notes/new.md", "year", 2030)
    res = engine.retrieve({"query": "quantum", "k": 1, "filter": {"field": "year", "op": "eq", "value": 2030}})
    assert ids(res) == [P("notes/new.md")]


def test_cursor_pages_through_the_ranked_list(engine):
    full = ids(engine.retrieve({"query": "networks transformer memory attention", "k": 6, "mode": "hybrid"}))
    seen, cursor = [], None
    first = engine.retrieve({"query": "networks transformer memory attention", "k": 2, "mode": "hybrid"})
    seen += ids(first)
    cursor = first.get("nextCursor")
    while cursor:
        page = engine.retrieve({"query": "ignored", "cursor": cursor})
        assert len(page["hits"]) <= 2
        seen += ids(page)
        cursor = page.get("nextCursor")
    assert seen[:6] == full and len(seen) == len(set(seen))
    with pytest.raises(InvalidRequestParams, match="cursor"):
        engine.retrieve({"query": "x", "cursor": "bogus"})


def test_session_dedups_hits_already_seen(engine):
    q = "networks transformer memory attention image"
    a = ids(engine.retrieve({"query": q, "k": 2, "session": "s1", "mode": "sparse"}))
    b = ids(engine.retrieve({"query": q, "k": 2, "session": "s1", "mode": "sparse"}))
    c = ids(engine.retrieve({"query": q, "k": 2, "session": "other", "mode": "sparse"}))
    assert a and b and not set(a) & set(b)
    assert c == a


def test_progress_reports_partial_hits(engine):
    events = []
    res = engine.retrieve({"query": "transformer", "k": 2}, lambda *a: events.append(a))
    assert [e[0] for e in events] == [1, 3] and all(e[1] == 3 for e in events)
    assert [h["id"] for h in events[0][3]] == ids(res)


@pytest.mark.parametrize("params,message", [
    ({}, "query is required"), ({"query": 3}, "query must be"), ({"query": "x", "k": 0}, "k must be >= 1"),
    ({"query": "x", "k": "5"}, "k must be an integer"), ({"query": "x", "mode": "fuzzy"}, "mode must be one of"),
    ({"query": "x", "mmr": {"lambda": 2}}, "between 0 and 1"), ({"query": "x", "recency": {"field": "m"}}, "halfLifeDays"),
    ({"query": "x", "minScore": "high"}, "minScore"), ({"query": "x", "strict": "yes"}, "strict"),
    ({"query": "x", "rerank": {"topN": 3}}, "rerank.method"), ({"query": "x", "seed": 1.5}, "seed"),
    ({"query": "x", "_meta": {"progressToken": [1]}}, "progressToken"),
])
def test_bad_params_name_the_problem(engine, params, message):
    with pytest.raises(InvalidRequestParams, match=message):
        engine.retrieve(params)


def test_default_mode_is_sparse_with_the_hashing_embedder(engine):
    assert engine.capabilities()["retrieve"]["defaultMode"] == "sparse"
    assert engine.retrieve({"query": "transformer"})["usage"]["mode"] == "sparse"


def test_capabilities_name_the_seed_fields(engine):
    caps = engine.capabilities()
    r = caps["retrieve"]
    for key in ("modes", "maxK", "rerankBuiltin", "confidence", "scoreScale", "deterministic", "snapshots",
                "units", "tokenBudget"):
        assert key in r
    assert caps["session"] and caps["pagination"] and caps["transform"] is False
    assert {"year", "lang", "tags", "size", "modified"} <= set(caps["filter"]["fields"])
    assert caps["filter"]["fields"]["year"] == "number"


def test_usage_candidates_counts_the_funnel_not_both_recall_lists(tmp_path):
    # 40 documents; the sparse and the dense lists of a hybrid recall differ, so their union is above
    # candidateK, but the funnel carries on at most candidateK distinct candidates (seed 002's invariant).
    words = ["attention", "transformer", "residual", "network", "memory", "gate", "image", "language",
             "sequence", "training", "deep", "model"]
    files = {f"d{i:02d}.md": (" ".join(words[(i * j) % len(words)] for j in range(1, 8)) + f" doc{i}", {})
             for i in range(40)}
    store = SlateStore()
    folder = tmp_path / "P" / "papers"
    folder.mkdir(parents=True)
    for rel, (text, _) in files.items():
        (folder / rel).write_text(text, encoding="utf-8")
    store.bind("Papers", tmp_path / "P")
    engine = EmbeddedEngine.from_store(store, chunks=False)
    for mode in ("sparse", "dense", "hybrid"):
        res = engine.retrieve({"query": "attention network memory image", "k": 5, "candidateK": 10, "mode": mode})
        used = res["usage"]
        assert used["effective"]["candidateK"] == 10
        assert 5 <= used["candidates"] <= 10, (mode, used)
        assert len(res["hits"]) <= 5
    # the same request over all 40 with candidateK 40 recalls 40 distinct at most, whatever the lists hold
    res = engine.retrieve({"query": "attention network memory image", "k": 5, "candidateK": 40, "mode": "hybrid"})
    assert res["usage"]["candidates"] <= 40


# --- edits in place, made by another program: the very next request sees them -------------------------

def _hits(engine, query, **extra):
    return ids(engine.retrieve({"query": query, "k": 3, "mode": "sparse", **extra}))


def _settle(engine):
    for _ in range(3):   # past the first syncs (the vector cache fills on the first), so nothing else relists
        engine.retrieve({"query": "settle", "k": 1, "mode": "hybrid"})


def test_an_append_in_place_is_seen_by_the_next_request(engine, papers_root):
    assert _hits(engine, "zebraquux") == []
    _settle(engine)
    with open(papers_root / "papers" / "lstm.md", "a", encoding="utf-8") as fh:   # `>>`: no directory moves
        fh.write("\n\nzebraquux appended.")
    assert _hits(engine, "zebraquux") == [P("lstm.md")]


def test_an_overwrite_through_open_w_is_seen_by_the_next_request(engine, papers_root):
    assert _hits(engine, "residual")[0] == P("resnet.md")
    _settle(engine)
    with open(papers_root / "papers" / "resnet.md", "w", encoding="utf-8") as fh:  # truncate and write in place
        fh.write("# Renamed\n\nNothing about that any more: okapiword instead.")
    assert _hits(engine, "okapiword") == [P("resnet.md")]
    assert P("resnet.md") not in _hits(engine, "residual")


def test_a_same_size_rewrite_with_the_mtime_put_back_is_seen_by_the_next_request(engine, papers_root):
    path = papers_root / "papers" / "resnet.md"
    before = os.stat(path)
    text = path.read_text(encoding="utf-8")
    assert _hits(engine, "residual")[0] == P("resnet.md")
    new = text.replace("Residual", "Xylophon")
    assert len(new.encode()) == len(text.encode()) and new != text
    old_vector = engine.retrieve({"query": "residual connections", "k": 1, "mode": "dense",
                                  "includeVector": True})["hits"][0]["vector"]
    _settle(engine)
    with open(path, "r+", encoding="utf-8") as fh:
        fh.write(new)
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))   # same size, same mtime: only ctime moved
    after = os.stat(path)
    assert (after.st_size, after.st_mtime_ns) == (before.st_size, before.st_mtime_ns)
    assert _hits(engine, "xylophon") == [P("resnet.md")]
    dense = engine.retrieve({"query": "xylophon connections", "k": 1, "mode": "dense", "includeVector": True})
    assert ids(dense) == [P("resnet.md")] and dense["hits"][0]["text"] == new
    assert dense["hits"][0]["vector"] != old_vector   # the dense index holds the new text's vector, not the old


def test_a_hand_edit_of_the_metatags_file_is_seen_by_the_next_request(engine, papers_root):
    flt = {"field": "lang", "op": "eq", "value": "de"}
    assert _hits(engine, "residual networks", filter={"field": "lang", "op": "eq", "value": "en"})
    sidecar = papers_root / "papers" / ".metatags.json"
    tags = json.loads(sidecar.read_text(encoding="utf-8"))
    tags["resnet.md"]["lang"] = "de"
    _settle(engine)
    with open(sidecar, "w", encoding="utf-8") as fh:   # in place, as an editor without atomic saves does
        fh.write(json.dumps(tags))
    res = engine.retrieve({"query": "residual networks", "k": 3, "mode": "sparse", "filter": flt})
    assert ids(res) == [P("resnet.md")] and res["hits"][0]["meta"]["lang"] == "de"
