"""What the search engine needs from a slate folder, and how it notices that the folder changed.

`file_stats(folder)` and `vector_cache(folder)` are the two seams to `ladr_lab.slate.Folder`:
the first prefers `Folder.file_stats()` (the folder's cached, fresh listing) and otherwise stats
each listed file itself; the second reaches the folder's embedding cache (slate/vectors.py), so
that the engine and `Folder.similar` share one set of vectors, computed once.

`Watch` is the cheap "has anything changed?" test run before every search: one `stat` per
directory of the folder plus the vector cache's version counter. Files added, removed or renamed
by any program move a directory's modification time; writes through the store move both. Only
when the test fires does an index relist the folder and diff it against what it holds.
"""
from __future__ import annotations

import os
from typing import Any

from ladr_lab.errors import LadrError


def file_stats(folder: Any) -> list[tuple[str, int, int]]:
    """`(rel, size, mtime_ns)` of every listed file of `folder`, fresh as of the call."""
    native = getattr(folder, "file_stats", None)
    if callable(native):
        return list(native())
    base = str(folder.path)
    out = []
    for rel in folder.files():
        # Listed files were vetted by the listing (links inside the folder only), so a plain stat
        # of the joined path is enough; resolve() is the fallback for anything odd.
        try:
            st = os.stat(os.path.join(base, rel))
        except OSError:
            try:
                st = os.stat(folder.resolve(rel))
            except (OSError, LadrError):
                continue
        out.append((rel, st.st_size, st.st_mtime_ns))
    return out


def vector_cache(folder: Any) -> Any:
    """The folder's embedding-vector cache (ladr_lab.slate.vectors.VectorCache)."""
    native = getattr(folder, "vectors", None)
    if native is not None and hasattr(native, "vectors_for"):
        return native
    return folder._vectors  # until Folder exposes it publicly


def _dir_mtimes(root: str) -> dict[str, int]:
    """Modification time of the folder and of every non-hidden directory below it (links not followed)."""
    out: dict[str, int] = {}
    try:
        out[root] = os.stat(root).st_mtime_ns
    except OSError:
        return out
    stack = [root]
    while stack:
        path = stack.pop()
        try:
            with os.scandir(path) as it:
                for e in it:
                    if e.name.startswith(".") or not e.is_dir(follow_symlinks=False):
                        continue
                    try:
                        out[e.path] = e.stat(follow_symlinks=False).st_mtime_ns
                    except OSError:
                        continue
                    stack.append(e.path)
        except OSError:
            continue
    return out


class Watch:
    """Remembers a folder's directory times and vector-cache version; `moved()` says if either changed."""

    def __init__(self, folder: Any) -> None:
        self._folder = folder
        self._root = str(folder.path)
        self._dirs: dict[str, int] | None = None
        self._version = -1

    def moved(self) -> bool:
        """True when something may have changed since the last `mark()` (always before the first)."""
        if self._dirs is None or vector_cache(self._folder).version != self._version:
            return True
        if not self._dirs:
            return os.path.isdir(self._root)
        for path, mtime in self._dirs.items():
            try:
                if os.stat(path).st_mtime_ns != mtime:
                    return True
            except OSError:
                return True
        return False

    def mark(self) -> None:
        """Record the current state; call it *before* relisting, so a change during the relist fires again."""
        self._version = vector_cache(self._folder).version
        self._dirs = _dir_mtimes(self._root)
