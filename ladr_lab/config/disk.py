"""The ladder against the disk: slate `path:`s that do not exist, and declared folders missing from them.

These rules read the file system, so they live in a registry of their own (`DISK`), merged in by
`ladr-lab validate` and `ladr-lab lint` (`with_disk_rules`) but not by `load_ladder`: a ladder loaded in a
notebook or a test is often bound to other directories at run time (`Run(slates=...)`, `--slate`), and
`Run` checks the directories it actually binds (engine/run.py). What counts as a mistake depends on use:

- a slate no step writes to, whose `path:` does not exist, can only ever be read as empty: an error
  (`missing-slate-root`), almost always a typo, with a did-you-mean from the directories beside it;
- a slate a step writes to may start empty (SPEC: a declared folder is created on first write): a
  warning (`new-slate-root`) naming the directory that will be created, so a typo shows before it
  grows a second tree;
- a declared folder missing from an existing slate directory, when no step writes to it: a warning
  (`missing-slate-folder`); a folder that is written to is simply created on the first write.

Every message names the resolved absolute path; a relative `path:` is relative to the ladder file.
"""
from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from .rules import RULES, Doc, Rule, Site, problem, rule, suggest
from .walker import Registry
from .writes import write_items

DISK: dict[str, list[tuple[str, Rule]]] = {}


def with_disk_rules(registry: Registry | None = None) -> Registry:
    """`registry` (default: every rule `load_ladder` runs) plus the rules that look at the disk."""
    merged = {kind: list(rules) for kind, rules in (RULES if registry is None else registry).items()}
    for kind, rules in DISK.items():
        merged.setdefault(kind, []).extend(rules)
    return merged


def written_targets(doc: Doc) -> set[tuple[str, str | None]]:
    """(slate, folder) of every write the document declares: each slateWrite and each gated write."""
    out: set[tuple[str, str | None]] = set()

    def add(to: Any) -> None:
        if isinstance(to, dict) and isinstance(to.get("slate"), str):
            folder = to.get("folder")
            out.add((to["slate"], folder.strip("/") if isinstance(folder, str) else None))
    for scope in doc.scopes.values():
        sw = scope.raw.get("slateWrite")
        if isinstance(sw, dict):
            add(sw.get("to"))
        gate = scope.raw.get("if")
        for branch in ("then", "else"):
            action = gate.get(branch) if isinstance(gate, dict) else None
            if isinstance(action, dict):
                for _, w in write_items(action):
                    if isinstance(w, dict):
                        add(w.get("to"))
    return out


def _root(slate: Any, doc: Doc) -> Path | None:
    """The absolute directory a slate's `path:` names (None without one)."""
    path = slate.get("path") if isinstance(slate, dict) else None
    if not isinstance(path, str) or not path.strip():
        return None
    base = Path(doc.base_dir) if doc.base_dir is not None else Path(".")
    return Path(os.path.abspath(base / path))


def _near(root: Path, written: str) -> str | None:
    """The `path:` as written with its last part replaced by a directory beside it of a close name."""
    try:
        with os.scandir(root.parent) as it:
            names = [e.name for e in it if not e.name.startswith(".") and e.is_dir()]
    except OSError:
        return None
    near = suggest(root.name, names)
    if near is None:
        return None
    head, sep, _ = written.rstrip("/").rpartition("/")
    return head + sep + near


def _title(slate: dict) -> str:
    title = slate.get("title")
    return str(title) if isinstance(title, str) else "(untitled)"


def _written(title: str, doc: Doc) -> bool:
    return any(t == title for t, _ in written_targets(doc))


@rule("slate", "missing-slate-root", registry=DISK)
def _missing_root(site: Site) -> Iterator[ConfigError]:
    root = _root(site.raw, site.doc)
    if root is None or root.is_dir():
        return
    title, written = _title(site.raw), site.raw["path"]
    if root.exists():
        yield problem(f'slate "{title}": path "{written}" is not a directory (resolved to {root})', at=("path",))
        return
    if _written(title, site.doc):
        return              # new-slate-root: its directory is created on the first write
    parent = "" if root.parent.is_dir() else f"; its parent {root.parent} does not exist either"
    yield problem(f'slate "{title}": path "{written}" does not exist (resolved to {root}{parent}); no step writes '
                  "to this slate, so every read of it would find nothing", at=("path",),
                  suggestion=_near(root, written))


@rule("slate", "new-slate-root", registry=DISK)
def _new_root(site: Site) -> Iterator[ConfigError]:
    root = _root(site.raw, site.doc)
    if root is None or root.exists() or not _written(_title(site.raw), site.doc):
        return
    yield problem(f'slate "{_title(site.raw)}": path "{site.raw["path"]}" does not exist yet (resolved to {root}); '
                  "it will be created on the first write, and reads before that find nothing", at=("path",),
                  suggestion=_near(root, site.raw["path"]), severity="warning")


@rule("folder", "missing-slate-folder", registry=DISK)
def _missing_folder(site: Site) -> Iterator[ConfigError]:
    slate = site.doc.data["slates"][site.path[1]]
    root = _root(slate, site.doc)
    if root is None or not root.is_dir():
        return
    name, title = site.raw["name"].strip("/"), _title(slate)
    if (title, name) in written_targets(site.doc) or (root / name).is_dir():
        return
    yield problem(f'slate "{title}": folder "{name}" does not exist in {root}; no step writes to it, so every '
                  "read of it would find nothing", at=("name",), suggestion=_near(root / name, name),
                  severity="warning")


__all__ = ["DISK", "with_disk_rules", "written_targets"]
