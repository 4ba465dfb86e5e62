"""Combining and re-ordering ranked lists: reciprocal-rank and weighted fusion, MMR, recency decay (and the metatag timestamps it reads).

Ranked lists are `[(key, score)]`, best first. Every function is deterministic: ties are broken
by key, so identical inputs give identical outputs (the `seed` guarantee needs nothing more).
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from typing import Any

from .budget import check_budget

__all__ = ["RRF_K", "mmr", "recency_factor", "rrf", "sigmoid", "timestamp", "weighted"]

RRF_K = 60


def _by_score(items: Mapping[Any, float]) -> list[tuple[Any, float]]:
    return sorted(items.items(), key=lambda kv: (-kv[1], str(kv[0])))


def rrf(lists: Mapping[str, Sequence[tuple[Any, float]]], k: int = RRF_K,
        weights: Mapping[str, float] | None = None) -> list[tuple[Any, float]]:
    """Reciprocal-rank fusion: each key scores sum(w / (k + rank)) over the lists it appears in."""
    out: dict[Any, float] = {}
    for name, ranked in lists.items():
        w = 1.0 if weights is None else float(weights.get(name, 1.0))
        for rank, (key, _) in enumerate(ranked, start=1):
            out[key] = out.get(key, 0.0) + w / (k + rank)
    return _by_score(out)


def weighted(lists: Mapping[str, Sequence[tuple[Any, float]]],
             weights: Mapping[str, float] | None = None) -> list[tuple[Any, float]]:
    """Weighted fusion of normalised scores: each list is scaled to [0, 1] by `(s - lo) / (hi - lo)`
    with `lo = min(0, lowest score)`, so the weakest positive candidate still counts; a key missing
    from a list scores 0 there."""
    out: dict[Any, float] = {}
    for name, ranked in lists.items():
        if not ranked:
            continue
        w = 1.0 / len(lists) if weights is None else float(weights.get(name, 0.0))
        hi = max(s for _, s in ranked)
        lo = min(0.0, min(s for _, s in ranked))
        span = hi - lo
        for key, s in ranked:
            norm = (s - lo) / span if span > 0 else 1.0
            out[key] = out.get(key, 0.0) + w * norm
    return _by_score(out)


def recency_factor(age_days: float, half_life_days: float) -> float:
    """`0.5 ** (age / half-life)`: 1 for a document of age 0, 0.5 at one half-life (future ages count as 0)."""
    return 0.5 ** (max(0.0, age_days) / half_life_days)


def mmr(ranked: Sequence[tuple[Any, float]], sim: Any, lam: float) -> list[tuple[Any, float]]:
    """Maximal marginal relevance: greedily pick the item maximising
    `lam * relevance - (1 - lam) * (max similarity to the items already picked)`, where relevance is
    the min-max normalised score and `sim` the items' pairwise similarity matrix (numpy, n x n).
    Returns every item, with its original score, in picking order (ties: the earlier item)."""
    import numpy as np

    items = list(ranked)
    n = len(items)
    if n <= 1:
        return items
    scores = np.array([s for _, s in items], dtype=np.float64)
    span = scores.max() - scores.min()
    rel = (scores - scores.min()) / span if span > 0 else np.ones(n)
    max_sim = np.zeros(n)
    taken: Any = np.zeros(n, dtype=bool)
    order: list[int] = []
    for i in range(n):
        if not i % 64:
            check_budget("mmr")
        gain = lam * rel - (1 - lam) * max_sim
        gain[taken] = -np.inf
        best = int(np.argmax(gain))  # first maximum: ties go to the better-ranked item
        order.append(best)
        taken[best] = True
        max_sim = np.maximum(max_sim, sim[:, best])
    return [items[i] for i in order]


def sigmoid(x: float) -> float:
    """The logistic function, safe for large magnitudes."""
    if x >= 0:
        return 1.0 / (1.0 + math.exp(-x))
    z = math.exp(x)
    return z / (1.0 + z)


def timestamp(value: Any) -> float | None:
    """Seconds since the epoch of a metatag value: an ISO-8601 date/time, or a number of seconds (or ms)."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)):
        return float(value) / 1000.0 if value > 1e11 else float(value)
    if isinstance(value, str):
        text = value.strip()
        if text.endswith("Z"):
            text = text[:-1] + "+00:00"
        try:
            dt = datetime.fromisoformat(text)
        except ValueError:
            return None
        if dt.tzinfo is None:
            dt = dt.replace(tzinfo=timezone.utc)
        return dt.timestamp()
    return None

