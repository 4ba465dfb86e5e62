"""Writing one slate folder's files atomically: a temporary file, fsync, `os.replace`, directory fsync.

A write goes to a temporary file under the folder's hidden `.ladr/tmp` (on the folder's file system, so the
rename is atomic), is renamed over the target and the directory is fsynced; the same file is written by one
writer at a time across threads and processes (a lock file under `.ladr/locks`, see locks.py). Writes never go
through links nor onto anything but a regular file. The folder's cached listing, `created` log and vectors are
patched as the rename lands, under the folder's lock, so a read right after a write sees it.

A process killed between writing a temporary file and renaming it leaves the file behind; the first write of
a folder removes temporary files older than an hour (never another process's write in flight).
"""
from __future__ import annotations

import errno
import os
import stat
import threading
import time
from collections.abc import Callable

from ..errors import PathRefused, SlateError
from .cache import Tree
from .locks import file_lock, fsync_dir, stripe_name, write_temp
from .metatags import CreatedLog, fallback_created_ns
from .paths import normalize_rel
from .vectors import VectorCache

__all__ = ["FolderWriter"]

_STALE_TMP_SECONDS = 3600


def _lstat(path: str) -> os.stat_result | None:
    try:
        return os.lstat(path)
    except OSError:
        return None


def _unlink_quietly(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


class FolderWriter:
    """The atomic-write machinery of one folder: its `.ladr/` infrastructure, checked targets, renames that
    patch the folder's caches. `Folder` delegates its writes to it and shares its lock and caches."""

    def __init__(self, name: str, directory: str, lock: threading.RLock, tree: Tree, vectors: VectorCache,
                 created: CreatedLog) -> None:
        self.name = name
        self.dir = directory
        self.ladr = os.path.join(directory, ".ladr")
        self.tmp = os.path.join(self.ladr, "tmp")
        self.locks = os.path.join(self.ladr, "locks")
        self._lock = lock          # the folder's: guards its caches
        self._tree = tree
        self._vectors = vectors
        self._created = created
        self._swept = False

    def write(self, rel: str | os.PathLike, produce: Callable[[Callable[[], str | None]], str],
              read_text: Callable[[str], str | None]) -> str:
        """Write the text `produce(read)` gives (`read()`: the old text or None) to `rel`, atomically and under
        the file's lock; returns the text written."""
        norm = normalize_rel(rel)
        parts = norm.split("/")
        dir_rel, name = "/".join(parts[:-1]), parts[-1]
        target = os.path.join(self.dir, norm)
        self.ensure_infra()
        with file_lock(os.path.join(self.locks, stripe_name(norm))):
            before = self.check_target(norm, target)
            text = produce(lambda: read_text(norm) if before is not None else None)
            if not isinstance(text, str):
                raise SlateError(f'new contents of "{norm}" must be a string, not {type(text).__name__}')
            try:
                data = text.encode("utf-8")
            except UnicodeEncodeError as exc:
                raise SlateError(f'cannot encode new contents of "{norm}" as UTF-8: {exc}') from exc
            vector = self._vectors.embed_quietly(text) if self._vectors.active else None
            self.ensure_dirs(dir_rel)
            mode = stat.S_IMODE(before.st_mode) if before is not None else None
            tmp = write_temp(self.tmp, data) if mode is None else write_temp(self.tmp, data, mode)
            with self._lock:
                st = self.replace(tmp, target, dir_rel, name)
                if vector is not None:
                    self._vectors.put(norm, st.st_size, st.st_mtime_ns, vector)
                if before is None:
                    self._created.record(norm, st.st_mtime_ns)
                elif self._created.get(norm) is None:
                    self._created.record(norm, fallback_created_ns(before))
            fsync_dir(os.path.dirname(target))
        return text

    def check_target(self, norm: str, target: str) -> os.stat_result | None:
        """Refuse writes through links or onto non-files; return the target's lstat (None if new)."""
        path = self.dir
        parts = norm.split("/")
        for i, part in enumerate(parts):
            path = os.path.join(path, part)
            st = _lstat(path)
            if st is None:
                return None
            if stat.S_ISLNK(st.st_mode):
                raise PathRefused(f'writes never go through links: "{"/".join(parts[: i + 1])}" is a link')
            last = i == len(parts) - 1
            if not last and not stat.S_ISDIR(st.st_mode):
                raise SlateError(f'cannot write "{norm}": "{"/".join(parts[: i + 1])}" is not a directory')
            if last and not stat.S_ISREG(st.st_mode):
                raise SlateError(f'cannot write "{norm}": it exists and is not a regular file')
        return st

    def ensure_infra(self) -> None:
        """Create the folder and its `.ladr/tmp` and `.ladr/locks` (sweeping stale temporary files once)."""
        if not self._swept:
            self._swept = True
            self.sweep_tmp()
            self._ignore()                 # once a process, for a `.ladr/` an older version made without it
        if os.path.isdir(self.tmp) and os.path.isdir(self.locks):
            return
        with self._lock:
            try:
                os.makedirs(self.dir, exist_ok=True)
                os.makedirs(self.ladr, exist_ok=True)
                os.makedirs(self.tmp, exist_ok=True)
                os.makedirs(self.locks, exist_ok=True)
            except OSError as exc:
                raise SlateError(f'cannot create folder "{self.name}" at {self.dir}: {exc}') from exc
            self._ignore()

    def _ignore(self) -> None:
        """A `.gitignore` of `*` in `.ladr/`: a learner who puts the notes folder under git commits the notes and
        `.metatags.json`, never the locks, temporary files and `created.log` (as pytest's cache does)."""
        if not os.path.isdir(self.ladr):
            return
        try:
            fd = os.open(os.path.join(self.ladr, ".gitignore"), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except OSError:                    # already there (or a read-only folder): nothing to do
            return
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write("# ladr_lab's bookkeeping (locks, temporary files, created.log): not notes, never committed\n*\n")

    def sweep_tmp(self) -> None:
        """Remove temporary files older than an hour (left by a process killed before its rename)."""
        # only old ones are removed, so another process's write in flight is never disturbed
        try:
            with os.scandir(self.tmp) as it:
                stale = [e.path for e in it
                         if e.is_file(follow_symlinks=False)
                         and time.time() - e.stat(follow_symlinks=False).st_mtime > _STALE_TMP_SECONDS]
        except OSError:
            return
        for path in stale:
            _unlink_quietly(path)

    def ensure_dirs(self, dir_rel: str) -> None:
        """Create the directories of `dir_rel` that are missing, noting each in the cached listing."""
        if not dir_rel:
            return
        parent_rel, path = "", self.dir
        for part in dir_rel.split("/"):
            path = os.path.join(path, part)
            if not os.path.isdir(path):
                with self._lock:
                    try:
                        os.mkdir(path)
                    except FileExistsError:
                        pass
                    except OSError as exc:
                        raise SlateError(f"cannot create directory {path}: {exc}") from exc
                    self._tree.note_dir(parent_rel, part, os.stat(path))
            parent_rel = f"{parent_rel}/{part}" if parent_rel else part

    def replace(self, tmp: str, target: str, dir_rel: str = "", name: str | None = None) -> os.stat_result:
        """Rename `tmp` over `target` and patch the cache (when `name` is a listed file); the caller
        holds the folder's lock."""
        parent = os.path.dirname(target)
        try:
            os.replace(tmp, target)
        except OSError as exc:
            if exc.errno != errno.EXDEV:
                _unlink_quietly(tmp)
                raise SlateError(f"cannot write {target}: {exc}") from exc
            # `.ladr/tmp` is on another file system (a mount below the folder): copy beside the target.
            with open(tmp, "rb") as fh:
                data = fh.read()
            _unlink_quietly(tmp)
            os.replace(write_temp(parent, data), target)
        st = os.stat(target)
        if name is not None:
            self._tree.note_file(dir_rel, name, st)
        return st
