"""Fusion, MMR and recency: exact arithmetic and deterministic ties."""
from __future__ import annotations

import numpy as np
import pytest

from ladr_lab.search import fusion


def test_rrf_sums_reciprocal_ranks():
    got = dict(fusion.rrf({"sparse": [("a", 9.0), ("b", 5.0)], "dense": [("b", 0.9), ("c", 0.5)]}, k=60))
    assert got["b"] == pytest.approx(1 / 62 + 1 / 61)
    assert got["a"] == pytest.approx(1 / 61)
    assert got["c"] == pytest.approx(1 / 62)
    ranked = fusion.rrf({"x": [("b", 1.0)], "y": [("a", 1.0)]})
    assert [k for k, _ in ranked] == ["a", "b"]  # tie: by key
    weighted = dict(fusion.rrf({"sparse": [("a", 1.0)], "dense": [("b", 1.0)]}, 60, {"sparse": 2.0, "dense": 1.0}))
    assert weighted["a"] == pytest.approx(2 / 61)


def test_weighted_fusion_normalises_each_list():
    got = dict(fusion.weighted({"sparse": [("a", 10.0), ("b", 0.0)], "dense": [("b", 0.8), ("c", 0.4)]},
                               {"sparse": 0.7, "dense": 0.3}))
    assert got == pytest.approx({"a": 0.7, "b": 0.3, "c": 0.15})
    neg = dict(fusion.weighted({"dense": [("x", 0.5), ("y", -0.5)]}))
    assert neg == pytest.approx({"x": 1.0, "y": 0.0})


def test_mmr_extremes():
    ranked = [("a", 1.0), ("a2", 0.99), ("b", 0.5)]
    vec = {"a": [1, 0], "a2": [1, 0], "b": [0, 1]}
    m = np.array([vec[k] for k, _ in ranked], dtype=float)
    sim = m @ m.T
    assert [k for k, _ in fusion.mmr(ranked, sim, 1.0)] == ["a", "a2", "b"]
    assert [k for k, _ in fusion.mmr(ranked, sim, 0.5)] == ["a", "b", "a2"]
    assert fusion.mmr(ranked, sim, 0.5)[1] == ("b", 0.5)  # original scores are kept


def test_recency_factor():
    assert fusion.recency_factor(0, 30) == 1.0
    assert fusion.recency_factor(30, 30) == pytest.approx(0.5)
    assert fusion.recency_factor(90, 30) == pytest.approx(0.125)
    assert fusion.recency_factor(-5, 30) == 1.0
