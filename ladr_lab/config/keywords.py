"""Schema typos: keywords a JSON Schema dialect does not know, found in every schema a ladder holds.

JSON Schema ignores a keyword it does not know, so `requried: [request]` or `minLenght: 1` validate
without a word and check nothing. This rule walks each requestMatch, match and jsonMatches to any
depth (properties' subschemas, items, allOf, $defs, ...) and warns about every unknown keyword with a
did-you-mean taken from the keywords of the schema's own dialect: its validator class's `VALIDATORS`
plus the annotation and core keywords its metaschema (and the vocabularies it names) declares, such as
`title`, `description`, `default`, `examples`, `$comment`. Keys starting with `x-` are extensions by
convention and are left alone.
"""
from __future__ import annotations

from collections.abc import Iterator
from functools import lru_cache
from typing import Any

from ..errors import ConfigError
from ..round.validators import dialect, metaschema_contents, metaschema_validator
from .rules import Site, problem, rule, suggest
from .schemas import parse_schema

# where a keyword's value holds subschemas: one schema, a list of schemas, or a mapping of names to schemas
_ONE = frozenset({"additionalProperties", "additionalItems", "contains", "propertyNames", "not", "if", "then",
                  "else", "unevaluatedItems", "unevaluatedProperties", "contentSchema"})
_LIST = frozenset({"allOf", "anyOf", "oneOf", "prefixItems"})
_MAP = frozenset({"properties", "patternProperties", "$defs", "definitions", "dependentSchemas", "dependencies"})


def _dialect(schema: dict):
    # a `$schema` that is not a string (an error the metaschema check reports) is read as the latest draft:
    # jsonschema's validator_for cannot look it up
    return dialect(schema if isinstance(schema.get("$schema", ""), str) else {})


@lru_cache(maxsize=16)
def _keywords_of(cls) -> frozenset[str]:
    from urllib.parse import urljoin

    meta = cls.META_SCHEMA
    base = meta.get("$id") or meta.get("id") or ""
    known = set(cls.VALIDATORS)
    todo, seen = [meta], set()
    while todo:
        part = todo.pop()
        known.update(part.get("properties") or {})
        for sub in part.get("allOf") or ():
            ref = sub.get("$ref") if isinstance(sub, dict) else None
            uri = urljoin(base, ref) if ref else None
            if uri and uri not in seen:
                seen.add(uri)
                try:
                    todo.append(metaschema_contents(uri))
                except Exception:  # a vocabulary the registry lacks: its keywords are simply not known
                    pass
    return frozenset(known)


def dialect_keywords(schema: dict) -> frozenset[str]:
    """Every keyword the schema's dialect knows (its `$schema`, or the latest draft when it has none)."""
    return _keywords_of(_dialect(schema))


def iter_unknown_keywords(schema: Any, known: frozenset[str] | None = None) -> Iterator[tuple[tuple, str, str | None]]:
    """(path of the subschema, the unknown keyword, the closest known keyword or None) for every unknown
    keyword, at any depth."""
    if not isinstance(schema, dict):
        return
    known = dialect_keywords(schema) if known is None else known
    todo: list[tuple[Any, tuple]] = [(schema, ())]
    while todo:
        node, path = todo.pop()
        if not isinstance(node, dict):
            continue
        for key, value in node.items():
            k = str(key)
            if k not in known and not k.startswith("x-"):
                yield path, k, suggest(k, sorted(known))
                continue
            if k in _ONE or (k == "items" and isinstance(value, dict)):
                todo.append((value, path + (key,)))
            elif (k in _LIST or k == "items") and isinstance(value, list):
                todo.extend((v, path + (key, i)) for i, v in enumerate(value))
            elif k in _MAP and isinstance(value, dict):
                todo.extend((v, path + (key, name)) for name, v in value.items() if isinstance(v, dict))


def _stubs(schema: dict) -> list[dict]:
    """Each subschema with its own subschemas replaced by `{}` (valid in every draft; `true` is not in
    draft 4): the metaschema checks every subschema
    against itself (2020-12's `$dynamicRef: "#meta"`, `#` in older drafts), so a schema is valid exactly
    when every stub is, and a stub unchanged by an edit need not be checked again."""
    out: list[dict] = []
    todo: list[Any] = [schema]
    while todo:
        node = todo.pop()
        if not isinstance(node, dict):
            continue
        stub: dict = {}
        for key, value in node.items():
            k = str(key)
            if k in _ONE or (k == "items" and isinstance(value, dict)):
                todo.append(value)
                stub[key] = {} if isinstance(value, dict) else value
            elif (k in _LIST or k == "items") and isinstance(value, list) and all(isinstance(v, dict)
                                                                                 for v in value):
                todo.extend(value)
                stub[key] = [{} for _ in value]
            elif k in _MAP and isinstance(value, dict) and all(isinstance(v, dict) for v in value.values()):
                todo.extend(value.values())
                stub[key] = {name: {} for name in value}
            else:
                stub[key] = value
        out.append(stub)
    return out


_STUB_OK: dict[tuple[type, str], bool] = {}
_META: dict[type, Any] = {}


def schema_ok(schema: dict) -> bool:
    """True when `schema` passes its metaschema, checked subschema by subschema with each result cached:
    a schema editor's next keystroke changes one subschema, so only that one is checked again (the
    2020-12 metaschema costs milliseconds per whole schema). False means: ask `metaschema_errors` why."""
    import json
    if "$schema" in schema and not isinstance(schema["$schema"], str):
        return False                     # before dialect(), which cannot read a URI that is not a string
    cls = dialect(schema)
    meta = _META.get(cls)
    if meta is None:
        meta = _META[cls] = metaschema_validator(cls)
    for stub in _stubs(schema):
        key = (cls, json.dumps(stub, sort_keys=True, default=repr))
        ok = _STUB_OK.get(key)
        if ok is None:
            if len(_STUB_OK) >= 4096:
                _STUB_OK.clear()
            ok = _STUB_OK[key] = meta.is_valid(stub)
        if not ok:
            return False
    return True


@rule("schema", "unknown-schema-keyword")
def _unknown_keywords(site: Site) -> Iterator[ConfigError]:
    schema = parse_schema(site.raw)
    if schema is None:
        return
    found = sorted(iter_unknown_keywords(schema), key=lambda t: (tuple(map(str, t[0])), t[1]))
    for path, key, near in found:
        where = "/".join(map(str, path))
        yield problem(f'{site.what} has an unknown keyword "{key}"' + (f" (at {where})" if where else "")
                      + ": JSON Schema ignores it, so it checks nothing", at=path + (key,), suggestion=near,
                      severity="warning")

__all__ = ["dialect_keywords", "iter_unknown_keywords", "schema_ok"]
