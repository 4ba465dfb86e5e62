"""JSON Schemas in a ladder (requestMatch, match, jsonMatches): parsed once, then checked as parsed.

A schema may be written as a YAML mapping or as a JSON string; every check below runs on the parsed
value, so `requestMatch: '{}'` is as empty as `requestMatch: {}`.
"""
from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from ..errors import ConfigError
from ..round.validators import UnresolvableRef, dialect, make_validator, metaschema_validator, ref_lookup
from .reader import MAX_DEPTH
from .rules import Site, problem, rule

_UNREAD = object()


def too_deep(value: Any) -> bool:
    """True when collections nest deeper than the reader allows (iteratively: the value may be very deep)."""
    todo = [(value, 1)]
    while todo:
        v, depth = todo.pop()
        if isinstance(v, (dict, list)):
            if depth > MAX_DEPTH:
                return True
            todo.extend((x, depth + 1) for x in (v.values() if isinstance(v, dict) else v))
    return False


def _parse(raw: Any) -> tuple[Any, str | None]:
    """(the parsed schema, or _UNREAD; why a string did not give a usable value)."""
    if isinstance(raw, str) and raw != "":
        try:
            value = json.loads(raw)
        except ValueError as exc:
            return _UNREAD, f"not valid JSON: {exc}"
        except RecursionError:
            return _UNREAD, f"nested deeper than {MAX_DEPTH} levels"
        if too_deep(value):
            return _UNREAD, f"nested deeper than {MAX_DEPTH} levels"
        return value, None
    return raw, None


def _empty(value: Any) -> bool:
    return value is None or value == {} or value == ""


def parse_schema(raw: Any) -> dict | None:
    """The schema as a mapping (a JSON string parsed), or None when it is empty, not JSON or not a mapping."""
    value, _ = _parse(raw)
    if value is _UNREAD or _empty(value) or not isinstance(value, dict):
        return None
    return value


@rule("schema", "empty-schema")
def _empty_schema(site: Site) -> Iterator[ConfigError]:
    value, _ = _parse(site.raw)
    if value is not _UNREAD and _empty(value):
        yield problem(f"{site.what} must be a non-empty JSON Schema.")


@rule("schema", "schema-json")
def _schema_json(site: Site) -> Iterator[ConfigError]:
    value, error = _parse(site.raw)
    if value is _UNREAD:
        yield problem(f"{site.what} is {error}")


@rule("schema", "schema-type")
def _schema_type(site: Site) -> Iterator[ConfigError]:
    value, _ = _parse(site.raw)
    if value is not _UNREAD and not _empty(value) and not isinstance(value, dict):
        yield problem(f"{site.what} must be a non-empty JSON Schema (a mapping).")


_CHECKED: dict[str, tuple[tuple[tuple, str], ...]] = {}


def metaschema_errors(schema: dict) -> tuple[tuple[tuple, str], ...]:
    """(path in the schema, message) for each error its metaschema finds.

    Cached by content: a schema shared through a YAML alias, or used by many steps, is checked once
    (a check costs milliseconds: the 2020-12 metaschema is elaborate).
    """
    key = json.dumps(schema, sort_keys=True, default=repr)
    found = _CHECKED.get(key)
    if found is None:
        if len(_CHECKED) >= 512:
            _CHECKED.clear()
        found = _CHECKED[key] = _check_schema(schema)
    return found


def _check_schema(schema: dict) -> tuple[tuple[tuple, str], ...]:
    uri = schema.get("$schema")
    if "$schema" in schema and not isinstance(uri, str):
        return ((("$schema",), "$schema must be a metaschema URI (a string)"),)
    cls = dialect(schema)  # an unknown $schema is checked as the latest draft
    out: dict[tuple[tuple, str], None] = {}
    for err in metaschema_validator(cls).iter_errors(schema):
        out[(tuple(err.path), err.message)] = None
    return tuple(out)


TYPE_NAMES = ("array", "boolean", "integer", "null", "number", "object", "string")


