"""jsonschema validators as ladr_lab applies a ladder's schemas: never fetching, never hanging.

Two things a schema pasted from somewhere could do to a run are taken away here, for the load-time checks
(config/schemas.py) and the judging of outputs (engine/judging.py) alike:

- **No retrieval.** A `$ref` resolves inside the schema (or to a metaschema jsonschema knows); a remote or
  file reference is never fetched: the registry has no retrieve function, so it is unresolvable.
- **Patterns under a time limit.** `pattern` and `patternProperties` run on the `regex` module with a
  timeout (a pattern such as `^(a+)+$` backtracks for ever on `aaaa…!`); a search that times out counts
  as not matching, and the error says why.
"""
from __future__ import annotations

from typing import Any

PATTERN_SECONDS = 0.25

_CLASSES: dict[Any, Any] = {}


class PatternTimeout(Exception):
    """A `pattern` search ran past PATTERN_SECONDS."""


def search(pattern: str, text: str) -> bool:
    """`re.search` semantics under PATTERN_SECONDS; raises PatternTimeout when the search runs past it."""
    import regex
    try:
        return regex.search(pattern, text, timeout=PATTERN_SECONDS) is not None
    except TimeoutError:
        raise PatternTimeout(pattern) from None


def _timeout_message(pattern: str) -> str:
    return (f"pattern {pattern!r} took longer than {PATTERN_SECONDS} s on this value (catastrophic backtracking?): "
            "taken as not matching")


def _pattern(validator: Any, patrn: str, instance: Any, schema: dict):
    from jsonschema.exceptions import ValidationError
    if not validator.is_type(instance, "string"):
        return
    try:
        found = search(patrn, instance)
    except PatternTimeout:
        yield ValidationError(_timeout_message(patrn))
        return
    if not found:
        yield ValidationError(f"{instance!r} does not match {patrn!r}")


def _pattern_properties(validator: Any, pattern_properties: dict, instance: Any, schema: dict):
    from jsonschema.exceptions import ValidationError
    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in pattern_properties.items():
        for k, v in instance.items():
            try:
                found = search(pattern, k)
            except PatternTimeout:
                yield ValidationError(_timeout_message(pattern), path=[k], schema_path=[pattern])
                continue
            if found:
                yield from validator.descend(v, subschema, path=k, schema_path=pattern)


def validator_class(schema: dict) -> Any:
    """The jsonschema class for `schema` (by its `$schema`, else the latest draft), with bounded patterns."""
    from jsonschema.validators import extend, validator_for
    base = validator_for(schema, default=validator_for({}))
    cls = _CLASSES.get(base)
    if cls is None:
        cls = _CLASSES[base] = extend(base, {"pattern": _pattern, "patternProperties": _pattern_properties})
    return cls


def make_validator(schema: dict) -> Any:
    """A validator for `schema` that never fetches a reference and never backtracks without end."""
    from referencing import Registry
    return validator_class(schema)(schema, registry=Registry())


__all__ = ["PATTERN_SECONDS", "PatternTimeout", "make_validator", "search", "validator_class"]
