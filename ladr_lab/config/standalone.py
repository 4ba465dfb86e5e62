"""Standalone JSON Schemas: a schema checked on its own, outside a ladder (the schema editor's text, the edited
schemas `rejudge` is given), with the checks the ladder rules make (`schemas.py`, `keywords.py`).

`iter_schema_problems` yields every problem as a ConfigError named by the ladder rule's code: a syntax error
(`yaml-syntax`, `schema-json`), a schema that is not a non-empty mapping (`schema-type`, `empty-schema`), each
error its metaschema finds (`invalid-schema`, a misspelt `type` with a did-you-mean), a `$ref` that does not
resolve inside the schema (`schema-ref`), then each keyword its dialect does not know (`unknown-schema-keyword`,
a warning). Given text, each problem carries the line and column of the part it is about.
"""
from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

from ..errors import ConfigError
from .keywords import iter_unknown_keywords, schema_ok
from .reader import MAX_DEPTH, Positions, load_yaml
from .schemas import TYPE_NAMES, metaschema_errors, reference_problems, too_deep, type_suggestion, value_at

__all__ = ["NOT_A_SCHEMA", "iter_schema_problems", "read_schema"]

NOT_A_SCHEMA = "the schema must be a non-empty mapping (a JSON Schema object)"
FORMATS = ("yaml", "json")

_REFS_CHECKED: dict[str, tuple[tuple[tuple, str], ...]] = {}



def read_schema(text: str, format: str = "yaml") -> tuple[Any, Positions | None, ConfigError | None]:
    """A schema's text read as YAML or JSON: (value, positions, None), or (None, None, the syntax error at its
    line). JSON text is located through the YAML reader (JSON is YAML); when that cannot read it, positions
    are None."""
    fmt = format.lower()
    if fmt not in FORMATS:
        raise ValueError(f"format must be yaml or json (got {format!r})")
    if fmt == "json":
        try:
            value = json.loads(text)
        except RecursionError:
            return None, None, ConfigError(f"not JSON: nested deeper than {MAX_DEPTH} levels", rule="schema-json")
        except ValueError as exc:
            line, column = getattr(exc, "lineno", None), getattr(exc, "colno", None)
            return None, None, ConfigError(f"not JSON: {getattr(exc, 'msg', exc)}" if line else f"not JSON: {exc}",
                                           line=line, column=column, rule="schema-json")
        if too_deep(value):
            return None, None, ConfigError(f"not JSON: nested deeper than {MAX_DEPTH} levels", rule="schema-json")
        try:
            return value, load_yaml(text)[1], None
        except ConfigError:
            return value, None, None
    try:
        value, pos = load_yaml(text)
    except ConfigError as exc:
        return None, None, exc
    return value, pos, None


def _references(schema: dict) -> tuple[tuple[tuple, str], ...]:
    # cached by content, as metaschema_errors is: the editor checks again on every keystroke
    key = json.dumps(schema, sort_keys=True, default=repr)
    found = _REFS_CHECKED.get(key)
    if found is None:
        if len(_REFS_CHECKED) >= 512:
            _REFS_CHECKED.clear()
        found = _REFS_CHECKED[key] = tuple(reference_problems(schema))
    return found


def _where(path: tuple) -> str:
    return f" (at {'/'.join(map(str, path))})" if path else ""


def iter_schema_problems(schema: Any, *, format: str = "yaml", positions: Positions | None = None,
                         refs: bool = True) -> Iterator[ConfigError]:
    """Every problem of a standalone JSON Schema, errors first, then unknown keywords as warnings.

    `schema` is text (YAML, or JSON with `format="json"`), whose problems carry their line and column, or a
    parsed value (a mapping), located with `positions` when given. `refs=False` leaves out the `$ref` check."""
    if isinstance(schema, str):
        schema, positions, error = read_schema(schema, format)
        if error is not None:
            yield error
            return

    def at(path: tuple, *, key: bool = False) -> dict:
        lc = positions.of(tuple(path), key=key) if positions is not None else None
        return {"path": tuple(path), "line": lc[0] if lc else None, "column": lc[1] if lc else None}

    if not isinstance(schema, Mapping) or not schema:
        yield ConfigError(NOT_A_SCHEMA, rule="schema-type" if not isinstance(schema, Mapping) else "empty-schema")
        return
    value = dict(schema)
    problems = () if schema_ok(value) else metaschema_errors(value)
    for path, message in problems:
        path = tuple(path)
        hint = type_suggestion(value, path)
        if hint or (path and path[-1] == "type"):
            message = f"{value_at(value, path)!r} is not a JSON Schema type ({', '.join(TYPE_NAMES)})" \
                + (f'; did you mean "{hint}"?' if hint else "")
        yield ConfigError(message + _where(path), rule="invalid-schema", suggestion=hint, **at(path))
    if refs and not problems:
        for path, message in _references(value):
            yield ConfigError(message + _where(path), rule="schema-ref", **at(path))
    for path, key, hint in iter_unknown_keywords(value):
        yield ConfigError(f'unknown keyword "{key}"' + (f' (did you mean "{hint}"?)' if hint else "")
                          + " — JSON Schema ignores it", rule="unknown-schema-keyword", suggestion=hint,
                          severity="warning", **at(tuple(path) + (key,), key=True))
