"""The documents' metadata as columns, so a filter leaf is evaluated once over every document.

A filter used to run its tree once per document (a 1,000-node tree over 3,000 documents: three million
Python calls, seconds). `Columns` holds a snapshot's documents in one order and, per field, what the
filter's operators need, built on first use and then kept with the snapshot (which never changes):

- `postings`: for each value (a scalar, or an element of a list value) the rows holding it, keyed with
  JSON equality (`json_key`: `1` and `1.0` share a key, `true` and `1` do not; `NaN` has none, so it equals
  nothing); arrays and objects, which have no key, are kept apart (`others`) and compared one by one;
- the rows' numbers and strings sorted, and each row's place in that order (`gt`/`gte`/`lt`/`lte` are a
  bisection, then one comparison of the places);
- the strings case-folded, each distinct one once (metadata repeats its values), joined into one text:
  `contains` is a substring scan in C, one `find` per matching string.

Each operator answers a numpy boolean array over the rows (`rows(eq_indices(...))`, `range_rows`,
`contains_rows`); filters.py combines them (`&`, `|`, `~`). The rule of each operator is filters.py's, and
a property test checks that evaluating in bulk equals evaluating document by document.
"""
from __future__ import annotations

import bisect
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

__all__ = ["Column", "Columns", "json_key"]

_SEP = "\x00"   # between the case-folded strings of a contains scan (a needle holding it is scanned row by row)


def json_key(v: Any) -> tuple | None:
    """A hashable key with JSON equality (`1` and `1.0` share one, `true` and `1` do not); None when `v` is an
    array or an object (compared one by one) or NaN (equal to nothing)."""
    if isinstance(v, bool):
        return (1, v)
    if isinstance(v, (int, float)):
        return None if v != v else (2, v)
    if isinstance(v, str):
        return (3, v)
    if v is None:
        return (0, None)
    return None


def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and v == v


def _positions(n: int, rows: list[int]) -> Any:
    """Per row, its place in a sorted order of `rows` (-1 for a row not in it)."""
    import numpy as np

    place: Any = np.full(n, -1, dtype=np.intp)
    if rows:
        place[rows] = np.arange(len(rows), dtype=np.intp)
    return place


