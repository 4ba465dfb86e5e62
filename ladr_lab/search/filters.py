"""Metadata filters over metatags: a tree of `and` / `or` / `not` over `{field, op, value}` leaves.

Operators: `eq ne gt gte lt lte in contains`. A field holding a list (a `string[]` metatag) matches
`eq`, `in` and `contains` when any element does. `gt`/`gte`/`lt`/`lte` compare numbers with numbers
and strings with strings (ISO dates order correctly as text); other pairs never match. `contains`
is slate's rule: a case-insensitive substring test on strings and list elements. A missing field
fails every operator except `ne`.

`load_filter` checks a tree and compiles it twice over: into a predicate on one document's metadata
(`Filter.__call__`, the rules above written out, which defines what a filter means) and into a plan
evaluated in bulk over a snapshot's `Columns` (`Filter.select`, what the engine runs): each leaf once
over every document, as set lookups, bisections and one substring scan, combined as boolean arrays, and
the `eq`/`in` leaves of one `or` (the `ne` leaves of one `and`) on one field grouped into one set test.
A property test checks that both give the same answer on random trees and documents.

Work is bounded: at most `MAX_DEPTH` levels and `MAX_NODES` nodes, and an `in` takes at most
`MAX_IN_VALUES` values, looked up in a set (JSON equality kept: `1` matches `1.0`, `true` never
matches `1`, `NaN` matches nothing); a `contains` needle is case-folded once, not once a document. The
bulk evaluation checks the request's time budget (budget.py) at every node.
"""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Mapping
from typing import Any

from .budget import check_budget
from .columns import Columns, json_key
from .errors import InvalidRequestParams

__all__ = ["Filter", "MAX_DEPTH", "MAX_IN_VALUES", "MAX_NODES", "OPS", "Predicate", "field_type", "load_filter"]

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


def _in_leaf(field: str, values: list) -> Predicate:
    keys: set[tuple] = set()
    others: list[Any] = []   # arrays and objects among the values (rare)
    for c in values:
        k = json_key(c)
        if k is not None:
            keys.add(k)
        elif isinstance(c, (list, dict)):
            others.append(c)   # NaN, which has no key either, equals nothing

    def pred(m: Mapping[str, Any]) -> bool:
        if field not in m:
            return False
        v = m[field]
        for x in v if isinstance(v, list) else (v,):
            k = json_key(x)
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


class Filter:
    """A checked filter tree: called on one document's metadata it says whether the filter lets it through;
    `select(snapshot)` answers the same for every document at once, in bulk (see the module docstring)."""

    __slots__ = ("_plan", "_pred", "tree")

    def __init__(self, tree: tuple) -> None:
        self.tree = tree   # the checked tree: ("and" | "or", [nodes]), ("not", node), ("leaf", field, op, value)
        self._pred: Predicate | None = None
        self._plan: tuple | None = None

    def __call__(self, meta: Mapping[str, Any]) -> bool:
        """Whether the filter lets a document with this metadata through."""
        if self._pred is None:
            self._pred = _predicate(self.tree)
        return self._pred(meta)

    def rows(self, columns: Columns) -> Any:
        """A numpy boolean array over `columns`' rows: true where the filter lets the document through."""
        if self._plan is None:
            self._plan = _plan(self.tree)
        return _rows(self._plan, columns, {})

    def select(self, snap: Any) -> set[str]:
        """The ids of the snapshot's documents the filter lets through."""
        columns = snap.columns()
        return columns.ids_of(self.rows(columns))


def _predicate(node: tuple) -> Predicate:
    """The checked tree as a predicate on one document's metadata: the definition the bulk plan must agree with."""
    kind = node[0]
    if kind == "leaf":
        return _leaf(node[1], node[2], node[3])
    if kind == "not":
        sub = _predicate(node[1])
        return lambda m: not sub(m)
    preds = [_predicate(x) for x in node[1]]
    if kind == "and":
        return lambda m: all(p(m) for p in preds)
    return lambda m: any(p(m) for p in preds)


def _plan(node: tuple) -> tuple:
    """The checked tree as a plan for `_rows`: leaves as set tests ("any"/"none" of values on a field), bisections
    ("range") and scans ("contains"); an `or`'s eq/in leaves (an `and`'s ne leaves) on one field grouped."""
    kind = node[0]
    if kind == "leaf":
        _, field, op, value = node
        if op == "eq":
            return ("any", field, [value])
        if op == "ne":
            return ("none", field, [value])
        if op == "in":
            return ("any", field, list(value))
        if op == "contains":
            return ("contains", field, op, value)
        return ("range", field, op, value if not isinstance(value, float) or value == value else None)
    if kind == "not":
        return ("not", _plan(node[1]))
    subs = [_plan(x) for x in node[1]]
    group = "any" if kind == "or" else "none"
    values: dict[str, list] = defaultdict(list)
    for sub in subs:
        if sub[0] == group:
            values[sub[1]].extend(sub[2])
    out, done = [], set()
    for sub in subs:
        if sub[0] != group:
            out.append(sub)
        elif sub[1] not in done:   # one set test per field, in the place of its first leaf
            done.add(sub[1])
            out.append((group, sub[1], values[sub[1]]))
    return (kind, out)


