"""SparseIndex: tantivy BM25, updated in place, snapshot views, no query syntax from user text."""
from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from ladr_lab.search import SparseIndex
from ladr_lab.search.sparse import query_words


def make(docs: dict) -> SparseIndex:
    idx = SparseIndex()
    for key, text in docs.items():
        idx.upsert(key, text)
    idx.commit()
    return idx


def test_bm25_ranks_term_matches_and_stems():
    idx = make({"a": "the cat sat on the mat", "b": "dogs are running in the park", "c": "a running dog"})
    got = idx.view().search("dog runs", 10)
    assert [k for k, _ in got][:2] == ["c", "b"]  # stemming: dog/dogs, runs/running; c is shorter
    assert all(s > 0 for _, s in got)
    assert idx.view().search("zebra", 10) == []


def test_updates_are_incremental_and_views_are_snapshots():
    idx = make({"a": "alpha beta", "b": "gamma delta"})
    old = idx.view()
    idx.upsert("a", "epsilon zeta")
    idx.delete("b")
    idx.upsert("c", "alpha again")
    idx.commit()
    new = idx.view()
    assert [k for k, _ in old.search("alpha", 5)] == ["a"]
    assert [k for k, _ in old.search("gamma", 5)] == ["b"]
    assert [k for k, _ in new.search("alpha", 5)] == ["c"]
    assert new.search("gamma", 5) == []
    assert [k for k, _ in new.search("zeta", 5)] == ["a"]
    assert len(idx) == 2


def test_allowed_keys_overfetch_until_enough():
    idx = make({f"d{i:03d}": "common word " + ("rare " if i % 50 == 0 else "") for i in range(300)})
    allowed = {"d007", "d250", "d299"}
    got = idx.view().search("common", 10, allowed)
    assert sorted(k for k, _ in got) == sorted(allowed)


def test_query_words_strip_syntax():
    assert query_words('title:"Foo" -bar +baz AND (qux)') == ["title", "foo", "bar", "baz", "and", "qux"]


@settings(max_examples=80, deadline=None)
@given(st.text(max_size=200))
def test_any_query_text_is_safe(text):
    idx = make({"a": "alpha beta gamma", "b": "delta AND OR NOT title"})
    got = idx.view().search(text, 5)
    assert all(k in ("a", "b") for k, _ in got)
