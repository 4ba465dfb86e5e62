"""The `embedding` system metatag of one folder: vectors cached per file, and nearest-file ranking.

A vector is kept with the (size, mtime_ns) of the file it was computed from and is reused only
while both still match, so a vector handed out always describes the file's current contents.
Files are embedded lazily, in batches, the first time a vector is needed. Once a folder's vectors
are in use (`active`), every write through the store recomputes the written file's vector at write
time ("kept current on every write"), so similarity queries stay cheap; a folder nobody has asked
for similarity is not charged an embedding per write (for a large JSON file rewritten by
mergeByKey that would double the cost of each write).
"""
from __future__ import annotations

import heapq
import threading
from collections.abc import Callable

from ..errors import SlateError
from .embed import Embedder, l2_normalize, nonzero

__all__ = ["BATCH", "VectorCache"]

BATCH = 256  # files read and embedded per call (a model batches them by length inside)


class VectorCache:
    """Per-file embedding vectors of one folder, keyed by path and validated by (size, mtime_ns)."""

    def __init__(self, embedder: Callable[[], Embedder], read: Callable[[str], str | None]) -> None:
        self._embedder = embedder
        self._read = read
        self._lock = threading.Lock()
        self._vectors: dict[str, tuple[int, int, list[float]]] = {}
        self.active = False
        self.version = 0
        self.cleared = 0   # how many times clear() ran (a refresh: everything must be looked at again)

    @property
    def embedder(self) -> Embedder:
        """The embedder these vectors come from."""
        return self._embedder()

    def embed_query(self, text: str) -> list[float]:
        """The unit vector of a query text, exactly as `rank` computes it."""
        return l2_normalize(self._embedder().embed([text])[0])

    def _clip(self, embedder: Embedder, text: str) -> str:
        limit = getattr(embedder, "max_chars", None)
        return text[:limit] if limit else text

    def embed_quietly(self, text: str) -> list[float] | None:
        """The unit vector of `text`, or None when the embedder fails (the write must not)."""
        embedder = self._embedder()
        try:
            return l2_normalize(embedder.embed([self._clip(embedder, text)])[0])
        except Exception:  # e.g. a remote model unreachable: the vector is computed lazily later
            return None

    def put(self, rel: str, size: int, mtime_ns: int, vec: list[float]) -> None:
        """Remember the vector of `rel` as it is at (size, mtime_ns)."""
        with self._lock:
            self._vectors[rel] = (size, mtime_ns, vec)
            self.version += 1

    def vectors_for(self, listing: list[tuple[str, int, int]]) -> dict[str, list[float]]:
        """Vectors for (rel, size, mtime_ns) triples, embedding the missing ones in batches."""
        self.active = True
        out: dict[str, list[float]] = {}
        missing: list[tuple[str, int, int]] = []
        with self._lock:
            vectors = self._vectors
            for rel, size, mtime in listing:
                hit = vectors.get(rel)
                if hit is not None and hit[0] == size and hit[1] == mtime:
                    out[rel] = hit[2]
                else:
                    missing.append((rel, size, mtime))
        if not missing:
            return out
        embedder = self._embedder()
        for start in range(0, len(missing), BATCH):
            batch = []
            for rel, size, mtime in missing[start : start + BATCH]:
                text = self._read(rel)
                if text is not None:
                    batch.append((rel, size, mtime, self._clip(embedder, text)))
            if not batch:
                continue
            vecs = embedder.embed([b[3] for b in batch])
            if len(vecs) != len(batch):
                raise SlateError(f"embedder {embedder.name} returned {len(vecs)} vectors for {len(batch)} texts")
            with self._lock:
                for (rel, size, mtime, _), vec in zip(batch, vecs, strict=True):
                    unit = l2_normalize(vec)
                    self._vectors[rel] = (size, mtime, unit)
                    out[rel] = unit
                self.version += 1
        return out

    def rank(self, text: str, listing: list[tuple[str, int, int]], top_k: int) -> list[tuple[str, float]]:
        """The `top_k` files of `listing` nearest to `text` by cosine, best first, ties by path;
        files with no positive similarity are left out."""
        if top_k <= 0:
            return []
        # Only the query's non-zero components matter, and hashing queries have few of them.
        query = nonzero(self.embed_query(text))
        if not query:
            return []
        top = query[-1][0]
        scored: list[tuple[float, str]] = []
        for rel, vec in self.vectors_for(listing).items():
            if len(vec) <= top:
                continue  # a vector from an embedder of another size
            s = 0.0
            for i, q in query:
                s += q * vec[i]
            if s > 1e-12:
                scored.append((-s, rel))
        return [(rel, -neg) for neg, rel in heapq.nsmallest(top_k, scored)]

    def forget(self, rels: list[str]) -> None:
        """Drop the vectors of `rels` (rewritten without their size or mtime moving), so they are embedded again."""
        with self._lock:
            for rel in rels:
                self._vectors.pop(rel, None)

    def clear(self) -> None:
        """Forget every vector (the folder stays active if it was)."""
        with self._lock:
            self._vectors.clear()
            self.version += 1
            self.cleared += 1
