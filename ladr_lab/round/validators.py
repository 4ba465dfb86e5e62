"""jsonschema validators as ladr_lab applies a ladder's schemas: never fetching, never hanging.

Two things a schema pasted from somewhere could do to a run are taken away here, for the load-time checks
(config/schemas.py) and the judging of outputs (round/verdict.py) alike:

- **No retrieval.** A `$ref` resolves inside the schema (or to a metaschema jsonschema knows); a remote or
  file reference is never fetched: the registry has no retrieve function, so it is unresolvable.
- **Patterns under a time limit.** `pattern` and `patternProperties` run on the `regex` module with a
  timeout (a pattern such as `^(a+)+$` backtracks for ever on `aaaa…!`); a search that times out counts
  as not matching, and the error says why.

This module (with `verdict.py`, which reads jsonschema's errors) is the only importer of jsonschema (and of
`referencing` and `jsonschema_specifications`): the config rules check a schema against its metaschema and
its `$ref`s through `metaschema_validator`, `dialect`, `metaschema_contents` and `ref_lookup`, the offline
model tests its candidates with `conforms`.
"""
from __future__ import annotations

from collections.abc import Callable
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
    from jsonschema.validators import extend
    base = dialect(schema)
    cls = _CLASSES.get(base)
    if cls is None:
        cls = _CLASSES[base] = extend(base, {"pattern": _pattern, "patternProperties": _pattern_properties})
    return cls


def make_validator(schema: dict) -> Any:
    """A validator for `schema` that never fetches a reference and never backtracks without end."""
    from referencing import Registry
    return validator_class(schema)(schema, registry=Registry())


def dialect(schema: dict) -> Any:
    """jsonschema's validator class of the schema's dialect (its `$schema`, else the latest draft)."""
    from jsonschema.validators import validator_for
    return validator_for(schema, default=validator_for({}))


def metaschema_validator(cls: Any) -> Any:
    """A validator of schemas against the metaschema of dialect `cls` (see `dialect`), checking the one format a
    metaschema asks for that would otherwise fail only at run time ("regex", for `pattern`)."""
    from jsonschema import FormatChecker
    return cls(cls.META_SCHEMA, format_checker=FormatChecker(formats=("regex",)))


def metaschema_contents(uri: str) -> Any:
    """The contents of a metaschema (or vocabulary) jsonschema ships, by its URI; raises when it has none."""
    from jsonschema_specifications import REGISTRY
    return REGISTRY.contents(uri)


class UnresolvableRef(Exception):
    """A `$ref` that resolves neither inside its schema nor to a metaschema jsonschema ships."""


def ref_lookup(schema: dict) -> Callable[[str], None]:
    """A function that looks a `$ref` of `schema` up as its validator would (inside the schema or a shipped
    metaschema, never fetching): it raises UnresolvableRef when the reference does not resolve, and other
    exceptions when it cannot be read (a malformed pointer or URI)."""
    from jsonschema_specifications import REGISTRY
    from referencing import Registry
    from referencing.exceptions import Unresolvable
    from referencing.jsonschema import DRAFT202012, specification_with
    uri = schema.get("$schema")
    spec = specification_with(uri, default=DRAFT202012) if isinstance(uri, str) else DRAFT202012
    resource = spec.create_resource(schema)
    base = resource.id() or "urn:ladr-lab:schema"
    resolver = REGISTRY.combine(Registry().with_resource(base, resource)).resolver(base_uri=base)

    def lookup(ref: str) -> None:
        try:
            resolver.lookup(ref)
        except Unresolvable as exc:
            raise UnresolvableRef(ref) from exc

    return lookup


def conforms(instance: Any, schema: Any) -> bool:
    """True when `instance` validates against `schema` (a broken schema validates nothing)."""
    try:
        from jsonschema.validators import validator_for
        return validator_for(schema)(schema).is_valid(instance)
    except Exception:  # an invalid or unsupported schema: treat as "does not match"
        return False


__all__ = ["PATTERN_SECONDS", "PatternTimeout", "UnresolvableRef", "conforms", "dialect", "make_validator",
           "metaschema_contents", "metaschema_validator", "ref_lookup", "search", "validator_class"]
