"""`similarTo` on the search engine's dense index: the nearest files of a folder to a text.

`similar(folder, text, top_k)` keeps the contract of `Folder.similar` (nearest files by the
`embedding` metatag, best first, ties by path, files with no positive similarity left out) but
answers from a `DenseIndex` kept beside the folder: a vector matrix updated row by row when the
folder changes (its `Watch` fires), instead of a Python scan of every vector per request. The
vectors are the folder's own (its VectorCache), so both answer with the same numbers.
"""
from __future__ import annotations

import threading
import weakref
from typing import Any

from .dense import DenseIndex, DenseView
from .folders import FileStats, Watch, vector_cache

__all__ = ["FolderVectors", "folder_vectors", "similar"]


class FolderVectors:
    """The dense index of one folder's files, brought up to date on demand (see `view`)."""

    def __init__(self, folder: Any) -> None:
        self.folder = folder
        self.index = DenseIndex()
        self._watch = Watch(folder)
        self._files = FileStats(folder)
        self._last: set[tuple[str, int, int, int]] = set()   # (rel, size, mtime_ns, ctime_ns) as indexed
        self._lock = threading.Lock()
        self._view: DenseView | None = None
        self.syncs = 0   # how many times the folder was relisted (for tests and benchmarks)

    def view(self) -> DenseView:
        """A current snapshot of the folder's vectors (relisting only when the folder changed)."""
        with self._lock:
            if self._view is not None and not self._watch.moved():
                return self._view
            now = set(self._files.signatures(self._watch.mark()))
            fresh = now - self._last          # new or changed files (set operations run in C)
            gone = {rel for rel, _, _, _ in self._last - now} - {rel for rel, _, _, _ in fresh}
            cache = vector_cache(self.folder)
            if fresh and self._last:
                # a rewrite that kept size and mtime moved only the ctime: the cached vector (keyed by size
                # and mtime) describes the old text, so it is dropped and the file embedded again
                before = {(rel, size, mtime) for rel, size, mtime, _ in self._last - now}
                stale = [rel for rel, size, mtime, _ in fresh if (rel, size, mtime) in before]
                if stale:
                    cache.forget(stale)
            wanted = sorted((rel, size, mtime) for rel, size, mtime, _ in fresh)
            vectors = cache.vectors_for(wanted) if fresh else {}
            for rel, _, _, _ in fresh:
                vec = vectors.get(rel)
                if vec is None or not self.index.upsert(rel, vec):
                    self.index.delete(rel)
            for rel in gone:
                self.index.delete(rel)
            self._last = now
            self.syncs += 1
            self._view = self.index.view()
            return self._view

    def query_vector(self, text: str) -> list[float]:
        """The unit vector of `text` under the folder's embedder."""
        return vector_cache(self.folder).embed_query(text)


_REGISTRY: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_REGISTRY_LOCK = threading.Lock()


def folder_vectors(folder: Any) -> FolderVectors:
    """The one FolderVectors of `folder` (created on first use, dropped with the folder)."""
    with _REGISTRY_LOCK:
        found = _REGISTRY.get(folder)
        if found is None:
            found = FolderVectors(folder)
            _REGISTRY[folder] = found
        return found


def similar(folder: Any, text: str, top_k: int) -> list[tuple[str, float]]:
    """The `top_k` files of `folder` nearest to `text` by embedding cosine, best first (ties by path);
    files with no positive similarity are left out. Same contract as `Folder.similar`."""
    if top_k <= 0:
        return []
    fv = folder_vectors(folder)
    view = fv.view()
    query = fv.query_vector(text)
    return [(str(rel), score) for rel, score in view.search(query, top_k)]
