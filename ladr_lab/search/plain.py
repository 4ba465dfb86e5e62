"""The plain sparse request's lean path: `query`, `k`, `mode` sparse (or the sparse default), `includeText`
and `fields`, nothing else; answered as JSON text byte-for-byte equal to the general pipeline's.

Such a request is decided from its params with one cheap check (`plain_answer` returns None for anything
else, and the caller runs the general pipeline). What it skips: the request object and its per-option
checks, the funnel's per-stage bookkeeping, the usage dict and its encoder. What it keeps: the snapshot
(and so the folders' freshness check), BM25 recall sized by need (k + 1, see pipeline.py), the cursor
(a real one, pinned to the snapshot like any other), and the hits' JSON written a page at a time from
the per-document cache of their serialized fields (hits.py). No answer is ever cached.
"""
from __future__ import annotations

import math
import time
from functools import partial
from typing import Any

from .cursors import RecallMore
from .errors import InvalidRequestParams
from .hits import frag_key, sparse_hits_json, sparse_page_json, static_part
from .request import MAX_QUERY_CHARS, load_fields

__all__ = ["MAX_TAIL_SETS", "PLAIN_KEYS", "plain_answer"]

MAX_TAIL_SETS = 16   # hit-field selections a snapshot keeps tails for
PLAIN_KEYS = frozenset(("query", "k", "mode", "includeText", "fields"))
_TAIL = (',"indexVersion":"%s",%s"usage":{"candidates":%d,"reranked":0,"latencyMs":%r,"returned":%d,'
         '"effective":{"k":%d,"candidateK":%d},"mode":"sparse","unit":"document"}}')
_perf = time.perf_counter


def plain_answer(engine: Any, params: dict) -> str | None:
    """The JSON result of a plain sparse request (see the module docstring), or None when `params` is not one
    (or is one the general path must judge: a bad value, a clamp that needs a note)."""
    t0 = _perf()
    if not params.keys() <= PLAIN_KEYS:
        return None
    q = params.get("query")
    k = params.get("k", 10)
    if type(q) is not str or type(k) is not int or not 1 <= k <= engine.max_k or len(q) > MAX_QUERY_CHARS:
        return None
    mode = params.get("mode")
    if mode != "sparse" and (mode is not None or "dense" in engine.modes):
        return None
    include_text = params.get("includeText", True)
    if type(include_text) is not bool:
        return None
    fields = params.get("fields")
    if fields is not None:
        try:
            fields = load_fields(fields)
        except InvalidRequestParams:
            return None
    snap = engine.corpus.sync()
    view = snap.sparse
    cand = min(max(k, 100), engine.max_k)
    sized = engine.sized_recall and k + 1 < cand
    n = k + 1 if sized else cand
    cols = view.columns(q, n) if view else ([], [])
    got = _bulk(snap, view, cols, k, include_text, fields) if cols is not None else None
    if got is None:   # ties, or a hit the snapshot cannot write: the same page from (key, score) pairs
        ranked = view.search(q, n) if view else []
        page = ranked[:k]
        if not all(map(math.isfinite, [s for _, s in page])):
            return None
        hits_text, keys = sparse_hits_json(snap, page, "document", include_text, snap.docs, fields)
        returned, more = len(keys), len(page) < len(ranked)
    else:
        hits_text, returned, more = got
    cursor = ""
    if more:
        pairs = (ranked,) if got is None else (view.keys_of(cols[1]), cols[0])   # zipped when followed
        state = partial(_state, snap.version, pairs, k, include_text, fields,
                        RecallMore(engine._recall, q, "sparse", "document") if sized else None, cand)
        cursor = '"nextCursor":"' + engine.cursors.save(state) + '",'
    return '{"hits":' + hits_text + _TAIL % (snap.version, cursor, len(cols[0]) if got is not None else len(ranked),
                                             round((_perf() - t0) * 1000, 3), returned, k, cand)


def _bulk(snap: Any, view: Any, cols: tuple, k: int, include_text: bool,
          fields: tuple | None) -> tuple[str, int, bool] | None:
    """The page's hits JSON from the recall's columns, each hit's tail found by its uid in the snapshot's cache
    (one lookup a hit, in C); its length and whether hits lie past it. None: the pair path must write it."""
    scores, uids = cols
    if not view.has_all(uids) or not all(map(math.isfinite, scores)):
        return None
    key_of = frag_key(include_text, fields)
    tail_of = snap.tails.get(key_of)
    if tail_of is None:
        tail_of = snap.tails.setdefault(key_of, {}) if len(snap.tails) < MAX_TAIL_SETS else {}
    page_uids = uids[:k]
    tails = list(map(tail_of.get, page_uids))
    if None in tails:
        docs = snap.docs
        for i, (uid, key) in enumerate(zip(page_uids, view.keys_of(page_uids), strict=True)):
            if tails[i] is None:
                if key not in docs:
                    return None
                tails[i] = tail_of[uid] = static_part(snap, key, "document", include_text, fields)[2]  # type: ignore[index]
    return sparse_page_json(scores[:k], tails, fields), len(tails), len(scores) > k


def _state(version: str, pairs: tuple, k: int, include_text: bool, fields: tuple | None, extend: Any,
           cand: int) -> dict:
    """A plain request's cursor state, as the general path writes it (made when the cursor is followed, from the
    recall as (key, score) pairs, or as its keys and its scores)."""
    ranked = pairs[0] if len(pairs) == 1 else list(zip(*pairs, strict=True))
    return {"snap": version, "ranked": ranked, "stages": {key: {"sparse": s} for key, s in ranked},
            "unit": "document", "mode": "sparse", "k": k, "token_budget": None, "include_text": include_text,
            "include_vector": False, "session": None, "reranked": False, "offset": min(k, len(ranked)),
            "as_json": True, "fields": fields, "extend": extend, "cand": cand, "plain": True,
            "recalled": len(ranked)}
