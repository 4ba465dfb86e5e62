"""What the search engine needs from a slate folder, and how it notices that the folder changed.

`FileStats(folder).listing(changed_dirs)` gives `(rel, size, mtime_ns)` of every listed file: from
`Folder.file_stats()` when the folder has it (its cached listing), otherwise from `Folder.files()`
plus a `stat` per file that it cannot vouch for, remembering `(inode, size, mtime)` per file so that
only the files of directories that changed (and whose inode changed: atomic writes replace it) are
stat'ed again. `vector_cache(folder)` reaches the folder's embedding cache (slate/vectors.py), so that
the engine and `Folder.similar` share one set of vectors, computed once.

`Watch` is the cheap "has anything changed?" test run before every search: the vector cache's
version counter, and for a slate Folder its `change_token()` (the slate's own listing, kept current by
inotify or re-stated where it cannot be, counts every change it takes in, and the token adds a `stat`
of `.metatags.json`), so files added, removed or renamed and writes in place (an append, an
`open(path, "w")` overwrite, a same-size rewrite, a hand edit of `.metatags.json`) all move it; for
any other folder object, one `stat` per directory (files added, removed or renamed move a directory's
modification time). Writes through the store move the vector cache too; a `refresh()` clears it. Only when the test fires does an index relist the folder, and
`FileStats.signatures` carries each file's ctime so that a rewrite keeping size and mtime is re-read.
"""
from __future__ import annotations

import os
from typing import Any

from ..errors import LadrError

__all__ = ["FileStats", "Watch", "vector_cache"]


def vector_cache(folder: Any) -> Any:
    """The folder's embedding-vector cache (ladr_lab.slate.vectors.VectorCache)."""
    return folder.vectors


class FileStats:
    """`(rel, size, mtime_ns)` of a folder's listed files (see the module docstring)."""

    def __init__(self, folder: Any) -> None:
        self._folder = folder
        self._base = str(folder.path)
        self._seen: dict[str, tuple[int, int, int, int]] = {}   # rel -> (inode, size, mtime_ns, ctime_ns)

    def listing(self, changed_dirs: set[str] | None) -> list[tuple[str, int, int]]:
        """Every listed file with its size and mtime; `changed_dirs` (absolute paths) are the directories
        that moved since the last call (None: trust nothing remembered)."""
        native = getattr(self._folder, "file_stats", None)
        if callable(native):
            return list(native())
        return [(rel, size, mtime) for rel, size, mtime, _ in self._walk(changed_dirs)]

    def signatures(self, changed_dirs: set[str] | None) -> list[tuple[str, int, int, int]]:
        """`listing`, with each file's ctime_ns too (0 when the folder cannot say), so that a rewrite that
        keeps the size and the mtime is still seen."""
        native = getattr(self._folder, "file_signatures", None)
        if callable(native):
            return list(native())
        stats = getattr(self._folder, "file_stats", None)
        if callable(stats):
            return [(rel, size, mtime, 0) for rel, size, mtime in stats()]
        return self._walk(changed_dirs)

    def _walk(self, changed_dirs: set[str] | None) -> list[tuple[str, int, int, int]]:
        base = self._base
        if changed_dirs is None:
            self._seen = {}
        inodes: dict[str, dict[str, int]] = {}
        seen = self._seen
        fresh: dict[str, tuple[int, int, int, int]] = {}
        out = []
        for rel in self._folder.files():
            head, _, name = rel.rpartition("/")
            dirpath = base + "/" + head if head else base
            old = seen.get(rel)
            if old is not None and changed_dirs is not None and dirpath in changed_dirs:
                ino = inodes.get(dirpath)
                if ino is None:
                    ino = inodes[dirpath] = _inodes(dirpath)
                if ino.get(name) != old[0]:
                    old = None
            if old is None:
                old = self._stat(rel)
                if old is None:
                    continue
            fresh[rel] = old
            out.append((rel, old[1], old[2], old[3]))
        self._seen = fresh
        return out

    def _stat(self, rel: str) -> tuple[int, int, int, int] | None:
        # Listed files were vetted by the listing (links inside the folder only), so a plain stat of
        # the joined path is enough; resolve() is the fallback for anything odd.
        try:
            st = os.stat(self._base + "/" + rel)
        except OSError:
            try:
                st = os.stat(self._folder.resolve(rel))
            except (OSError, LadrError):
                return None
        return (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def _inodes(path: str) -> dict[str, int]:
    try:
        with os.scandir(path) as it:
            return {e.name: e.inode() for e in it}
    except OSError:
        return {}


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
    """Remembers a folder's directory times, vector-cache state and (for a slate Folder) its change token;
    `moved()` says if any changed."""

    def __init__(self, folder: Any) -> None:
        self._folder = folder
        self._root = str(folder.path)
        self._dirs: dict[str, int] | None = None
        self._version = -1
        self._cleared = -1
        token = getattr(folder, "change_token", None)
        self._token_of = token if callable(token) else None
        self._token: Any = None
        self._seen: Any = None   # the token moved() just read (taken by the mark() that follows it)

    def moved(self) -> bool:
        """True when something may have changed since the last `mark()` (always before the first)."""
        self._seen = None
        if self._dirs is None or vector_cache(self._folder).version != self._version:
            return True
        if self._token_of is not None:
            # what the slate saw (its listing is kept current by inotify, or re-stated where it cannot be):
            # names added, removed or renamed, in-place writes, appends, same-size rewrites, .metatags.json;
            # the directory times below would add nothing
            self._seen = self._token_of()   # kept for mark(), so a request reads it once
            return self._seen != self._token
        if not self._dirs:
            return os.path.isdir(self._root)
        for path, mtime in self._dirs.items():
            try:
                if os.stat(path).st_mtime_ns != mtime:
                    return True
            except OSError:
                return True
        return False

    def mark(self) -> set[str] | None:
        """Record the current state and return the directories that changed since the last mark (None:
        the first mark, or the folder was refreshed: treat everything as changed). Call it *before*
        relisting, so that a change made during the relist fires again."""
        cache = vector_cache(self._folder)
        first = self._dirs is None or cache.cleared != self._cleared
        self._version = cache.version
        self._cleared = cache.cleared
        if self._token_of is not None:
            seen, self._seen = self._seen, None
            self._token = seen if seen is not None else self._token_of()
        old = self._dirs or {}
        self._dirs = _dir_mtimes(self._root)
        if first:
            return None
        return {p for p, m in self._dirs.items() if old.get(p) != m}