def value_at(schema: Any, path: tuple) -> Any:
    """The part of `schema` at `path` (None when there is none)."""
    for part in path:
        try:
            schema = schema[part]
        except (KeyError, IndexError, TypeError):
            return None
    return schema


def type_suggestion(schema: dict, path: tuple) -> str | None:
    """The type name nearest to a misspelt one (`objekt` → `object`) when `path` points at a `type`."""
    if not path:
        return None
    in_type = path[-1] == "type" or (len(path) > 1 and path[-2] == "type" and isinstance(path[-1], int))
    value = value_at(schema, path)
    if not in_type or not isinstance(value, str) or value in TYPE_NAMES:
        return None
    from .rules import suggest
    return suggest(value.lower(), TYPE_NAMES)


@rule("schema", "invalid-schema")
def _metaschema(site: Site) -> Iterator[ConfigError]:
    schema = parse_schema(site.raw)
    if schema is None:
        return
    for sub, message in metaschema_errors(schema):
        near = type_suggestion(schema, sub)
        if near is None and sub and sub[-1] == "type" and isinstance(value_at(schema, sub), list):
            # a list of types: name the misspelt entry, not the whole list
            for i, name in enumerate(value_at(schema, sub)):
                near = type_suggestion(schema, sub + (i,))
                if near is not None:
                    message = f"{name!r} is not a JSON Schema type"
                    break
        elif near is not None:
            message = f"{value_at(schema, sub)!r} is not a JSON Schema type (one of {', '.join(TYPE_NAMES)})"
        yield problem(f"{site.what} is not a valid JSON Schema: {message}"
                      + (f" (at {'/'.join(map(str, sub))})" if sub else ""), at=sub, suggestion=near)

_PROBES: tuple = (None, {}, [], "", 0, True, {"request": {}})


def _refs(value: Any, at: tuple = ()) -> Iterator[tuple[tuple, str]]:
    """(path, reference) of every `$ref` string, leaving out subschemas with their own `$id` (another base)."""
    todo = [(value, at)]
    while todo:
        v, path = todo.pop()
        if isinstance(v, dict):
            if path and "$id" in v:
                continue
            if isinstance(v.get("$ref"), str):
                yield path + ("$ref",), v["$ref"]
            todo.extend((x, path + (k,)) for k, x in v.items() if k not in ("const", "enum", "default", "examples"))
        elif isinstance(v, list):
            todo.extend((x, path + (i,)) for i, x in enumerate(v))


def reference_problems(schema: dict) -> list[tuple[tuple, str]]:
    """(path, message) for each `$ref` that does not resolve inside the schema (or to a metaschema), and for
    references that lead back to themselves without end (found by applying the schema to a few values)."""
    lookup = ref_lookup(schema)
    out: list[tuple[tuple, str]] = []
    for path, ref in _refs(schema):
        try:
            lookup(ref)
        except UnresolvableRef:
            out.append((path, f"$ref {ref!r} does not resolve inside this schema (a ladder's schemas never fetch "
                              "other documents: put the definition under $defs and refer to it as #/$defs/NAME)"))
        except Exception as exc:   # a malformed pointer or URI
            out.append((path, f"$ref {ref!r} cannot be read: {exc}"))
    if out:
        return out
    v = make_validator(schema)
    for probe in _PROBES:
        try:
            v.is_valid(probe)
        except RecursionError:
            return [((), "its $refs lead back to themselves without end (validating any value would never finish)")]
        except Exception:   # noqa: S112 - a probe that cannot be judged says nothing about cycles
            continue
    return out


@rule("schema", "schema-ref")
def _references(site: Site) -> Iterator[ConfigError]:
    schema = parse_schema(site.raw)
    if schema is None or metaschema_errors(schema):
        return
    for sub, message in reference_problems(schema):
        yield problem(f"{site.what} is not usable: {message}", at=sub)


__all__ = ["TYPE_NAMES", "metaschema_errors", "parse_schema", "reference_problems", "too_deep", "type_suggestion",
           "value_at"]