def _rows(node: tuple, cols: Columns, memo: dict) -> Any:
    """Evaluate a plan node over every row (a fresh array each time: callers combine in place)."""
    check_budget("filter")
    kind = node[0]
    if kind in ("any", "none"):
        col = cols.column(node[1])
        rows = col.rows(col.eq_indices(node[2], _eq))
        return rows if kind == "any" else ~rows
    if kind in ("range", "contains"):
        got = memo.get(node)   # the same leaf twice is evaluated once
        if got is None:
            col = cols.column(node[1])
            got = memo[node] = col.contains_rows(node[3]) if kind == "contains" else col.range_rows(node[2], node[3])
        return got.copy()
    if kind == "not":
        return ~_rows(node[1], cols, memo)
    subs = node[1]
    out = _rows(subs[0], cols, memo)
    for sub in subs[1:]:
        if kind == "and":
            if not out.any():
                break   # nothing left to narrow
            out &= _rows(sub, cols, memo)
        else:
            if out.all():
                break   # everything is in already
            out |= _rows(sub, cols, memo)
    return out


def _where(path: tuple | None) -> str:
    """A node's place for a message (`.and[2].not`), from the chain of (parent, step) pairs `load_filter` keeps."""
    steps = []
    while path is not None:
        path, step = path
        steps.append(step)
    return "".join(reversed(steps))


def load_filter(tree: Any, fields: Mapping[str, str] | None = None) -> Filter:
    """Check a filter tree (fields against `fields` when given) and compile it into a `Filter`: a predicate over a
    hit's metadata that can also select a snapshot's documents in bulk; InvalidRequestParams names the first
    problem and where it is."""
    count = [0]

    def build(node: Any, path: tuple | None, depth: int) -> tuple:
        count[0] += 1
        if depth > MAX_DEPTH or count[0] > MAX_NODES:
            raise InvalidRequestParams(f"filter is too large (at most {MAX_DEPTH} levels, {MAX_NODES} nodes)")
        if not isinstance(node, dict) and not isinstance(node, Mapping):
            raise InvalidRequestParams(f"filter{_where(path)} must be an object")
        if len(node) == 1:
            op = next(iter(node))
            if op == "and" or op == "or":
                items = node[op]
                if not isinstance(items, list) or not items:
                    raise InvalidRequestParams(f"filter{_where(path)}.{op} must be a non-empty array")
                return (op, [build(x, (path, f".{op}[{i}]"), depth + 1) for i, x in enumerate(items)])
            if op == "not":
                return ("not", build(node["not"], (path, ".not"), depth + 1))
        if len(node) != 3 or "field" not in node or "op" not in node or "value" not in node:
            raise InvalidRequestParams(
                f"filter{_where(path)} must be {{and: [...]}}, {{or: [...]}}, {{not: {{...}}}} or "
                f"{{field, op, value}} (got keys {sorted(map(str, node))})")
        field, op, value = node["field"], node["op"], node["value"]
        if not isinstance(field, str) or not field:
            raise InvalidRequestParams(f"filter{_where(path)}.field must be a non-empty string")
        if fields is not None and field not in fields:
            known = ", ".join(sorted(fields)) or "none"
            raise InvalidRequestParams(f'filter{_where(path)}.field "{field}" is not a filter field '
                                       f"(filter.fields: {known})")
        if op not in OPS:
            raise InvalidRequestParams(f'filter{_where(path)}.op must be one of {", ".join(OPS)} (got {op!r})')
        if op == "in" and not isinstance(value, list):
            raise InvalidRequestParams(f"filter{_where(path)}.value must be an array for op in")
        if op == "in" and len(value) > MAX_IN_VALUES:
            raise InvalidRequestParams(f'filter{_where(path)}.value holds {len(value)} values for op in on field '
                                       f'"{field}"; at most {MAX_IN_VALUES} are allowed (filter.maxInValues)')
        if op in ("gt", "gte", "lt", "lte") and not (_num(value) or isinstance(value, str)):
            raise InvalidRequestParams(f"filter{_where(path)}.value must be a number or a string for op {op}")
        if op == "contains" and not isinstance(value, str):
            raise InvalidRequestParams(f"filter{_where(path)}.value must be a string for op contains")
        return ("leaf", field, op, value)

    return Filter(build(tree, None, 0))


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
