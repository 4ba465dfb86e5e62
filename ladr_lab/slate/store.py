"""The slate store: every slate of a run, by title, each a directory whose declared folders are
subdirectories (SPEC §9). A child run shares its parent's store, and so its caches and locks.

A store holds file-system watches (one per cached directory, see watch.py) for as long as its
folders are cached. `close()` (or leaving a `with SlateStore() as store:` block, or dropping the
last reference) releases them; a closed store still works and simply opens them again when read.
Binding a title again to the same directory and declarations keeps the bound slate (and its warm
caches); binding it elsewhere closes the old one.
"""
from __future__ import annotations

import os
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ..display import Displayable
from ..errors import PathRefused, SlateError
from .embed import Embedder, get_embedder
from .folder import Folder
from .paths import as_path_str, is_listable_name, normalize_rel
from .spec import FolderSpec

__all__ = ["FolderSpec", "Slate", "SlateStore"]


class Slate(Displayable):
    """One bound slate: a title, a root directory and its folders (declared, or any when undeclared)."""

    def __init__(self, title: str, root: str | os.PathLike, folders: Iterable[FolderSpec] | None,
                 embedder: Any, *, watch: bool = True) -> None:
        self.title = title
        self.root = Path(os.path.abspath(os.fspath(root)))
        self._embedder = embedder
        self._watch = watch
        self._declared: dict[str, FolderSpec] | None = None
        if folders is not None:
            self._declared = {}
            for spec in folders:
                key = self._check_folder_name(spec.name)
                if key in self._declared:
                    raise SlateError(f'folder "{spec.name}" is declared twice in slate "{title}"')
                self._declared[key] = spec
        self._folders: dict[str, Folder] = {}
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"Slate({self.title!r}, {str(self.root)!r})"

    def to_html(self) -> str:
        """The slate's folders with their file counts and sizes."""
        from .html import slate_html
        return slate_html(self)

    def _check_folder_name(self, name: object) -> str:
        try:
            return normalize_rel(name)
        except PathRefused as exc:
            raise SlateError(f'bad folder name "{name}" in slate "{self.title}": {exc}') from None

    def same_binding(self, root: str | os.PathLike, folders: Iterable[FolderSpec] | None) -> bool:
        """True when binding `root` with `folders` would give this very slate."""
        declared = None if folders is None else list(folders)
        if Path(os.path.abspath(os.fspath(root))) != self.root:
            return False
        if declared is None or self._declared is None:
            return declared is None and self._declared is None
        return declared == list(self._declared.values())

    def folder(self, name: str | os.PathLike) -> Folder:
        """The folder called `name`; an undeclared name is a SlateError (unless the slate was bound
        without declarations, when any safe name is accepted)."""
        try:
            key = normalize_rel(name)
        except PathRefused as exc:
            if self._declared is None:
                raise SlateError(f'bad folder name "{name}" in slate "{self.title}": {exc}') from None
            key = as_path_str(name)
        with self._lock:
            existing = self._folders.get(key)
            if existing is not None:
                return existing
            if self._declared is not None:
                spec = self._declared.get(key)
                if spec is None:
                    known = ", ".join(f'"{n}"' for n in self._declared) or "none"
                    raise SlateError(f'slate "{self.title}" has no folder "{key}" (declared: {known})')
            else:
                spec = FolderSpec(name=key)
            folder = Folder(spec, self.root / key, self._embedder, watch=self._watch)
            self._folders[key] = folder
            return folder

    def folder_names(self) -> list[str]:
        """Declared folder names in declaration order; without declarations, the root's subdirectories."""
        if self._declared is not None:
            return [spec.name for spec in self._declared.values()]
        try:
            with os.scandir(self.root) as it:
                return sorted(e.name for e in it if is_listable_name(e.name) and e.is_dir(follow_symlinks=False))
        except OSError:
            return []

    def _opened(self) -> list[Folder]:
        with self._lock:
            return list(self._folders.values())

    def refresh(self) -> None:
        """Drop the caches of every folder opened so far."""
        for folder in self._opened():
            folder.refresh()

    def close(self) -> None:
        """Release the watches and caches of every folder opened so far (they reopen when read)."""
        for folder in self._opened():
            folder.close()


class SlateStore(Displayable):
    """All slates of one run, by title; shared with child runs.

    `watch=False` keeps listings current by re-stating at each read instead of file-system
    notifications (for folders on network file systems, whose remote edits inotify cannot see).
    """

    def __init__(self, embedder: Embedder | str | None = None, *, watch: bool = True) -> None:
        self._embedder_spec = embedder
        self._embedder: Embedder | None = embedder if not (embedder is None or isinstance(embedder, str)) else None
        self._watch = watch
        self._slates: dict[str, Slate] = {}
        self._lock = threading.Lock()

    def __enter__(self) -> SlateStore:
        return self

    def __repr__(self) -> str:
        return f"<SlateStore: {', '.join(self.titles()) or 'nothing bound'}>"

    def to_html(self) -> str:
        """Every bound slate with its folders."""
        from .html import store_html
        return store_html(self)

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def embedder(self) -> Embedder:
        """The store's embedder, created on first use (the offline hashing one by default)."""
        if self._embedder is None:
            with self._lock:
                if self._embedder is None:
                    spec = self._embedder_spec
                    self._embedder = get_embedder(spec if isinstance(spec, str) else None)
        return self._embedder

    def bind(self, title: str, root: str | os.PathLike, folders: Iterable[FolderSpec] | None = None) -> Slate:
        """Bind `title` to the directory `root` (which need not exist yet), replacing an earlier binding
        (kept, caches and all, when it has the same directory and declarations)."""
        declared = list(folders) if folders is not None else None
        with self._lock:
            old = self._slates.get(title)
        if old is not None and old.same_binding(root, declared):
            return old
        slate = Slate(title, root, declared, lambda: self.embedder, watch=self._watch)
        with self._lock:
            old = self._slates.get(title)
            self._slates[title] = slate
        if old is not None:
            old.close()
        return slate

    def slate(self, title: str) -> Slate:
        """The slate bound as `title`; SlateError naming it (and the known titles) otherwise."""
        with self._lock:
            found = self._slates.get(title)
            if found is None:
                known = ", ".join(f'"{t}"' for t in self._slates) or "none"
                raise SlateError(f'no slate "{title}" is bound (bound: {known})')
            return found

    def titles(self) -> list[str]:
        """Titles of the bound slates, in binding order."""
        with self._lock:
            return list(self._slates)

    def close(self) -> None:
        """Release every slate's watches and caches (the bindings stay; reads reopen them)."""
        with self._lock:
            slates = list(self._slates.values())
        for slate in slates:
            slate.close()

    def __contains__(self, title: object) -> bool:
        return title in self._slates
