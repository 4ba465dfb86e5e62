"""Binding a run's slates: which directory each declared title names, and what is wrong with it.

A run never silently reads nothing: a slate no step writes to whose directory does not exist is a
`RunError` before the first model call, naming the resolved path and where it came from (`path:` and
its YAML line, or `slates=` / `--slate`). A slate that is written to may start empty (its directory is
created on the first write), and a declared folder that does not exist yet is an empty folder (SPEC);
both are returned as notes, which `ladr-lab run` prints as warnings. docs/DECISIONS.md, "Slates".
"""
from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from ..config.model import Ladder, SlateDecl
from ..errors import RunError
from ..slate import SlateStore


def _declared_at(ladder: Ladder, decl: SlateDecl) -> tuple[tuple, str]:
    """The document path of a slate's `path:` and ' (FILE:LINE:COL)' when known."""
    raw = ladder.raw.get("slates") if isinstance(ladder.raw, dict) else None
    for i, s in enumerate(raw if isinstance(raw, list) else []):
        if isinstance(s, dict) and s.get("title") == decl.title:
            where = ladder.where(("slates", i, "path"))
            return ("slates", i, "path"), (f" ({where})" if where else "")
    return (), ""


def bind_slates(ladder: Ladder, store: SlateStore, overrides: Mapping[str, str | os.PathLike]) -> list[str]:
    """Bind every declared slate of `ladder` in `store` (an override, else its `path:` relative to the ladder;
    a title the store already holds keeps its binding when not overridden). Returns the notes (a slate or a
    folder that does not exist yet); raises RunError for a slate that could only be read as empty."""
    unknown = set(overrides) - {d.title for d in ladder.slates}
    if unknown:
        raise RunError(f'--slate names undeclared slate(s): {", ".join(sorted(unknown))}')
    written = ladder.written_targets()
    notes: list[str] = []
    for decl in ladder.slates:
        where = overrides.get(decl.title)
        if where is None and decl.title in store:
            continue  # a store passed in (a notebook's warm one) keeps its binding
        path: tuple = ()
        if where is not None:
            origin, fix = f'is bound to "{os.fspath(where)}" (--slate or slates=)', "give an existing directory"
        elif decl.path is None:
            raise RunError(f'slate "{decl.title}" has no path: declare path: in the ladder or bind it with '
                           f'--slate "{decl.title}=DIR"')
        else:
            path, at = _declared_at(ladder, decl)
            origin = f'has path: "{decl.path}"{at}'
            fix = f'fix path: or bind the slate with --slate "{decl.title}=DIR"'
            where = ladder.base_dir / decl.path
        root = Path(os.path.abspath(os.fspath(where)))
        notes += _check_root(decl, root, origin, fix, written, path)
        store.bind(decl.title, root, list(decl.folders))
    return notes


def _check_root(decl: SlateDecl, root: Path, origin: str, fix: str, written: set[tuple[str, str]],
                path: tuple) -> list[str]:
    if root.exists() and not root.is_dir():
        raise RunError(f'slate "{decl.title}" {origin}, which is not a directory: {root}; {fix}', path=path)
    writes = {folder for title, folder in written if title == decl.title}
    if not root.exists():
        if not writes:
            raise RunError(f'slate "{decl.title}" {origin}, which does not exist: {root}. No step writes to this '
                           f'slate, so every read of it would find nothing; {fix}', path=path)
        return [f'slate "{decl.title}" {origin}, which does not exist yet: {root}; it is created on the first '
                "write, and reads before that find nothing"]
    return [f'slate "{decl.title}": folder "{f.name}" does not exist in {root}; no step writes to it, so reads of '
            "it find nothing" for f in decl.folders if f.name not in writes and not (root / f.name).is_dir()]


__all__ = ["bind_slates"]
