"""The dense index: unit vectors in an append-only numpy matrix, with point-in-time views.

Rows are written once and never changed: replacing a key's vector appends a new row and marks the
old one dead, so a `DenseView` taken earlier (a snapshot) keeps answering from exactly the rows
it saw, while updates cost O(changed rows) instead of a rebuild. When dead rows outnumber live
ones the matrix is compacted into a new array (views taken before keep the old one).

Scores are dot products of unit vectors (cosine). A query with few non-zero components (the
offline hashing embedder's) is scored column by column in the order of its components, which
reproduces a Python loop's floating-point sums bit for bit; other queries use one BLAS call.
"""
from __future__ import annotations

import threading
from collections.abc import Hashable, Iterable, Sequence
from typing import Any

__all__ = ["DenseIndex", "DenseView", "SPARSE_QUERY_MAX_NNZ"]

SPARSE_QUERY_MAX_NNZ = 64    # up to this many non-zero query components, score column by column
_POSITIVE = 1e-12             # what counts as a positive similarity (as Folder.similar)


def _np():
    import numpy

    return numpy


class DenseView:
    """A point-in-time, read-only view of a DenseIndex: search it, read vectors from it."""

    def __init__(self, data: Any, n: int, alive: Any, keys: list, rows: dict, dim: int) -> None:
        self._data = data          # (dim, capacity) float64; columns [0, n) are written
        self._n = n
        self._alive = alive        # bool (n,) copy
        self._keys = keys          # row -> key, shared, append-only up to n
        self._rows = rows          # key -> row, a private copy
        self.dim = dim

    def __len__(self) -> int:
        return len(self._rows)

    def __contains__(self, key: object) -> bool:
        return key in self._rows

    def vector(self, key: Hashable) -> list[float] | None:
        """The stored vector of `key`, or None."""
        row = self._rows.get(key)
        if row is None or self._data is None:
            return None
        return [float(x) for x in self._data[:, row]]

    def scores(self, query: Sequence[float]) -> Any:
        """Cosine of `query` with every row (dead rows -inf), as a numpy array of length n."""
        np = _np()
        n = self._n
        if n == 0 or self._data is None or len(query) != self.dim:
            return np.full(n, -np.inf)
        q = np.asarray(query, dtype=np.float64)
        nz = np.flatnonzero(q)
        data = self._data
        if len(nz) <= SPARSE_QUERY_MAX_NNZ:
            acc = np.zeros(n)
            for i in nz:
                acc += q[i] * data[i, :n]
        else:
            acc = q @ data[:, :n]
        acc[~self._alive] = -np.inf
        return acc

    def dot(self, query: Sequence[float], keys: Sequence[Hashable]) -> dict:
        """Cosine of `query` with each stored key of `keys` (keys not stored are left out)."""
        np = _np()
        rows = [(key, self._rows[key]) for key in keys if key in self._rows]
        if not rows or self._data is None or len(query) != self.dim:
            return {}
        q = np.asarray(query, dtype=np.float64)
        vals = q @ self._data[:, [r for _, r in rows]]
        return {key: float(v) for (key, _), v in zip(rows, vals, strict=True)}

    def search(self, query: Sequence[float], k: int, allowed: Iterable[Hashable] | None = None,
               positive_only: bool = True) -> list[tuple[Hashable, float]]:
        """The `k` best (key, cosine) pairs, best first, ties by key; only positive scores unless told.
        `allowed` restricts the keys considered (a filter)."""
        np = _np()
        if k <= 0 or self._n == 0:
            return []
        s = self.scores(query)
        if allowed is not None:
            mask = np.zeros(self._n, dtype=bool)
            rows = [self._rows[key] for key in allowed if key in self._rows]
            mask[rows] = True
            s = np.where(mask, s, -np.inf)
        floor = _POSITIVE if positive_only else -np.inf
        cand = np.flatnonzero(s > floor) if positive_only else np.flatnonzero(np.isfinite(s))
        if len(cand) > k:
            vals = s[cand]
            kth = np.partition(vals, len(vals) - k)[len(vals) - k]
            cand = cand[vals >= kth]  # keeps every tie at the boundary; cut after sorting by key
        keys = self._keys
        picked = sorted(((float(s[r]), keys[r]) for r in cand), key=lambda t: (-t[0], _order(t[1])))
        return [(key, score) for score, key in picked[:k]]

    def keys(self) -> list:
        """Every live key."""
        return list(self._rows)


def _order(key: Any) -> Any:
    return key if isinstance(key, (str, int)) else str(key)


class DenseIndex:
    """Unit vectors by key, updated in place of rebuilding; `view()` gives a consistent snapshot."""

    def __init__(self, dim: int | None = None) -> None:
        self.dim = dim
        self._data: Any = None
        self._n = 0
        self._alive: Any = None
        self._keys: list = []
        self._rows: dict = {}
        self._dead = 0
        self._lock = threading.Lock()
        self._view: DenseView | None = None

    def __len__(self) -> int:
        return len(self._rows)

    def __contains__(self, key: object) -> bool:
        return key in self._rows

    def _grow(self, need: int) -> None:
        np = _np()
        cap = 0 if self._data is None else self._data.shape[1]
        if need <= cap:
            return
        new_cap = max(need, 2 * cap, 256)
        data = np.zeros((self.dim, new_cap))
        alive = np.zeros(new_cap, dtype=bool)
        if self._data is not None:
            data[:, : self._n] = self._data[:, : self._n]
            alive[: self._n] = self._alive[: self._n]
        self._data, self._alive = data, alive  # views taken earlier keep the old arrays

    def upsert(self, key: Hashable, vector: Sequence[float]) -> bool:
        """Store `vector` for `key` (replacing any earlier one); False when its length is not the index's."""
        with self._lock:
            if self.dim is None:
                self.dim = len(vector)
            if len(vector) != self.dim or self.dim == 0:
                self._delete(key)
                return False
            self._delete(key)
            self._grow(self._n + 1)
            row = self._n
            self._data[:, row] = vector
            self._alive[row] = True
            self._keys.append(key)
            self._rows[key] = row
            self._n += 1
            self._view = None
            return True

    def delete(self, key: Hashable) -> None:
        """Forget `key` (a no-op when absent)."""
        with self._lock:
            self._delete(key)

    def _delete(self, key: Hashable) -> None:
        row = self._rows.pop(key, None)
        if row is not None:
            self._alive[row] = False  # views hold their own copy of the mask
            self._dead += 1
            self._view = None

    def _compact(self) -> None:
        np = _np()
        live = sorted(self._rows.items(), key=lambda kv: kv[1])
        cap = max(256, 2 * len(live))
        data = np.zeros((self.dim, cap))
        alive = np.zeros(cap, dtype=bool)
        if live:
            old_rows = [r for _, r in live]
            data[:, : len(live)] = self._data[:, old_rows]
            alive[: len(live)] = True
        self._data, self._alive = data, alive
        self._keys = [k for k, _ in live]
        self._rows = {k: i for i, (k, _) in enumerate(live)}
        self._n = len(live)
        self._dead = 0

    def view(self) -> DenseView:
        """A snapshot of the current vectors; later updates never change what it answers."""
        with self._lock:
            if self._view is None:
                if self._dead > 1024 and self._dead > len(self._rows):
                    self._compact()
                np = _np()
                alive = self._alive[: self._n].copy() if self._alive is not None else np.zeros(0, dtype=bool)
                # `_keys` is append-only until a compaction replaces the list, so sharing it is safe.
                self._view = DenseView(self._data, self._n, alive, self._keys, dict(self._rows), self.dim or 0)
            return self._view
