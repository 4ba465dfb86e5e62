"""The slate store: every slate of a run, by title, each a directory whose declared folders are
subdirectories (SPEC §9). A child run shares its parent's store, and so its caches and locks."""
from __future__ import annotations

import os
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ladr_lab.errors import PathRefused, SlateError
from ladr_lab.slate.embed import Embedder, get_embedder
from ladr_lab.slate.folder import Folder
from ladr_lab.slate.paths import is_listable_name, normalize_rel


@dataclass(frozen=True)
class FolderSpec:
    """What a ladder declares for one folder: its metatags and its declared files' own metatags."""

    name: str
    metatags: dict[str, str] = field(default_factory=dict)
    files: dict[str, dict[str, str]] = field(default_factory=dict)

    def effective_schema(self, rel: str) -> dict[str, str]:
        """The metatags a file may carry: the folder's, plus (overriding) the file's own."""
        own = self.files.get(rel)
        return {**self.metatags, **own} if own else dict(self.metatags)

    @classmethod
    def from_config(cls, data: Mapping[str, Any]) -> FolderSpec:
        """Build from the ladder's YAML shape: `{name, metatags?, files?: [{name, metatags?}]}`."""
        files: dict[str, dict[str, str]] = {}
        raw_files = data.get("files") or []
        if isinstance(raw_files, Mapping):
            raw_files = [{"name": k, "metatags": v} for k, v in raw_files.items()]
        for item in raw_files:
            if isinstance(item, str):
                files[item] = {}
            else:
                files[str(item["name"])] = dict(item.get("metatags") or {})
        return cls(name=str(data["name"]), metatags=dict(data.get("metatags") or {}), files=files)


class Slate:
    """One bound slate: a title, a root directory and its folders (declared, or any when undeclared)."""

    def __init__(self, title: str, root: str | Path, folders: Iterable[FolderSpec] | None,
                 embedder: Any) -> None:
        self.title = title
        self.root = Path(os.path.abspath(os.fspath(root)))
        self._embedder = embedder
        self._declared: dict[str, FolderSpec] | None = None
        if folders is not None:
            self._declared = {}
            for spec in folders:
                self._check_folder_name(spec.name)
                if spec.name in self._declared:
                    raise SlateError(f'folder "{spec.name}" is declared twice in slate "{title}"')
                self._declared[spec.name] = spec
        self._folders: dict[str, Folder] = {}
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"Slate({self.title!r}, {str(self.root)!r})"

    def _check_folder_name(self, name: str) -> None:
        try:
            normalize_rel(name)
        except PathRefused as exc:
            raise SlateError(f'bad folder name "{name}" in slate "{self.title}": {exc}') from None

    def folder(self, name: str) -> Folder:
        """The folder called `name`; an undeclared name is a SlateError (unless the slate was bound
        without declarations, when any safe name is accepted)."""
        with self._lock:
            existing = self._folders.get(name)
            if existing is not None:
                return existing
            if self._declared is not None:
                spec = self._declared.get(name)
                if spec is None:
                    known = ", ".join(f'"{n}"' for n in self._declared) or "none"
                    raise SlateError(f'slate "{self.title}" has no folder "{name}" (declared: {known})')
            else:
                self._check_folder_name(name)
                spec = FolderSpec(name=name)
            folder = Folder(spec, self.root / spec.name, self._embedder)
            self._folders[name] = folder
            return folder

    def folder_names(self) -> list[str]:
        """Declared folder names in declaration order; without declarations, the root's subdirectories."""
        if self._declared is not None:
            return list(self._declared)
        try:
            with os.scandir(self.root) as it:
                return sorted(e.name for e in it if is_listable_name(e.name) and e.is_dir(follow_symlinks=False))
        except OSError:
            return []

    def refresh(self) -> None:
        """Drop the caches of every folder opened so far."""
        with self._lock:
            folders = list(self._folders.values())
        for folder in folders:
            folder.refresh()


class SlateStore:
    """All slates of one run, by title; shared with child runs."""

    def __init__(self, embedder: Embedder | str | None = None) -> None:
        self._embedder_spec = embedder
        self._embedder: Embedder | None = embedder if not (embedder is None or isinstance(embedder, str)) else None
        self._slates: dict[str, Slate] = {}
        self._lock = threading.Lock()

    @property
    def embedder(self) -> Embedder:
        """The store's embedder, created on first use (the offline hashing one by default)."""
        if self._embedder is None:
            with self._lock:
                if self._embedder is None:
                    spec = self._embedder_spec
                    self._embedder = get_embedder(spec if isinstance(spec, str) else None)
        return self._embedder

    def bind(self, title: str, root: str | Path, folders: Iterable[FolderSpec] | None = None) -> Slate:
        """Bind `title` to the directory `root` (which need not exist yet), replacing an earlier binding."""
        slate = Slate(title, root, list(folders) if folders is not None else None, lambda: self.embedder)
        with self._lock:
            self._slates[title] = slate
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

    def __contains__(self, title: object) -> bool:
        return title in self._slates
