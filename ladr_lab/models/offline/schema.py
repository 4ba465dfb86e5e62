"""JSON Schema helpers for the offline model: reading which request modes a requestMatch declares,
checking candidates (`round.validators.conforms`), and building an instance of an output schema
from the answer's material.

Internal to the offline backend (it was `models/_schema.py`): only `models/offline/` imports it, and its names
are no part of `ladr_lab.models`' face. The folder, not a leading underscore, now says whose it is.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from ...round.validators import conforms as is_valid

__all__ = ["Material", "build_instance", "enum_values", "is_valid", "properties", "resolve"]

_MAX_DEPTH = 8


def resolve(schema, root):
    """Follow local `$ref`s (`#/...`) from `root` until a schema without one is reached."""
    for _ in range(_MAX_DEPTH):
        if not isinstance(schema, dict) or not isinstance(schema.get("$ref"), str):
            return schema
        ref = schema["$ref"]
        if not ref.startswith("#"):
            return schema
        target = root
        for part in [p for p in ref[1:].split("/") if p]:
            part = part.replace("~1", "/").replace("~0", "~")
            if isinstance(target, dict) and part in target:
                target = target[part]
            else:
                return {}
        rest = {k: v for k, v in schema.items() if k != "$ref"}
        schema = {**target, **rest} if isinstance(target, dict) else target
    return schema


def properties(schema, root) -> dict:
    """The properties a schema declares, merged across allOf/anyOf/oneOf branches."""
    schema = resolve(schema, root)
    if not isinstance(schema, dict):
        return {}
    out = dict(schema.get("properties") or {})
    for key in ("allOf", "anyOf", "oneOf"):
        for sub in schema.get(key) or []:
            for name, sub_schema in properties(sub, root).items():
                out.setdefault(name, sub_schema)
    return out


def enum_values(schema, root) -> list:
    """The values an `enum`/`const` allows (empty when unrestricted)."""
    schema = resolve(schema, root)
    if not isinstance(schema, dict):
        return []
    if "const" in schema:
        return [schema["const"]]
    return list(schema.get("enum") or [])


@dataclass
class Material:
    """What the offline model knows when filling a schema: question, sentences, sources, answer."""

    question: str
    words: list[str]
    sentences: list[tuple[str, str]]  # (sentence, source label), best first
    labels: list[str]
    answer: str
    match_terms: set[str] = field(default_factory=set)

    def sentence(self, i: int = 0) -> str:
        """The i-th best sentence (cycling), else the question, else a fixed phrase."""
        if self.sentences:
            return self.sentences[i % len(self.sentences)][0]
        return self.question or "No information found."

    def label(self, i: int = 0) -> str:
        """The i-th source label (cycling), or "none"."""
        return self.labels[i % len(self.labels)] if self.labels else "none"


_NAME_RULES = [
    ("source", re.compile(r"source|cite|citation|file|path|ref|document|url|origin")),
    ("question", re.compile(r"question|query|prompt")),
    ("answer", re.compile(r"answer|summary|synthesis|response|result|output|conclusion|report")),
    ("key", re.compile(r"(^|_)(key|id|slug)$|^(key|id|slug)")),
    ("title", re.compile(r"title|name|topic|subject|heading|headline")),
    ("tag", re.compile(r"tag|keyword|label|category|kind|term")),
]


def _role(name: str) -> str:
    low = (name or "").lower()
    for role, rx in _NAME_RULES:
        if rx.search(low):
            return role
    return "text"


def _fit_string(text: str, schema: dict, m: Material, i: int) -> str:
    min_len = schema.get("minLength") or 0
    max_len = schema.get("maxLength")
    j = i
    while len(text) < min_len and j < i + len(m.sentences):
        j += 1
        text = f"{text} {m.sentence(j)}".strip()
    if len(text) < min_len:
        text = (text + " " + m.answer).strip()
    while len(text) < min_len:
        text = (text + " " + (text or "n/a")).strip()
    if isinstance(max_len, int) and len(text) > max_len:
        text = text[:max_len].rstrip() or text[:max_len]
    pattern = schema.get("pattern")
    if isinstance(pattern, str):
        try:
            rx = re.compile(pattern)
        except re.error:
            return text
        if not rx.search(text):
            for alt in [m.label(i), "-".join(m.words[:3]), *(m.words or []), m.question]:
                if alt and rx.search(alt):
                    return alt
    return text


def _string(name: str, schema: dict, m: Material, i: int) -> str:
    role = _role(name)
    if role == "source":
        text = m.label(i)
    elif role == "question":
        text = m.question or m.sentence(i)
    elif role == "answer":
        text = m.answer or m.sentence(i)
    elif role == "key":
        text = "-".join(m.words[i : i + 3] or m.words[:3]) or "item"
    elif role == "title":
        text = " ".join(m.words[:5]).capitalize() or m.sentence(i)
    elif role == "tag":
        text = m.words[i % len(m.words)] if m.words else "general"
    else:
        text = m.sentence(i)
    return _fit_string(text, schema, m, i)


def _in_bounds(v: float, schema: dict) -> bool:
    lo, hi = schema.get("minimum"), schema.get("maximum")
    xlo, xhi = schema.get("exclusiveMinimum"), schema.get("exclusiveMaximum")
    # draft-04 style booleans
    if xlo is True:
        xlo, lo = lo, None
    if xhi is True:
        xhi, hi = hi, None
    ok = (lo is None or v >= lo) and (hi is None or v <= hi)
    ok = ok and (not isinstance(xlo, (int, float)) or isinstance(xlo, bool) or v > xlo)
    ok = ok and (not isinstance(xhi, (int, float)) or isinstance(xhi, bool) or v < xhi)
    step = schema.get("multipleOf")
    if ok and isinstance(step, (int, float)) and step > 0:
        q = v / step
        ok = abs(q - round(q)) < 1e-9
    return ok


def _number(schema: dict, integer: bool):
    def num(x):
        return x if isinstance(x, (int, float)) and not isinstance(x, bool) else None

    hi = num(schema.get("maximum"))
    lo = num(schema.get("minimum"))
    xhi, xlo = num(schema.get("exclusiveMaximum")), num(schema.get("exclusiveMinimum"))
    if schema.get("exclusiveMaximum") is True:
        xhi, hi = hi, None
    if schema.get("exclusiveMinimum") is True:
        xlo, lo = lo, None
    step = num(schema.get("multipleOf"))
    top = hi if hi is not None else xhi
    bottom = lo if lo is not None else xlo
    candidates: list[float] = []
    if integer:
        if top is not None:
            candidates += [math.floor(top) - (1 if hi is None and float(top).is_integer() else 0)]
        if bottom is not None:
            candidates += [max(math.ceil(bottom) + (1 if lo is None and float(bottom).is_integer() else 0), 1),
                           math.ceil(bottom) + (1 if lo is None and float(bottom).is_integer() else 0)]
        candidates += [1, 0]
    else:
        candidates.append(0.9)
        if hi is not None:
            candidates.append(hi)
        if xhi is not None:
            span = (xhi - bottom) if bottom is not None else 1.0
            candidates.append(xhi - min(0.1, span / 10 if span > 0 else 0.1))
        if bottom is not None:
            candidates += [bottom + 0.9 if lo is None else lo, bottom + 1]
        candidates += [1.0, 0.0]
    if step:
        candidates = [math.floor(c / step) * step for c in candidates] + [
            math.ceil(c / step) * step for c in candidates
        ]
    for c in candidates:
        c = int(c) if integer else (round(c, 10) if isinstance(c, float) else c)
        if _in_bounds(c, schema):
            return c
    return candidates[0] if candidates else (1 if integer else 0.9)


def _pick_enum(values: list, m: Material):
    best, best_score = values[0], 0
    for v in values:
        if not isinstance(v, str):
            continue
        words = set(re.findall(r"[a-z0-9]+", v.lower()))
        score = len(words & m.match_terms)
        if score > best_score:
            best, best_score = v, score
    return best


def _merge_all_of(schema: dict, root) -> dict:
    merged = {k: v for k, v in schema.items() if k != "allOf"}
    for sub in schema.get("allOf") or []:
        sub = resolve(sub, root)
        if not isinstance(sub, dict):
            continue
        sub = _merge_all_of(sub, root)
        for k, v in sub.items():
            if k == "properties":
                merged["properties"] = {**(merged.get("properties") or {}), **v}
            elif k == "required":
                merged["required"] = list(dict.fromkeys([*(merged.get("required") or []), *v]))
            else:
                merged.setdefault(k, v)
    return merged


def _with_defs(schema: dict, root) -> dict:
    if not isinstance(root, dict):
        return schema
    defs = {k: root[k] for k in ("$defs", "definitions") if k in root}
    return {**defs, **schema}


def _is_simple(schema, root) -> bool:
    schema = resolve(schema, root)
    if not isinstance(schema, dict):
        return False
    t = schema.get("type")
    if isinstance(t, list):
        t = next((x for x in t if x != "null"), None)
    if t in ("string", "number", "integer", "boolean") or "enum" in schema or "const" in schema:
        return True
    if t == "array":
        items = resolve(schema.get("items") or {}, root)
        return isinstance(items, dict) and items.get("type") in ("string", "number", "integer", "boolean")
    return False


def build_instance(schema, m: Material, *, root=None, name: str = "", index: int = 0, depth: int = 0,
                   required_only: bool = False):
    """An instance of `schema` filled from `m` (may still fail validation for exotic schemas)."""
    root = schema if root is None else root
    schema = resolve(schema, root)
    if schema is True or schema == {} or not isinstance(schema, dict):
        return _string(name, {}, m, index)
    if depth > _MAX_DEPTH:
        return None
    if "allOf" in schema:
        schema = _merge_all_of(schema, root)
    if "const" in schema:
        return schema["const"]
    if schema.get("enum"):
        return _pick_enum(list(schema["enum"]), m)
    for key in ("anyOf", "oneOf"):
        if schema.get(key):
            base = {k: v for k, v in schema.items() if k != key}
            for branch in schema[key]:
                branch = resolve(branch, root)
                if not isinstance(branch, dict):
                    continue
                sub = {**base, **branch}
                inst = build_instance(sub, m, root=root, name=name, index=index, depth=depth + 1,
                                      required_only=required_only)
                if is_valid(inst, _with_defs(sub, root)):
                    return inst
            return build_instance(resolve(schema[key][0], root), m, root=root, name=name, index=index,
                                  depth=depth + 1)
    t = schema.get("type")
    if isinstance(t, list):
        t = next((x for x in t if x != "null"), "null")
    if t is None:
        if "properties" in schema or "required" in schema:
            t = "object"
        elif "items" in schema or "prefixItems" in schema:
            t = "array"
        elif any(k in schema for k in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")):
            t = "number"
        else:
            t = "string"
    if t == "object":
        props = properties(schema, root)
        required = [r for r in schema.get("required") or [] if isinstance(r, str)]
        names = list(required)
        if not required_only:
            names += [n for n in props if n not in names and _is_simple(props[n], root)]
        return {
            n: build_instance(props.get(n, {"type": "string"}), m, root=root, name=n, index=index,
                              depth=depth + 1, required_only=required_only)
            for n in names
        }
    if t == "array":
        return _array(schema, m, root, name, depth, required_only)
    if t == "string":
        return _string(name, schema, m, index)
    if t in ("number", "integer"):
        return _number(schema, t == "integer")
    if t == "boolean":
        return True
    if t == "null":
        return None
    return _string(name, schema, m, index)


def _array(schema: dict, m: Material, root, name: str, depth: int, required_only: bool) -> list:
    prefix = schema.get("prefixItems")
    items = schema.get("items")
    if isinstance(items, list):  # draft-04..2019 tuple form
        prefix, items = items, schema.get("additionalItems", {})
    items = {} if items is None or items is True else items
    lo = schema.get("minItems") or 0
    hi = schema.get("maxItems")
    item_schema = resolve(items, root) if isinstance(items, dict) else {}
    role = _role(name)
    if role == "source" and isinstance(item_schema, dict) and item_schema.get("type", "string") == "string":
        n = max(1, lo, len(m.labels) if m.labels else 1)
    elif role == "tag" and isinstance(item_schema, dict) and item_schema.get("type", "string") == "string":
        n = max(1, lo, min(3, len(m.words)))
    else:
        n = max(1, lo)
    if isinstance(hi, int):
        n = min(n, hi)
    out = []
    for i in range(n):
        if prefix and i < len(prefix):
            sub = prefix[i]
        else:
            sub = items
        singular = name[:-1] if name.endswith("s") else name
        out.append(build_instance(sub, m, root=root, name=singular, index=i, depth=depth + 1,
                                  required_only=required_only))
    if schema.get("uniqueItems"):
        out = [v for i, v in enumerate(out) if v not in out[:i]]
        for k in range(1, 50):
            if len(out) >= lo:
                break
            cand = build_instance(items, m, root=root, name=name, index=len(out) + k, depth=depth + 1)
            if cand in out and isinstance(cand, str):
                cand = f"{cand} ({len(out) + 1})"
            if cand not in out:
                out.append(cand)
    return out