class Column:
    """One field over every row (see the module docstring)."""

    __slots__ = ("_joined", "_owners", "_starts", "_texts", "n", "num_place", "nums", "others", "passes",
                 "postings", "str_place", "strs")

    def __init__(self, n: int, values: Iterable[tuple[int, Any]]) -> None:
        import numpy as np

        self.n = n
        self.postings: dict[tuple, list[int]] = {}
        self.others: list[tuple[int, Any]] = []       # (row, an array or object value or element)
        nums: list[tuple[Any, int]] = []
        strs: list[tuple[str, int]] = []
        texts: list[tuple[int, str]] = []              # (row, a string value or element): contains
        passes: list[int] = []                         # rows whose value contains passes whatever the needle
        for row, v in values:
            if isinstance(v, list):
                for x in v:
                    self._post(row, x)
                    if isinstance(x, str):
                        texts.append((row, x))
                continue
            self._post(row, v)
            if isinstance(v, str):
                strs.append((v, row))
                texts.append((row, v))
            else:
                passes.append(row)   # contains ignores (passes) numbers, booleans, null and objects
                if _number(v):
                    nums.append((v, row))
        nums.sort(key=lambda t: t[0])
        strs.sort(key=lambda t: t[0])
        self.nums = [v for v, _ in nums]
        self.num_place = _positions(n, [r for _, r in nums])
        self.strs = [v for v, _ in strs]
        self.str_place = _positions(n, [r for _, r in strs])
        self.passes = np.array(passes, dtype=np.intp)
        # each distinct string once (metadata repeats its values: tags, languages), with the rows that hold it
        owners: dict[str, list[int]] = {}
        for row, t in texts:
            owners.setdefault(t.casefold(), []).append(row)
        self._texts = list(owners)
        self._owners = list(owners.values())
        self._joined: str | None = None
        self._starts: list[int] = []

    def _post(self, row: int, x: Any) -> None:
        key = json_key(x)
        if key is not None:
            self.postings.setdefault(key, []).append(row)
        elif isinstance(x, (list, dict)):
            self.others.append((row, x))

    def rows(self, indices: Sequence[int] | Any) -> Any:
        """A boolean array, true at `indices`."""
        import numpy as np

        out: Any = np.zeros(self.n, dtype=bool)
        if len(indices):
            out[indices] = True
        return out

    def eq_indices(self, values: Iterable[Any], same: Any) -> list[int]:
        """The rows whose value (or an element of it) equals one of `values`; `same(x, v)` compares an array or
        an object (which has no key) with a value."""
        out: list[int] = []
        loose = []
        for v in values:
            key = json_key(v)
            if key is not None:
                out.extend(self.postings.get(key, ()))
            elif isinstance(v, (list, dict)):
                loose.append(v)
        if loose and self.others:
            out.extend(row for row, x in self.others if any(same(x, v) for v in loose))
        return out

    def range_rows(self, op: str, value: Any) -> Any:
        """The rows whose scalar value compares `op` (gt, gte, lt, lte) to `value`: numbers with numbers, strings
        with strings, anything else never. A bisection of the sorted values, then the rows whose place in that
        order is on the right side of it (one comparison over the rows, in C)."""
        if isinstance(value, str):
            keys, place = self.strs, self.str_place
        elif _number(value):
            keys, place = self.nums, self.num_place
        else:
            return self.rows(())   # NaN (or a bool) compares with nothing
        if op == "gt":
            return place >= bisect.bisect_right(keys, value)
        if op == "gte":
            return place >= bisect.bisect_left(keys, value)
        end = bisect.bisect_left(keys, value) if op == "lt" else bisect.bisect_right(keys, value)
        return (place >= 0) & (place < end)

    def contains_rows(self, needle: str) -> Any:
        """The rows `contains` passes: a string (or a list's string) holding `needle` case-folded, or a value it
        ignores (a number, a boolean, null, an object)."""
        folded = needle.casefold()
        texts, owners = self._texts, self._owners
        found: list[int] = []
        if _SEP in folded:
            for i, t in enumerate(texts):
                if folded in t:
                    found.extend(owners[i])
        elif texts:
            if self._joined is None:
                starts, at = [], 0
                for t in texts:
                    starts.append(at)
                    at += len(t) + 1
                self._starts = starts
                self._joined = _SEP.join(texts)
            joined, starts = self._joined, self._starts
            end, pos = len(joined), 0
            while pos <= end:
                hit = joined.find(folded, pos)
                if hit < 0:
                    break
                i = bisect.bisect_right(starts, hit) - 1
                found.extend(owners[i])
                pos = starts[i + 1] if i + 1 < len(starts) else end + 1   # the next string: one find per match
        out = self.rows(found)
        if len(self.passes):
            out[self.passes] = True
        return out


class Columns:
    """A snapshot's documents as rows (`ids`, in one order) and their metadata's fields as `Column`s, each built
    when a filter first names it."""

    def __init__(self, ids: Sequence[str], metas: Sequence[Mapping[str, Any]]) -> None:
        self.ids = list(ids)
        self.metas = list(metas)
        self.n = len(self.ids)
        self._fields: dict[str, Column] = {}

    def column(self, name: str) -> Column:
        """The column of field `name` (built once; two threads building it at once build the same thing)."""
        col = self._fields.get(name)
        if col is None:
            missing = object()
            col = Column(self.n, ((row, v) for row, m in enumerate(self.metas)
                                  if (v := m.get(name, missing)) is not missing))
            col = self._fields.setdefault(name, col)
        return col

    def none(self) -> Any:
        """A boolean array over the rows, all false."""
        import numpy as np

        return np.zeros(self.n, dtype=bool)

    def ids_of(self, rows: Any) -> set[str]:
        """The ids of the rows true in a boolean array."""
        import numpy as np

        ids = self.ids
        return {ids[i] for i in np.flatnonzero(rows).tolist()}
