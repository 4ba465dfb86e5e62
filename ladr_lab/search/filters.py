"""Metadata filters over metatags: a tree of `and` / `or` / `not` over `{field, op, value}` leaves.

Operators: `eq ne gt gte lt lte in contains`. A field holding a list (a `string[]` metatag) matches
`eq`, `in` and `contains` when any element does. `gt`/`gte`/`lt`/`lte` compare numbers with numbers
and strings with strings (ISO dates order correctly as text); other pairs never match. `contains`
is slate's rule: a case-insensitive substring test on strings and list elements. A missing field
fails every operator except `ne`.

Work is bounded: at most `MAX_DEPTH` levels and `MAX_NODES` nodes, and an `in` takes at most
`MAX_IN_VALUES` values, looked up in a set (JSON equality kept: `1` matches `1.0`, `true` never
matches `1`, `NaN` matches nothing), so a document costs a constant per leaf whatever the values; a
`contains` needle is case-folded once, not once a document.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from .errors import InvalidRequestParams

__all__ = ["MAX_DEPTH", "MAX_IN_VALUES", "MAX_NODES", "OPS", "Predicate", "field_type", "load_filter"]

OPS = ("eq", "ne", "gt", "gte", "lt", "lte", "in", "contains")
MAX_DEPTH = 32
MAX_NODES = 1000
MAX_IN_VALUES = 1024   # values of one `in`; matched through a set, so each document costs O(1) per leaf

Predicate = Callable[[Mapping[str, Any]], bool]


def _num(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _cmp(a: Any, b: Any, op: str) -> bool:
    if not ((_num(a) and _num(b)) or (isinstance(a, str) and isinstance(b, str))):
        return False
    if op == "gt":
        return a > b
    if op == "gte":
        return a >= b
    if op == "lt":
        return a < b
    return a <= b


def _eq(a: Any, b: Any) -> bool:
    # JSON equality: 1 == 1.0, but True is not 1.
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    return a == b


def _leaf(field: str, op: str, value: Any) -> Predicate:
    if op == "eq":
        return lambda m: field in m and (any(_eq(x, value) for x in m[field]) if isinstance(m[field], list)
                                         else _eq(m[field], value))
    if op == "ne":
        return lambda m: field not in m or not (any(_eq(x, value) for x in m[field])
                                                if isinstance(m[field], list) else _eq(m[field], value))
    if op == "in":
        return _in_leaf(field, value)
    if op == "contains":
        return _contains_leaf(field, str(value))
    return lambda m: field in m and not isinstance(m[field], list) and _cmp(m[field], value, op)


def _key(v: Any) -> tuple | None:
    """A hashable key with JSON equality (`1` and `1.0` share one, `true` and `1` do not); None when
    `v` is an array or an object (compared one by one, as before)."""
    if isinstance(v, bool):
        return (1, v)
    if isinstance(v, (int, float)):
        return (2, v)
    if isinstance(v, str):
        return (3, v)
    if v is None:
        return (0, None)
    return None


def _in_leaf(field: str, values: list) -> Predicate:
    keys: set[tuple] = set()
    others: list[Any] = []   # arrays and objects among the values (rare)
    for c in values:
        if isinstance(c, float) and c != c:
            continue  # NaN equals nothing
        k = _key(c)
        if k is None:
            others.append(c)
        else:
            keys.add(k)

    def pred(m: Mapping[str, Any]) -> bool:
        if field not in m:
            return False
        v = m[field]
        for x in v if isinstance(v, list) else (v,):
            k = _key(x)
            if k is not None:
                if k in keys:
                    return True
            elif others and any(_eq(x, c) for c in others):
                return True
        return False

    return pred


def _contains_leaf(field: str, value: str) -> Predicate:
    # slate's contains_match, with the needle folded once rather than once a document (a long needle would
    # otherwise cost its length for every document)
    needle = value.casefold()

    def pred(m: Mapping[str, Any]) -> bool:
        if field not in m:
            return False
        v = m[field]
        if isinstance(v, str):
            return needle in v.casefold()
        if isinstance(v, list):
            return any(isinstance(x, str) and needle in x.casefold() for x in v)
        return True   # contains_match ignores (passes) numbers, booleans and objects

    return pred


def load_filter(tree: Any, fields: Mapping[str, str] | None = None) -> Predicate:
    """Check a filter tree (fields against `fields` when given) and compile it into a predicate over a
    hit's metadata; InvalidRequestParams names the first problem and where it is."""
    count = [0]

    def build(node: Any, path: str, depth: int) -> Predicate:
        count[0] += 1
        if depth > MAX_DEPTH or count[0] > MAX_NODES:
            raise InvalidRequestParams(f"filter is too large (at most {MAX_DEPTH} levels, {MAX_NODES} nodes)")
        if not isinstance(node, Mapping):
            raise InvalidRequestParams(f"filter{path} must be an object")
        keys = set(node)
        if keys in ({"and"}, {"or"}):
            op = next(iter(keys))
            items = node[op]
            if not isinstance(items, list) or not items:
                raise InvalidRequestParams(f"filter{path}.{op} must be a non-empty array")
            subs = [build(x, f"{path}.{op}[{i}]", depth + 1) for i, x in enumerate(items)]
            if op == "and":
                return lambda m: all(p(m) for p in subs)
            return lambda m: any(p(m) for p in subs)
        if keys == {"not"}:
            sub = build(node["not"], f"{path}.not", depth + 1)
            return lambda m: not sub(m)
        if keys != {"field", "op", "value"}:
            raise InvalidRequestParams(
                f"filter{path} must be {{and: [...]}}, {{or: [...]}}, {{not: {{...}}}} or "
                f"{{field, op, value}} (got keys {sorted(map(str, keys))})")
        field, op, value = node["field"], node["op"], node["value"]
        if not isinstance(field, str) or not field:
            raise InvalidRequestParams(f"filter{path}.field must be a non-empty string")
        if fields is not None and field not in fields:
            known = ", ".join(sorted(fields)) or "none"
            raise InvalidRequestParams(f'filter{path}.field "{field}" is not a filter field (filter.fields: {known})')
        if op not in OPS:
            raise InvalidRequestParams(f'filter{path}.op must be one of {", ".join(OPS)} (got {op!r})')
        if op == "in" and not isinstance(value, list):
            raise InvalidRequestParams(f"filter{path}.value must be an array for op in")
        if op == "in" and len(value) > MAX_IN_VALUES:
            raise InvalidRequestParams(f'filter{path}.value holds {len(value)} values for op in on field "{field}"; '
                                       f"at most {MAX_IN_VALUES} are allowed (filter.maxInValues)")
        if op in ("gt", "gte", "lt", "lte") and not (_num(value) or isinstance(value, str)):
            raise InvalidRequestParams(f"filter{path}.value must be a number or a string for op {op}")
        if op == "contains" and not isinstance(value, str):
            raise InvalidRequestParams(f"filter{path}.value must be a string for op contains")
        return _leaf(field, op, value)

    return build(tree, "", 0)


def field_type(value: Any) -> str:
    """The metatag type name of a JSON value (as `filter.fields` advertises it)."""
    if isinstance(value, bool):
        return "boolean"
    if _num(value):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "string[]" if all(isinstance(x, str) for x in value) else "array"
    return "object"
