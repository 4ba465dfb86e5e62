"""The retrieve loop's judgement and fetching (seeds 000, 001; SPEC §3).

`judge(output, schema)` decides whether an output is a retrieval request; `fetch(folder, request, seen)`
executes the request's modes in SPEC order (files, subfolders, metatag, glob, similarTo) with per-node dedup.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ..errors import PathRefused, SlateError
from ..jsonx import extract

MODES = ("files", "subfolders", "metatag", "glob", "similarTo")
DEFAULT_TOP_K = 5


@dataclass(frozen=True)
class Verdict:
    """Why an output was taken as a retrieval request or as the final answer."""

    is_request: bool
    request: dict | None
    top_k: int | None
    reason: str
    method: str | None = None
    json_value: Any = None


def _schema_error_text(err) -> str:
    where = "/".join(str(p) for p in err.absolute_path)
    return f"{err.message} (at {where or 'the top level'})"


_VALIDATORS: dict[int, Any] = {}


def validator(schema: dict):
    """A cached jsonschema validator for a schema (schemas are checked at load time)."""
    key = id(schema)
    v = _VALIDATORS.get(key)
    if v is None or v.schema is not schema:
        from jsonschema.validators import validator_for
        v = validator_for(schema)(schema)
        _VALIDATORS[key] = v
    return v


def schema_problem(value: Any, schema: dict) -> str | None:
    """The best error of `value` against `schema` as text, or None when it validates."""
    from jsonschema.exceptions import best_match
    err = best_match(validator(schema).iter_errors(value))
    return None if err is None else _schema_error_text(err)


def judge(output: str, schema: dict) -> Verdict:
    """Extract the first JSON block and test it against requestMatch."""
    ext = extract(output)
    if not ext.found:
        return Verdict(False, None, None, "no JSON found in the output, so it is the final answer")
    problem = schema_problem(ext.value, schema)
    if problem is not None:
        return Verdict(False, None, None, f"JSON found ({ext.method}) but it does not match requestMatch: {problem}",
                       ext.method, ext.value)
    obj = ext.value
    req = obj.get("request") if isinstance(obj, dict) and isinstance(obj.get("request"), dict) else obj
    top_k = None
    for holder in (obj, req):
        if isinstance(holder, dict) and isinstance(holder.get("topK"), int) and not isinstance(holder.get("topK"), bool):
            top_k = holder["topK"]
    if not isinstance(req, dict):
        req = {}
    form = "wrapped" if req is not obj else "bare"
    return Verdict(True, req, top_k, f"JSON found ({ext.method}) and it matches requestMatch ({form} form)",
                   ext.method, ext.value)


def _as_list(v: Any) -> list:
    if v is None:
        return []
    return v if isinstance(v, list) else [v]


def _entry(path: str, mode: str, status: str, content: str | None = None, **extra) -> dict:
    e = {"path": path, "mode": mode, "status": status, "chars": len(content) if content is not None else 0}
    e.update(extra)
    if content is not None:
        e["content"] = content
    return e


def fetch(folder, request: dict, seen: set[str], top_k: int | None = None) -> list[dict]:
    """Run every mode of `request` against `folder`; `seen` (paths already given this step) is updated."""
    entries: list[dict] = []

    def give(rel: str, mode: str, **extra) -> None:
        if rel in seen:
            entries.append(_entry(rel, mode, "already_in_context", **extra))
            return
        try:
            text = folder.read_text(rel)
        except (PathRefused, SlateError):
            text = None
        if text is None:
            entries.append(_entry(rel, mode, "not_found", **extra))
            return
        seen.add(rel)
        entries.append(_entry(rel, mode, "fetched", text, **extra))

    for rel in _as_list(request.get("files")):
        give(str(rel), "files")
    for sub in _as_list(request.get("subfolders")):
        sub = str(sub)
        try:
            listing = folder.index(sub.strip("/")) if sub.strip("/") else folder.index()
        except (PathRefused, SlateError):
            listing = None
        label = sub.rstrip("/") + "/"
        if listing is None:
            entries.append(_entry(label, "subfolders", "not_found"))
        else:
            entries.append(_entry(label, "subfolders", "listed", json.dumps(listing, ensure_ascii=False)))
    similar_queries: list[str] = []
    for q in _as_list(request.get("metatag")):
        if not isinstance(q, dict) or not isinstance(q.get("name"), str):
            continue
        if q.get("similarTo") is not None:
            similar_queries.append(str(q["similarTo"]))
            continue
        contains = q.get("contains")
        label = q["name"] + (f'~"{contains}"' if contains is not None else "")
        matches = folder.metatag_query(q["name"], None if contains is None else str(contains))
        if not matches:
            entries.append(_entry(label, "metatag", "no_match"))
        for rel in matches:
            give(rel, "metatag")
    for pattern in _as_list(request.get("glob")):
        matches = folder.glob(str(pattern))
        if not matches:
            entries.append(_entry(str(pattern), "glob", "no_match"))
        for rel in matches:
            give(rel, "glob")
    if request.get("similarTo") is not None:
        similar_queries.append(str(request["similarTo"]))
    k = top_k if top_k and top_k > 0 else DEFAULT_TOP_K
    for text in similar_queries:
        hits = folder.similar(text, k)
        if not hits:
            entries.append(_entry(text[:60], "similarTo", "no_match"))
        for rel, score in hits:
            give(rel, "similarTo", score=round(float(score), 4))
    return entries
