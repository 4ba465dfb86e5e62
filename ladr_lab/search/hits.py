"""Hit assembly: seed 002's Hit shape from a snapshot's records, as dicts or straight to JSON text.

The parts of a hit that depend only on its unit (id, text, meta, citation, trust, chunk) are built
once per unit and cached on the record with their JSON text; a hit adds its score, confidence and
per-stage scores. `hits_json` writes the JSON without building dicts: the server's hot path.

`confidence` depends only on the query and the hit (see pipeline.py), never on the other hits.
"""
from __future__ import annotations

import itertools
import json
import math
from collections.abc import Mapping
from typing import Any

from ..slate.cache import ReadOnlyDict
from . import fusion
from .corpus import Snapshot

__all__ = ["SPARSE_CONFIDENCE_HALF", "confidence", "frag_key", "hit_dicts", "hits_json", "rest_json",
           "sparse_hits_json", "sparse_page_json", "static_part", "unit_text", "unit_vector"]

SPARSE_CONFIDENCE_HALF = 10.0


def _num(v: Any) -> str:
    f = float(v)
    return repr(f) if f - f == 0.0 else "null"  # finite (inf - inf and nan - nan are nan)


def unit_vector(snap: Snapshot, key: str, unit: str) -> list[float] | None:
    """The dense vector of a unit (a document or a chunk) in a snapshot; None when it has none."""
    if unit == "chunk":
        return snap.chunk_dense.vector(key) if snap.chunk_dense is not None else None
    doc = snap.docs.get(key)
    if doc is None:
        return None
    view = snap.dense.get(doc.folder_key)
    return view.vector(doc.rel) if view is not None else None


def unit_text(snap: Snapshot, key: str, unit: str) -> str:
    """The text of a unit (a document or a chunk) in a snapshot."""
    if unit == "chunk":
        return snap.chunks[key].text
    return snap.docs[key].text


def confidence(st: Mapping, mode: str, reranked: bool) -> float:
    """A hit's `confidence` from its stage scores `st` (pipeline.py's module docstring says how, per mode)."""
    if reranked and "rerank" in st:
        return round(fusion.sigmoid(st["rerank"]), 6)
    sparse = st.get("sparse", 0.0)
    sconf = sparse / (sparse + SPARSE_CONFIDENCE_HALF) if sparse > 0 else 0.0
    if mode == "sparse":
        return round(sconf, 6)
    cos = st.get("dense", st.get("cosine"))
    dconf = min(1.0, max(0.0, cos)) if cos is not None else 0.0
    return round(dconf if mode == "dense" else (sconf + dconf) / 2, 6)


def frag_key(include_text: bool, fields: tuple | None) -> Any:
    """The key a unit's record caches its static part under (see `static_part`)."""
    return include_text if fields is None else (include_text, fields)


