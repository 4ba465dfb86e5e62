"""One declared folder of a slate: safe reads, cached listings, metatags, atomic writes, similarity.

Everything a step may touch goes through `resolve()` (see paths.py); files are read whole or as a
bounded excerpt (reading.py). Listings come from the cached tree (cache.py), brought up to date at
the start of every read (file-system notifications, or a re-stat where there are none), so a file
another program edited is listed as it is now. Writes are atomic (temporary file under
`.ladr/tmp`, fsync, `os.replace`, directory fsync: writing.py) and serialized per file across threads and
processes (locks.py). The folder's bookkeeping lives in its hidden `.ladr/` directory and its
`.metatags.json`; neither is ever listed.

Every method that takes a path takes a `str` or an `os.PathLike`.
"""
from __future__ import annotations

import json
import os
import stat
import threading
import unicodedata
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..display import Displayable
from ..errors import PathRefused, SlateError
from .cache import DirNode, FileRec, ReadOnlyDict, Tree
from .embed import Embedder
from .globbing import compile_glob, walk_glob
from .locks import file_lock, fsync_dir, write_temp
from .metatags import (
    FOLDER_LEVEL,
    SIDECAR,
    SYSTEM_METATAGS,
    CreatedLog,
    Sidecar,
    contains_match,
    fallback_created_ns,
    iso_utc,
    value_matches_type,
)
from .paths import as_path_str, normalize_rel, resolve_under
from .reading import Excerpt, check_max_chars, read_regular_excerpt, read_regular_file
from .spec import FolderSpec
from .vectors import VectorCache
from .watch import Subscription, get_hub
from .writing import FolderWriter

__all__ = ["Folder", "Rel"]

Rel = str | os.PathLike

def _json_copy(value: Any) -> Any:
    # Values handed out must not alias the cache; a JSON round trip is the fastest deep copy here.
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return json.loads(json.dumps(value))


def _same_name(names, part: str) -> str | None:
    if part in names:
        return part
    want = unicodedata.normalize("NFC", part)
    hits = [n for n in names if not n.isascii() and unicodedata.normalize("NFC", n) == want]
    return hits[0] if len(hits) == 1 else None     # two spellings of one name on disk: ask for the exact one


def _find_listed(root: DirNode, norm: str, folder: bool) -> str | None:
    node, out = root, []
    parts = norm.split("/")
    for i, part in enumerate(parts):
        last = i == len(parts) - 1
        name = _same_name(node.files if last and not folder else node.dirs, part)
        if name is None:
            return None
        out.append(name)
        if not last or folder:
            node = node.dirs[name]
    return "/".join(out)


