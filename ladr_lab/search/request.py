"""The parameters of seed 002's `retrieve`, checked and typed: `load_request(params)`.

Every parameter of the seed is read here, and `PARAMS_SCHEMA` describes them as one JSON Schema (the
MCP face's `retrieve` tool advertises it as its input schema; `KNOWN`, the names this server reads,
is its properties plus `_meta`); a missing, mistyped or out-of-range value raises InvalidRequestParams
naming it. Whether the engine can *honour* a well-formed option (a mode, a unit, a rerank or transform
method) is decided by the engine, which raises OptionUnsupported under `strict` or degrades and says so in
`usage.notes`. `SEARCH_MODES` are the recall modes of this request (`dense`, `sparse`, `hybrid`), a
vocabulary apart from a ladder's request modes (`round.MODES`).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from .errors import InvalidRequestParams
from .filters import MAX_DEPTH, MAX_IN_VALUES, OPS

__all__ = ["FUSIONS", "HIT_FIELDS", "KNOWN", "MAX_QUERY_CHARS", "MAX_SESSION_CHARS", "MODALITIES", "PARAMS_SCHEMA", "RetrieveRequest",
           "SEARCH_MODES", "TRANSFORMS", "UNITS", "load_fields", "load_request"]

SEARCH_MODES = ("dense", "sparse", "hybrid")
MODES = SEARCH_MODES   # deprecated alias: the old name, which `round.MODES` (a ladder's request modes) shares
MODALITIES = ("text", "image", "audio", "code", "multimodal")
FUSIONS = ("rrf", "weighted")
TRANSFORMS = ("rewrite", "hyde", "multi-query", "decompose")
UNITS = ("chunk", "document", "node", "triplet", "path", "subgraph", "community", "tree-node", "page")
MAX_QUERY_CHARS = 100_000
# the longest `session` id: the engine keeps up to `cursors.MAX_SESSIONS` of them, so their total is bounded too
MAX_SESSION_CHARS = 256
# the Hit shape's fields a `fields` selection may name, in the order a hit is written (`id` always comes)
HIT_FIELDS = ("score", "confidence", "scores", "vector", "id", "text", "modality", "unit", "level", "meta",
              "citation", "trust", "chunk")


def _int_schema(minimum: int, description: str, default: int | None = None) -> dict:
    out: dict[str, Any] = {"type": "integer", "minimum": minimum, "description": description}
    if default is not None:
        out["default"] = default
    return out


_CONTENT = {"type": "object", "required": ["type"], "description": "a Content block (text blocks are joined)",
            "properties": {"type": {"type": "string"}, "text": {"type": "string"}}}
_FILTER_LEAF = {"type": "object", "required": ["field", "op"], "additionalProperties": False,
                "properties": {"field": {"type": "string", "description": "a metatag, or slate, folder, path, size, "
                                                                          "modified, created (filter.fields)"},
                               "op": {"enum": list(OPS)},
                               "value": {"description": "an array of at most "
                                                        f"{MAX_IN_VALUES} values for `in`"}}}
# seed 002's `retrieve` params (docs/server.md's table) as one JSON Schema; `load_request` is its checker
PARAMS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["query"],
    "properties": {
        "query": {"anyOf": [{"type": "string", "maxLength": MAX_QUERY_CHARS}, _CONTENT,
                            {"type": "array", "minItems": 1, "items": _CONTENT}],
                  "description": "the query: a string, or Content block(s)"},
        "k": _int_schema(1, "the number of hits to return (clamped to retrieve.maxK)", 10),
        "mode": {"enum": list(SEARCH_MODES), "description": "dense, sparse or hybrid (capabilities.retrieve.modes)"},
        "modality": {"enum": list(MODALITIES), "default": "text", "description": "the query modality"},
        "candidateK": _int_schema(1, "recall-stage candidates before rerank (default max(k, 100))"),
        "fusion": {"type": "object", "description": "how hybrid mode combines its dense and sparse lists",
                   "properties": {"method": {"enum": list(FUSIONS), "default": "rrf"},
                                  "weights": {"anyOf": [
                                      {"type": "object", "additionalProperties": False,
                                       "properties": {"dense": {"type": "number", "minimum": 0},
                                                      "sparse": {"type": "number", "minimum": 0}}},
                                      {"type": "array", "minItems": 2, "maxItems": 2,
                                       "items": {"type": "number", "minimum": 0}}]},
                                  "rrfK": _int_schema(1, "RRF's k", 60)}},
        "rerank": {"anyOf": [{"type": "object", "required": ["method"],
                              "properties": {"method": {"type": "string"}, "model": {"type": "string"},
                                             "topN": _int_schema(1, "candidates reranked")}},
                             {"const": False}],
                   "description": "rerank inside the call ({method: cross-encoder}), or false to skip"},
        "mmr": {"type": "object", "description": "MMR diversification",
                "properties": {"lambda": {"type": "number", "minimum": 0, "maximum": 1, "default": 0.5}}},
        "transform": {"anyOf": [{"enum": list(TRANSFORMS)}, {"const": False}],
                      "description": "a query transform before recall (capabilities.transform)"},
        "filter": {"$ref": "#/$defs/filter"},
        "minScore": {"type": "number", "description": "drop hits below this score"},
        "recency": {"type": "object", "required": ["halfLifeDays"], "description": "exponential recency weighting",
                    "properties": {"field": {"type": "string", "default": "modified"},
                                   "halfLifeDays": {"type": "number", "exclusiveMinimum": 0}}},
        "unit": {"enum": list(UNITS), "description": "the granularity returned (capabilities.retrieve.units)"},
        "level": _int_schema(0, "the abstraction level (0: the leaves)"),
        "tokenBudget": _int_schema(1, "pack hits until their bodies reach this many tokens, instead of k"),
        "session": {"type": "string", "maxLength": MAX_SESSION_CHARS,
                    "description": "a token threading calls: hits already seen are dropped"},
        "includeText": {"type": "boolean", "default": True, "description": "include each hit's body text"},
        "includeVector": {"type": "boolean", "default": False, "description": "include each hit's vector"},
        "seed": {"type": "integer", "description": "a determinism hint (every stage here is deterministic)"},
        "indexVersion": {"type": "string", "description": "serve this corpus snapshot, or fail"},
        "strict": {"type": "boolean", "default": True,
                   "description": "an option the server cannot honour is an error (else dropped, and noted)"},
        "cursor": {"type": "string", "description": "the nextCursor of a previous result: its next page"},
        "fields": {"type": "array", "items": {"enum": list(HIT_FIELDS)}, "uniqueItems": True,
                   "description": "the hit fields to return (id always comes); absent: every field"},
        "timeoutMs": _int_schema(1, "a time budget for this request in milliseconds, at most the server's "
                                    "limits.requestTimeoutMs; past it the answer is error -32001"),
    },
    "$defs": {"filter": {"description": f"a metadata filter tree (at most {MAX_DEPTH} levels): a leaf "
                                        "{field, op, value} or {and: [...]}, {or: [...]}, {not: filter}",
                         "anyOf": [_FILTER_LEAF,
                                   {"type": "object", "required": ["and"], "additionalProperties": False,
                                    "properties": {"and": {"type": "array", "items": {"$ref": "#/$defs/filter"}}}},
                                   {"type": "object", "required": ["or"], "additionalProperties": False,
                                    "properties": {"or": {"type": "array", "items": {"$ref": "#/$defs/filter"}}}},
                                   {"type": "object", "required": ["not"], "additionalProperties": False,
                                    "properties": {"not": {"$ref": "#/$defs/filter"}}}]}},
}
KNOWN = frozenset(PARAMS_SCHEMA["properties"]) | {"_meta"}


@dataclass
class RetrieveRequest:
    """A checked `retrieve` request (field names follow the protocol, in snake case)."""

    query: str
    k: int | None = None
    mode: str | None = None
    modality: str = "text"
    candidate_k: int | None = None
    fusion: dict | None = None
    rerank: dict | bool | None = None
    mmr: float | None = None
    transform: str | None = None
    filter: Any = None
    min_score: float | None = None
    recency: dict | None = None
    unit: str | None = None
    level: int | None = None
    token_budget: int | None = None
    session: str | None = None
    include_text: bool = True
    include_vector: bool = False
    seed: int | None = None
    index_version: str | None = None
    strict: bool = True
    cursor: str | None = None
    fields: tuple[str, ...] | None = None
    timeout_ms: int | None = None
    progress_token: Any = None
    non_text_query: bool = False
    unknown: list[str] = field(default_factory=list)


def _int(params: dict, name: str, lo: int = 0) -> int | None:
    v = params.get(name)
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, int):
        if isinstance(v, float) and v.is_integer():
            v = int(v)
        else:
            raise InvalidRequestParams(f"{name} must be an integer (got {_show(v)})")
    if v < lo:
        raise InvalidRequestParams(f"{name} must be >= {lo} (got {v})")
    return v


def _num(params: dict, name: str) -> float | None:
    v = params.get(name)
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, (int, float)) or v != v or v in (float("inf"), float("-inf")):
        raise InvalidRequestParams(f"{name} must be a finite number (got {_show(v)})")
    return float(v)


def _str(params: dict, name: str) -> str | None:
    v = params.get(name)
    if v is None:
        return None
    if not isinstance(v, str):
        raise InvalidRequestParams(f"{name} must be a string (got {_show(v)})")
    return v


def _bool(params: dict, name: str, default: bool) -> bool:
    v = params.get(name)
    if v is None:
        return default
    if not isinstance(v, bool):
        raise InvalidRequestParams(f"{name} must be true or false (got {_show(v)})")
    return v


def _enum(params: dict, name: str, allowed: tuple) -> str | None:
    v = _str(params, name)
    if v is not None and v not in allowed:
        raise InvalidRequestParams(f'{name} must be one of {", ".join(allowed)} (got "{v}")')
    return v


def _show(v: Any) -> str:
    text = repr(v)
    return text if len(text) <= 60 else text[:57] + "..."


def load_fields(v: Any) -> tuple[str, ...] | None:
    """A `fields` selection as the hit fields it keeps, in HIT_FIELDS order (`id` always); None: every field."""
    if v is None:
        return None
    if not isinstance(v, list) or not all(isinstance(f, str) for f in v):
        raise InvalidRequestParams(f"fields must be an array of hit field names (got {_show(v)})")
    unknown = sorted(set(v) - set(HIT_FIELDS))
    if unknown:
        raise InvalidRequestParams(f'fields: unknown hit field(s) {", ".join(map(repr, unknown))}; '
                                   f'known: {", ".join(HIT_FIELDS)}')
    keep = set(v) | {"id"}
    return tuple(f for f in HIT_FIELDS if f in keep)


def _query(q: Any) -> tuple[str, bool]:
    """The query text, and whether a non-text content block was part of it."""
    if isinstance(q, str):
        return q, False
    blocks = [q] if isinstance(q, dict) else q
    if not isinstance(blocks, list) or not blocks:
        raise InvalidRequestParams("query must be a string, a Content block or a non-empty array of them")
    texts, other = [], False
    for i, b in enumerate(blocks):
        if not isinstance(b, dict) or not isinstance(b.get("type"), str):
            raise InvalidRequestParams(f"query[{i}] must be a Content block with a string type")
        if b["type"] == "text":
            if not isinstance(b.get("text"), str):
                raise InvalidRequestParams(f"query[{i}].text must be a string")
            texts.append(b["text"])
        else:
            other = True
    return "\n".join(texts), other


def load_request(params: Any) -> RetrieveRequest:
    """Check `retrieve` params and return them typed; InvalidRequestParams names the first problem."""
    if not isinstance(params, dict):
        raise InvalidRequestParams("retrieve params must be an object")
    if "query" not in params:
        raise InvalidRequestParams("query is required")
    text, non_text = _query(params["query"])
    if len(text) > MAX_QUERY_CHARS:
        raise InvalidRequestParams(f"query is longer than {MAX_QUERY_CHARS} characters")
    req = RetrieveRequest(query=text, non_text_query=non_text)
    req.unknown = sorted(str(k) for k in params if k not in KNOWN)
    req.k = _int(params, "k", 1)
    req.mode = _enum(params, "mode", SEARCH_MODES)
    req.modality = _enum(params, "modality", MODALITIES) or "text"
    req.candidate_k = _int(params, "candidateK", 1)
    req.transform = None
    if params.get("transform") is not None and params.get("transform") is not False:
        req.transform = _enum(params, "transform", TRANSFORMS)
    req.unit = _enum(params, "unit", UNITS)
    req.level = _int(params, "level", 0)
    req.token_budget = _int(params, "tokenBudget", 1)
    req.min_score = _num(params, "minScore")
    req.session = _str(params, "session")
    if req.session is not None and len(req.session) > MAX_SESSION_CHARS:
        raise InvalidRequestParams(f"session must be at most {MAX_SESSION_CHARS} characters "
                                   f"(limits.maxSessionChars; got {len(req.session)})")
    req.include_text = _bool(params, "includeText", True)
    req.include_vector = _bool(params, "includeVector", False)
    seed = params.get("seed")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
        raise InvalidRequestParams(f"seed must be an integer (got {_show(seed)})")
    req.seed = seed
    req.index_version = _str(params, "indexVersion")
    req.strict = _bool(params, "strict", True)
    req.cursor = _str(params, "cursor")
    req.fields = load_fields(params.get("fields"))
    req.timeout_ms = _int(params, "timeoutMs", 1)

    fusion = params.get("fusion")
    if fusion is not None:
        if not isinstance(fusion, dict):
            raise InvalidRequestParams("fusion must be an object {method, weights?, rrfK?}")
        method = _enum(fusion, "method", FUSIONS) or "rrf"
        weights = fusion.get("weights")
        if weights is not None:
            if isinstance(weights, list) and len(weights) == 2:
                weights = {"dense": weights[0], "sparse": weights[1]}
            if not isinstance(weights, dict) or not set(weights) <= {"dense", "sparse"} or not all(
                    isinstance(w, (int, float)) and not isinstance(w, bool) and w >= 0 and math.isfinite(w)
                    for w in weights.values()):
                raise InvalidRequestParams("fusion.weights must be {dense, sparse} (or [dense, sparse]) "
                                           "of non-negative finite numbers")
            # weights are relative: scaled to sum to 1 (by the largest first, so 1e308 twice cannot overflow),
            # which keeps a fused score finite and weighted fusion's in [0, 1]
            top = max(weights.values(), default=0)
            if top > 0:
                scaled = {k: w / top for k, w in weights.items()}
                total = sum(scaled.values())
                weights = {k: w / total for k, w in scaled.items()}
        rrf_k = _int(fusion, "rrfK", 1)
        req.fusion = {"method": method, "weights": weights, "rrfK": rrf_k}

    rerank = params.get("rerank")
    if rerank is False:
        req.rerank = False
    elif rerank is not None:
        if not isinstance(rerank, dict):
            raise InvalidRequestParams("rerank must be an object {method, model?, topN?} or false")
        method = _str(rerank, "method") or ""
        if not method:
            raise InvalidRequestParams("rerank.method is required")
        req.rerank = {"method": method, "model": _str(rerank, "model"), "topN": _int(rerank, "topN", 1)}

    mmr = params.get("mmr")
    if mmr is not None:
        if not isinstance(mmr, dict):
            raise InvalidRequestParams("mmr must be an object {lambda}")
        lam = _num(mmr, "lambda")
        lam = 0.5 if lam is None else lam
        if not 0.0 <= lam <= 1.0:
            raise InvalidRequestParams(f"mmr.lambda must be between 0 and 1 (got {lam})")
        req.mmr = lam

    recency = params.get("recency")
    if recency is not None:
        if not isinstance(recency, dict):
            raise InvalidRequestParams("recency must be an object {field, halfLifeDays}")
        fld = _str(recency, "field") or "modified"
        half = _num(recency, "halfLifeDays")
        if half is None or half <= 0:
            raise InvalidRequestParams("recency.halfLifeDays must be a positive number")
        req.recency = {"field": fld, "halfLifeDays": half}

    if "filter" in params and params["filter"] is not None:
        req.filter = params["filter"]

    meta = params.get("_meta")
    if meta is not None:
        if not isinstance(meta, dict):
            raise InvalidRequestParams("_meta must be an object")
        token = meta.get("progressToken")
        if token is not None and (isinstance(token, bool) or not isinstance(token, (str, int))):
            raise InvalidRequestParams("_meta.progressToken must be a string or an integer")
        req.progress_token = token
    return req
