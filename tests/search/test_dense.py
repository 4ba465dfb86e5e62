"""DenseIndex: row updates instead of rebuilds, snapshot views, exact top-k with ties by key."""
from __future__ import annotations

import math
import random

from hypothesis import given, settings
from hypothesis import strategies as st

from ladr_lab.search import DenseIndex


def unit(v):
    n = math.sqrt(sum(x * x for x in v))
    return [x / n for x in v] if n else v


def test_upsert_delete_and_views_are_snapshots():
    idx = DenseIndex()
    idx.upsert("a", unit([1, 0, 0]))
    idx.upsert("b", unit([0, 1, 0]))
    before = idx.view()
    idx.upsert("a", unit([0, 0, 1]))
    idx.delete("b")
    idx.upsert("c", unit([1, 1, 0]))
    after = idx.view()
    assert before.search([1, 0, 0], 5) == [("a", 1.0)]
    assert [k for k, _ in before.search([0, 1, 0], 5)] == ["b"]
    assert [k for k, _ in after.search([1, 0, 0], 5)] == ["c"]
    assert after.search([0, 0, 1], 5) == [("a", 1.0)]
    assert "b" not in after and "b" in before
    assert before.vector("a") == [1.0, 0.0, 0.0]


def test_wrong_length_vectors_are_not_indexed():
    idx = DenseIndex(dim=3)
    assert idx.upsert("a", [1.0, 0.0, 0.0])
    assert not idx.upsert("b", [1.0, 0.0])
    assert "b" not in idx.view()
    assert idx.view().search([1.0, 0.0], 3) == []


def test_ties_by_key_and_allowed_keys_and_negative_scores():
    idx = DenseIndex()
    for key in ("z", "m", "a"):
        idx.upsert(key, [1.0, 0.0])
    idx.upsert("neg", [-1.0, 0.0])
    v = idx.view()
    assert [k for k, _ in v.search([1.0, 0.0], 2)] == ["a", "m"]
    assert [k for k, _ in v.search([1.0, 0.0], 5, allowed={"z", "neg"})] == ["z"]
    assert [k for k, _ in v.search([1.0, 0.0], 5, positive_only=False)][-1] == "neg"
    assert v.dot([1.0, 0.0], ["neg", "missing", "a"]) == {"neg": -1.0, "a": 1.0}


def test_compaction_keeps_answers():
    rng = random.Random(3)
    idx = DenseIndex()
    vecs = {}
    for i in range(3000):
        key = f"k{i % 300}"
        vecs[key] = unit([rng.uniform(-1, 1) for _ in range(8)])
        idx.upsert(key, vecs[key])
    q = unit([rng.uniform(-1, 1) for _ in range(8)])
    got = idx.view().search(q, 10, positive_only=False)  # 2,700 dead rows: compacted inside view()
    want = sorted(((sum(a * b for a, b in zip(q, v, strict=True)), k) for k, v in vecs.items()),
                  key=lambda t: (-t[0], t[1]))[:10]
    assert [k for k, _ in got] == [k for _, k in want]
    assert all(abs(s - w) < 1e-9 for (_, s), (w, _) in zip(got, want, strict=True))
    assert len(idx) == 300


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from("abcdefgh"), st.lists(st.integers(-3, 3), min_size=4, max_size=4)),
                max_size=25),
       st.lists(st.integers(-3, 3), min_size=4, max_size=4), st.integers(0, 10))
def test_property_matches_a_brute_force_scan(ops, query, k):
    idx = DenseIndex(dim=4)
    live = {}
    for key, vec in ops:
        v = unit([float(x) for x in vec])
        if any(v):
            idx.upsert(key, v)
            live[key] = v
        else:
            idx.delete(key)
            live.pop(key, None)
    q = unit([float(x) for x in query])
    want = sorted(((s, key) for key, v in live.items() if (s := sum(a * b for a, b in zip(q, v, strict=True))) > 1e-12),
                  key=lambda t: (-t[0], t[1]))[:k]
    got = idx.view().search(q, k)
    assert [key for key, _ in got] == [key for _, key in want]