class Folder(Displayable):
    """A declared folder of a slate (a directory that may not exist until the first write); in a notebook it
    shows its index, tree and files with their metatags."""

    def __init__(self, spec: FolderSpec, path: str | os.PathLike, embedder: Callable[[], Embedder],
                 *, watch: bool = True) -> None:
        self.name = spec.name
        self.spec = spec
        self.path = Path(path)
        self._dir = str(self.path)
        self._embedder = embedder
        self._lock = threading.RLock()
        sub = Subscription(get_hub()) if watch else None
        self._tree = Tree(self._dir, sub)
        if sub is not None:
            # Watches are released when the folder is closed or garbage-collected; the finalizer
            # holds the subscription, never the folder, and only hands it to the hub (see watch.py).
            weakref.finalize(self, sub.close_later)
        self._sidecar = Sidecar(os.path.join(self._dir, SIDECAR))
        self._created = CreatedLog(os.path.join(self._dir, ".ladr", "created.log"))
        self._vectors = VectorCache(embedder, self._read_listed)
        self._writer = FolderWriter(self.name, self._dir, self._lock, self._tree, self._vectors, self._created)

    def __repr__(self) -> str:
        return f"Folder({self.name!r}, {self._dir!r})"

    def to_text(self) -> str:
        """The folder's path, counts and first files."""
        from .html import folder_text
        return folder_text(self)

    def to_html(self) -> str:
        """The folder as a static HTML view: counts, index, tree, files with sizes, dates and metatags."""
        from .html import folder_html
        return folder_html(self)

    # --- safe path resolution -------------------------------------------------------------------
    def normalize(self, rel: Rel) -> str:
        """The canonical folder-relative form of `rel` (the key used for metatags and dedup)."""
        return normalize_rel(rel)

    def locate(self, rel: Rel, *, folder: bool = False) -> str | None:
        """The canonical path of the listed file (or, `folder`, subfolder) that `rel` names: as written, or
        the one whose name is the same in Unicode NFC (macOS writes NFD names, a model may write either);
        None when none is listed. Raises PathRefused for a refused path."""
        norm = normalize_rel(rel)
        with self._lock:
            root = self._tree.sync()
            return None if root is None else _find_listed(root, norm, folder)

    def resolve(self, rel: Rel) -> Path:
        """The real absolute path of `rel` inside this folder (it may not exist); raises PathRefused."""
        return Path(resolve_under(self._dir, rel))

    def exists(self, rel: Rel) -> bool:
        """True when `rel` is an allowed path naming an existing regular file."""
        try:
            st = os.stat(resolve_under(self._dir, rel))
        except (PathRefused, OSError, ValueError):
            return False
        return stat.S_ISREG(st.st_mode)

    def read_text(self, rel: Rel) -> str | None:
        """The file's text (UTF-8, undecodable bytes replaced), or None when missing or refused."""
        try:
            real = resolve_under(self._dir, rel)
        except PathRefused:
            return None
        data = read_regular_file(real)
        return None if data is None else data.decode("utf-8", errors="replace")

    def read_excerpt(self, rel: Rel, max_chars: int) -> Excerpt | None:
        """The first `max_chars` characters of the file, read only as far as needed (at most
        4 * max_chars + 4 bytes), with its size and whether it was cut; None when missing or refused."""
        check_max_chars(max_chars)
        try:
            real = resolve_under(self._dir, rel)
        except PathRefused:
            return None
        return read_regular_excerpt(real, max_chars)

    def _read_listed(self, rel: str) -> str | None:
        # Files from the listing were vetted at scan time, so a plain O_NOFOLLOW open is enough;
        # a listed link (or anything odd) takes the full resolve() path. Only as much is read as the
        # embedder looks at, so a huge file costs a bounded read.
        limit = getattr(self._embedder(), "max_chars", None)
        if isinstance(limit, int) and limit >= 0:
            excerpt = read_regular_excerpt(os.path.join(self._dir, rel), limit)
            if excerpt is None:
                excerpt = self.read_excerpt(rel, limit)
            return None if excerpt is None else excerpt.text
        data = read_regular_file(os.path.join(self._dir, rel))
        if data is None:
            return self.read_text(rel)
        return data.decode("utf-8", errors="replace")

    # --- listing --------------------------------------------------------------------------------
    def index(self, sub: Rel = "") -> list[dict] | None:
        """Direct entries of the folder (or of subfolder `sub`): files `{name, size}` then subfolders
        `{name: "x/", size, files}`, each sorted by name; None for a missing `sub`, PathRefused for
        a refused one, [] for a folder that does not exist yet."""
        norm = normalize_rel(sub) if as_path_str(sub) else ""
        with self._lock:
            if self._tree.sync() is None:
                return None if norm else []
            node = self._tree.find_dir(norm)
            if node is None:
                return None
            return list(node.rendered())

    def tree(self, depth: int | None = None) -> list[dict]:
        """Like index(), but subfolder entries carry `children` down to `depth` levels (None: all)."""
        if depth is not None and (not isinstance(depth, int) or depth < 1):
            raise SlateError(f"tree depth must be a positive integer or None (got {depth!r})")
        with self._lock:
            root = self._tree.sync()
            if root is None:
                return []
            return self._render_tree(root, 1, depth)

    def _render_tree(self, node: DirNode, level: int, depth: int | None) -> list[dict]:
        out: list[dict] = [node.files[n].entry for n in node.fnames]
        for name in node.dnames:
            child = node.dirs[name]
            if depth is None or level < depth:
                out.append(ReadOnlyDict(name=name + "/", size=child.tot_size, files=child.tot_files,
                                        children=self._render_tree(child, level + 1, depth)))
            else:
                out.append(child.entry)
        return out

    def files(self) -> list[str]:
        """Every listed file below the folder, as sorted relative POSIX paths."""
        with self._lock:
            self._tree.sync()
            return list(self._tree.flat()[0])

    def file_stats(self) -> list[tuple[str, int, int]]:
        """`(relative path, size, mtime_ns)` of every listed file, sorted by path, current as of the call."""
        with self._lock:
            self._tree.sync()
            return [(rel, rec.size, rec.mtime_ns) for rel, rec in self._tree.iter_files()]

    def file_signatures(self) -> list[tuple[str, int, int, int]]:
        """`(relative path, size, mtime_ns, ctime_ns)` of every listed file, sorted by path, current as of the call
        (ctime moves on every write, even one that keeps the size and puts the old mtime back)."""
        with self._lock:
            self._tree.sync()
            return [(rel, rec.size, rec.mtime_ns, rec.ctime_ns) for rel, rec in self._tree.iter_files()]

    def change_token(self) -> tuple:
        """A value that changes whenever anything a reader sees may have: a listed file added, removed or
        written (in place too: appends, overwrites, same-size rewrites), or the metatags file; current as of
        the call (with notifications, one drain of the queue and one `stat`)."""
        with self._lock:
            self._tree.sync()
            try:
                st = os.stat(self._sidecar.path)
                side: tuple | None = (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
            except OSError:
                side = None
            return (self._tree.changes, side)

    def glob(self, pattern: str | os.PathLike) -> list[str]:
        """Files whose folder-relative path matches `pattern` (see globbing.py), sorted."""
        comps = compile_glob(os.fspath(pattern) if isinstance(pattern, os.PathLike) else pattern)
        if comps is None:
            return []
        with self._lock:
            root = self._tree.sync()
            if root is None:
                return []
            return walk_glob(root, comps)

    # --- metatags -------------------------------------------------------------------------------
    def metatags(self) -> dict[str, dict]:
        """User metatags of every listed file that has any: `{path: {name: value}}`."""
        with self._lock:
            data = self._sidecar.load()
            self._tree.sync()
            existing = self._tree.flat()[1]
            picked = {rel: tags for rel, tags in data.items() if rel in existing and tags}
            return _json_copy(picked)

    def get_metatag(self, rel: Rel, name: str) -> Any:
        """One metatag of one file (user or system: created, modified, size, embedding), or None."""
        try:
            norm = normalize_rel(rel)
            real = resolve_under(self._dir, norm)
            st = os.stat(real)
        except (PathRefused, OSError, ValueError):
            return None
        if not stat.S_ISREG(st.st_mode):
            return None
        if name == "size":
            return st.st_size
        if name == "modified":
            return iso_utc(st.st_mtime_ns)
        if name == "created":
            with self._lock:
                return iso_utc(self._created_ns(norm, st.st_mtime_ns, fallback_created_ns(st)))
        if name == "embedding":
            vec = self._vectors.vectors_for([(norm, st.st_size, st.st_mtime_ns)]).get(norm)
            return None if vec is None else list(vec)
        if name in FOLDER_LEVEL:
            return None  # folder-level: see index() and tree()
        with self._lock:
            tags = self._sidecar.load().get(norm)
            value = tags.get(name) if isinstance(tags, dict) else None
            return _json_copy(value)

    def _created_ns(self, rel: str, mtime_ns: int, fallback: int) -> int:
        logged = self._created.get(rel)
        # A logged time after the file's last change cannot be its creation (clocks of writers
        # disagreeing, or a foreign file of the same name); trust the file system then.
        return logged if logged is not None and logged <= mtime_ns else fallback

    def _system_value(self, name: str, rel: str, rec: FileRec) -> Any:
        if name == "size":
            return rec.size
        if name == "modified":
            return iso_utc(rec.mtime_ns)
        fallback = rec.birth_ns if rec.birth_ns is not None else min(rec.mtime_ns, rec.ctime_ns)
        return iso_utc(self._created_ns(rel, rec.mtime_ns, fallback))

    def metatag_values(self, name: str) -> list[dict]:
        """`[{"file", "value"}]` for every listed file that has the metatag set, sorted by file."""
        if name in FOLDER_LEVEL:
            raise SlateError(f'"{name}" is a folder-level metatag: use Folder.{name}()')
        if name in ("size", "modified", "created"):
            with self._lock:
                self._tree.sync()
                return [{"file": rel, "value": self._system_value(name, rel, rec)}
                        for rel, rec in self._tree.iter_files()]
        if name == "embedding":
            listing = self.file_stats()
            vecs = self._vectors.vectors_for(listing)
            return [{"file": rel, "value": list(vecs[rel])} for rel, _, _ in listing if rel in vecs]
        with self._lock:
            data = self._sidecar.load()
            self._tree.sync()
            existing = self._tree.flat()[1]
            out = [{"file": rel, "value": tags.get(name)} for rel, tags in data.items()
                   if rel in existing and tags.get(name) is not None]
            out.sort(key=lambda d: str(d["file"]))
            return _json_copy(out)

    def metatag_query(self, name: str, contains: str | None = None) -> list[str]:
        """Files that have metatag `name` set, filtered by seed 000's `contains` rule; sorted."""
        if name in FOLDER_LEVEL:
            raise SlateError(f'"{name}" is a folder-level metatag and cannot be queried')
        if name in ("size", "modified", "created", "embedding"):
            declared = "string" if name in ("modified", "created") else "number"
            with self._lock:
                self._tree.sync()
                files = self._tree.iter_files()
                if contains is None or declared != "string":
                    return [rel for rel, _ in files]
                return [rel for rel, rec in files
                        if contains_match(self._system_value(name, rel, rec), contains, declared)]
        with self._lock:
            data = self._sidecar.load()
            self._tree.sync()
            existing = self._tree.flat()[1]
            out = []
            for rel, tags in data.items():
                value = tags.get(name)
                if value is None or rel not in existing:
                    continue
                if contains_match(value, contains, self.spec.effective_schema(rel).get(name)):
                    out.append(rel)
            out.sort()
            return out

    def set_metatag(self, rel: Rel, name: str, value: Any, *, checked: bool = False) -> None:
        """Set one user metatag of an existing file (None removes it); atomic and serialized. `checked`: as a
        person's edit (the `slate set` command, SlateView's edit box), the folder's declarations are enforced —
        a name the folder does not declare is refused with `did you mean`, a value not of the declared type too
        (a ladder's own writes are checked by the engine, which may turn a scalar into an array)."""
        if checked:
            self.check_metatag(rel, name, value)
        self.update_metatag(rel, name, lambda _old: value)

    def check_metatag(self, rel: Rel, name: str, value: Any) -> str | None:
        """The declared type of metatag `name` of `rel` (None when the folder declares no metatags at all, so
        any name goes), or a SlateError: a system or undeclared name, or a value that is not of its type."""
        if name in SYSTEM_METATAGS:
            raise SlateError(f'"{name}" is a system metatag and cannot be written')
        declared = self.spec.effective_schema(normalize_rel(rel))
        if not declared and not self.spec.files:
            return None
        if name not in declared:
            import difflib
            near = difflib.get_close_matches(name, list(declared), n=1)
            hint = f' (did you mean "{near[0]}"?)' if near else ""
            known = ", ".join(sorted(declared)) or "none"
            raise SlateError(f'metatag "{name}" is not declared for "{normalize_rel(rel)}" in folder "{self.name}"'
                             f"{hint}; declared: {known}")
        type_ = declared[name]
        if value is not None and not value_matches_type(value, type_):
            shown = json.dumps(value, ensure_ascii=False)
            raise SlateError(f'metatag "{name}" is declared {type_}, and {shown[:80]} is not one')
        return type_

    def update_metatag(self, rel: Rel, name: str, fn: Callable[[Any], Any]) -> Any:
        """Read-modify-write one user metatag under the folder's metatag lock; returns the new value."""
        if not isinstance(name, str) or not name:
            raise SlateError(f"metatag name must be a non-empty string (got {name!r})")
        if name in SYSTEM_METATAGS:
            raise SlateError(f'"{name}" is a system metatag and cannot be written')
        norm = normalize_rel(rel)
        if not self.exists(norm):
            raise SlateError(f'cannot set metatag "{name}": no file "{norm}" in folder "{self.name}"')
        self._writer.ensure_infra()
        with file_lock(os.path.join(self._writer.locks, "metatags.lock")):
            with self._lock:
                data = self._sidecar.load()
            entry = dict(data.get(norm) or {})
            value = fn(_json_copy(entry.get(name)))
            if value is None:
                entry.pop(name, None)
            else:
                try:
                    entry[name] = json.loads(json.dumps(value, allow_nan=False))  # unaliased from the caller
                except (TypeError, ValueError) as exc:
                    raise SlateError(f'metatag "{name}" of "{norm}" is not a JSON value: {exc}') from exc
            new = dict(data)
            if entry:
                new[norm] = entry
            else:
                new.pop(norm, None)
            raw = Sidecar.serialize(new)
            tmp = write_temp(self._writer.tmp, raw)
            with self._lock:
                st = self._writer.replace(tmp, self._sidecar.path)
                self._sidecar.adopt(new, st)
            fsync_dir(self._dir)
        return _json_copy(value)

    # --- writes ---------------------------------------------------------------------------------
    def write_text(self, rel: Rel, text: str) -> None:
        """Replace the file's contents with `text` (creating it and its parents); atomic, serialized."""
        self._writer.write(rel, lambda _read: text, self.read_text)

    def update_text(self, rel: Rel, fn: Callable[[str | None], str]) -> str:
        """Read-modify-write a file under its lock: `fn(old text or None)` gives the new text."""
        return self._writer.write(rel, lambda read: fn(read()), self.read_text)

    # --- similarity -----------------------------------------------------------------------------
    @property
    def vectors(self) -> VectorCache:
        """The folder's `embedding` vectors (kept current on writes once in use); the search engine reads them."""
        return self._vectors

    def similar(self, text: str, top_k: int = 5) -> list[tuple[str, float]]:
        """The files nearest to `text` by embedding cosine, best first (ties by path); files with no
        positive similarity are left out."""
        if top_k <= 0:
            return []
        with self._lock:
            self._tree.sync()
            listing = [(rel, rec.size, rec.mtime_ns) for rel, rec in self._tree.iter_files(sort=False)]
        return self._vectors.rank(text, listing, top_k)

    def refresh(self) -> None:
        """Drop every cache (listing, metatags, created times, vectors); the next read rescans.

        Never needed for correctness (every read is current); it frees memory and starts over."""
        with self._lock:
            self._tree.close()
            self._sidecar.forget()
            self._created.forget()
            self._vectors.clear()

    def close(self) -> None:
        """Release the folder's file-system watches and caches; a later read quietly opens them again."""
        self.refresh()

    @property
    def watched(self) -> bool:
        """True when the folder's listing is kept current by notifications for every cached directory
        (False: the re-stat fallback lists some or all directories again at each read)."""
        with self._lock:
            root = self._tree.sync()
            return root is not None and self._tree.watched_dirs() > 0 and not self._tree.has_unwatched()