def static_part(snap: Snapshot, key: str, unit: str, include_text: bool,
                fields: tuple | None = None) -> tuple[dict, str, str] | None:
    """The parts of a hit that depend only on the unit (and includeText, and a `fields` selection): a dict,
    its JSON, and that JSON without its opening brace; cached on the unit's record."""
    doc = snap.doc_of(key)
    if doc is None:
        return None
    rec = snap.chunks[key] if unit == "chunk" else doc
    cache_key = frag_key(include_text, fields)
    got = rec.frags.get(cache_key)
    if got is None:
        static: dict[str, Any] = {"id": key}
        if include_text:
            static["text"] = rec.text
        static.update(modality="text", unit=unit, level=0, meta=doc.meta, citation=doc.citation, trust=rec.trust)
        if unit == "chunk":
            chunk: Any = rec
            static["chunk"] = ReadOnlyDict(docId=chunk.doc_id, index=chunk.index, context=chunk.context)
        if fields is not None:
            static = {k: v for k, v in static.items() if k in fields}
        text = json.dumps(static, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
        got = (static, text, text[1:])  # the last: ready to follow '{"score":...,' in a hit's JSON
        rec.frags[cache_key] = got
    return got

def _rows(snap: Snapshot, page: list, unit: str, stages: dict, include_text: bool, mode: str,
          reranked: bool | None, fields: tuple | None = None):
    """(static part, score, confidence, per-stage scores) for each hit of a page, in order."""
    for key, score in page:
        fixed = static_part(snap, key, unit, include_text, fields)
        if fixed is None:
            continue
        st = stages.get(key) or {}
        scores = dict(st)
        if "cosine" in scores:
            cos = scores.pop("cosine")
            scores.setdefault("dense", cos)
        yield key, fixed, float(score), confidence(st, mode, bool(reranked)), scores

def hit_dicts(snap: Snapshot, page: list, unit: str, stages: dict, req: Any, mode: str,
              reranked: bool | None) -> list[dict]:
    """The hits of a page as dicts of seed 002's Hit shape (`req` gives includeText / includeVector)."""
    include_text = req["include_text"] if isinstance(req, dict) else req.include_text
    include_vector = req["include_vector"] if isinstance(req, dict) else req.include_vector
    fields = req.get("fields") if isinstance(req, dict) else req.fields
    out = []
    for key, fixed, score, conf, scores in _rows(snap, page, unit, stages, include_text, mode, reranked, fields):
        hit = dict(fixed[0])
        hit.update(score=score, confidence=conf, scores=scores)
        if include_vector:
            hit["vector"] = unit_vector(snap, key, unit)
        if fields is not None:
            hit = {k: v for k, v in hit.items() if k in fields}
        out.append(hit)
    return out

def hits_json(snap: Snapshot, page: list, unit: str, stages: dict, state: dict) -> tuple[str, list[str]]:
    """The same hits as `hit_dicts`, as a JSON array text, built without dicts (the server's hot path)."""
    include_text, include_vector = state["include_text"], state["include_vector"]
    mode, reranked = state["mode"], bool(state["reranked"])
    fields = state.get("fields")
    records = snap.chunks if unit == "chunk" else snap.docs
    if mode == "sparse" and not reranked and (not include_vector or (fields is not None and "vector" not in fields)) \
            and (state.get("plain") or all(len(stages.get(key, ())) == 1 for key, _ in page)) \
            and all(map(math.isfinite, [s for _, s in page])):
        return sparse_hits_json(snap, page, unit, include_text, records, fields)
    want = _Want(fields)
    include_vector = include_vector and want.vector
    key_of = frag_key(include_text, fields)
    parts, keys = [], []
    half = SPARSE_CONFIDENCE_HALF
    empty: dict = {}
    for key, score in page:
        rec = records.get(key)
        if rec is None:
            continue
        fixed: Any = rec.frags.get(key_of) or static_part(snap, key, unit, include_text, fields)
        st = stages.get(key, empty)
        r = _num(score)
        if len(st) == 1 and mode in st and not reranked:
            # one stage (plain sparse or dense recall): its score is the hit's score
            sc = f'"{mode}":{r}'
            if mode == "sparse":
                conf = round(score / (score + half), 6) if score > 0 else 0.0
            else:
                conf = round(min(1.0, max(0.0, score)), 6)
        else:
            sc = ",".join(f'"{"dense" if k == "cosine" else k}":{r if v == score else _num(v)}'
                          for k, v in st.items() if k != "cosine" or "dense" not in st)
            conf = confidence(st, mode, reranked)
        vec = ""
        if include_vector:
            v = unit_vector(snap, key, unit)
            vec = ',"vector":' + ("null" if v is None else "[" + ",".join(_num(x) for x in v) + "]")
        if fields is None:
            parts.append(f'{{"score":{r},"confidence":{conf!r},"scores":{{{sc}}}{vec},{fixed[2]}')
        else:
            head = [f'"score":{r}'] * want.score + [f'"confidence":{conf!r}'] * want.confidence \
                + [f'"scores":{{{sc}}}'] * want.scores + [vec[1:]] * bool(vec)
            parts.append("{" + "".join(h + "," for h in head) + fixed[2])
        keys.append(key)
    return "[" + ",".join(parts) + "]", keys


class _Want:
    """Which of the per-hit (non-static) fields a `fields` selection keeps (all of them when it is None)."""

    __slots__ = ("confidence", "score", "scores", "vector")

    def __init__(self, fields: tuple | None) -> None:
        self.confidence = fields is None or "confidence" in fields
        self.score = fields is None or "score" in fields
        self.scores = fields is None or "scores" in fields
        self.vector = fields is None or "vector" in fields


def _sparse_template(fields: tuple | None) -> str:
    """The %-format of one plain sparse hit: its score, confidence and score again (those kept), then its
    static tail. A score is written with 17 significant digits and a confidence with 6 decimals, in C: both
    parse back to exactly the float that `repr` (and `round(c, 6)`) would write, at a fraction of the cost."""
    want = _Want(fields)
    head = ['"score":%.17g'] * want.score + ['"confidence":%.6f'] * want.confidence \
        + ['"scores":{"sparse":%.17g}'] * want.scores
    return "{" + "".join(h + "," for h in head) + "%s"


_TEMPLATES: dict = {}   # (fields, hits on the page) -> the page's %-format, made once


def _page_template(fields: tuple | None, n: int) -> str:
    got = _TEMPLATES.get((fields, n))
    if got is None:
        got = "[" + ",".join([_sparse_template(fields)] * n) + "]"
        if len(_TEMPLATES) < 4096:
            _TEMPLATES[(fields, n)] = got
    return got


def sparse_hits_json(snap: Snapshot, page: list, unit: str, include_text: bool, records: dict,
                      fields: tuple | None = None) -> tuple[str, list]:
    """`hits_json` for the commonest page: BM25 recall only (each hit's score is its only stage score).
    The work is done a page at a time: the static tails looked up in one pass, then one %-format of the
    whole page (its template made once per page size and field selection), so no per-hit call is made."""
    key_of = frag_key(include_text, fields)
    keys = [key for key, _ in page if key in records]
    if len(keys) < len(page):
        page = [(key, s) for key, s in page if key in records]
    scores = [float(s) for _, s in page]
    frags = [records[key].frags for key in keys]
    tails = [f[key_of][2] if key_of in f else static_part(snap, key, unit, include_text, fields)[2]  # type: ignore[index]
             for f, key in zip(frags, keys, strict=True)]
    return sparse_page_json(scores, tails, fields), keys


def sparse_page_json(scores: list[float], tails: list[str], fields: tuple | None = None) -> str:
    """The JSON array of a plain sparse page from its scores and its hits' static tails, in one %-format."""
    want = _Want(fields)
    half = SPARSE_CONFIDENCE_HALF
    columns: list = []
    if want.score:
        columns.append(scores)
    if want.confidence:
        columns.append([x / (x + half) if x > 0 else 0.0 for x in scores])
    if want.scores:
        columns.append(scores)
    columns.append(tails)
    flat = tuple(itertools.chain.from_iterable(zip(*columns, strict=True)))
    return _page_template(fields, len(tails)) % flat


_PLAIN_USAGE = {"candidates", "reranked", "latencyMs", "returned", "effective", "mode", "unit"}
_REST = ('{"indexVersion":"%s",%s"usage":{"candidates":%d,"reranked":%d,"latencyMs":%r,"returned":%d,'
         '"effective":%s,"mode":"%s","unit":"%s"}}')


def rest_json(result: dict) -> str:
    """The result without its hits as JSON text: for the commonest answer (usage without notes or tokens, every
    string one this server made from a safe alphabet) one %-format, else `json.dumps`."""
    usage = result["usage"]
    eff = usage["effective"]
    if usage.keys() == _PLAIN_USAGE and all(type(v) is int for v in eff.values()) \
            and all(isinstance(v, str) and v.replace(".", "").replace("-", "").isalnum()
                    for v in (result["indexVersion"], usage["mode"], usage["unit"], result.get("nextCursor", "x"))):
        cursor = f'"nextCursor":"{result["nextCursor"]}",' if "nextCursor" in result else ""
        effective = "{" + ",".join(f'"{k}":{v}' for k, v in eff.items()) + "}"
        return _REST % (result["indexVersion"], cursor, usage["candidates"], usage["reranked"], usage["latencyMs"],
                        usage["returned"], effective, usage["mode"], usage["unit"])
    return json.dumps(result, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
