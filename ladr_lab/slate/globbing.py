"""Glob patterns over a folder's cached tree: `*`/`?`/`[...]` stay in one component, `**` spans them.

A pattern is split on `/` and each component is matched against one path component with
`fnmatch` (whose translation uses atomic groups, so a hostile pattern such as `*a*a*a*a*b` cannot
trigger catastrophic backtracking). A component that is exactly `**` matches zero or more
directories; as the last component it matches every file below. A component that starts with `**`
followed by more text (`**.md`) is read as `**/*.md`, which is what people mean by it. Elsewhere a
double star behaves like a single one. Matching walks only the directories the pattern can reach,
so `*.md` looks at the folder's own entries and nothing else. `match_glob` asks the same of one path,
without a tree: it is True exactly for the files `walk_glob` would yield were that path in the tree.
"""
from __future__ import annotations

import fnmatch
import re
from collections.abc import Callable, Iterator
from functools import lru_cache
from typing import Any

__all__ = ["DSTAR", "compile_glob", "match_glob", "walk_glob"]

DSTAR = "**"
_MAGIC = re.compile(r"[*?\[]")


class _Comp:
    """One pattern component: a literal name (looked up directly) or a compiled matcher."""

    __slots__ = ("literal", "match")

    def __init__(self, text: str) -> None:
        if _MAGIC.search(text) is None:
            self.literal: str | None = text
            self.match: Callable[[str], Any] | None = None
        else:
            self.literal = None
            self.match = re.compile(fnmatch.translate(text)).match

    def matches(self, name: str) -> bool:
        """Whether this component matches the one path component `name`."""
        if self.literal is not None:
            return name == self.literal
        assert self.match is not None
        return self.match(name) is not None

    def names(self, candidates: dict) -> Iterator[str]:
        """Yield the names in `candidates` that this component matches."""
        if self.literal is not None:
            if self.literal in candidates:
                yield self.literal
            return
        match = self.match
        assert match is not None
        for name in candidates:
            if match(name):
                yield name


def compile_glob(pattern: object) -> list[str | _Comp] | None:
    """Compile a pattern into components (`DSTAR` or matchers); None when it must match nothing."""
    if not isinstance(pattern, str) or pattern == "" or len(pattern) > 4096:
        return None
    if "\x00" in pattern or "\\" in pattern or pattern.startswith("/"):
        return None
    comps: list[str | _Comp] = []
    # canonicalised as requested paths are (paths.py): `./*.md`, `notes//*.md` and `notes/*.md/` are
    # `*.md`, `notes/*.md` and `notes/*.md`, as standard glob reads them; `..` and absolute stay refused
    parts_in = [part for part in pattern.split("/") if part not in ("", ".")]
    if not parts_in:
        return None
    for part in parts_in:
        if part == "..":
            return None
        if part.startswith("**") and part != DSTAR:
            rest = part.lstrip("*")
            parts = [DSTAR, "*" + rest]
        else:
            parts = [part]
        for p in parts:
            if p == DSTAR:
                if comps and comps[-1] == DSTAR:
                    continue  # `**/**` means the same as `**`, and collapsing keeps the walk linear
                comps.append(DSTAR)
            else:
                comps.append(_Comp(p))
    return comps


def walk_glob(root: Any, comps: list[str | _Comp], fresh: Callable[[Any], Any] | None = None) -> list[str]:
    """Return the sorted relative paths of files under `root` matching `comps`.

    `root` and its descendants expose `files` and `dirs` dicts keyed by entry name; `fresh(node)`,
    when given, revalidates a node before it is read and returns it (or None if it vanished).
    """
    out: set[str] = set()
    seen: set[tuple[Any, int]] = set()  # nodes hash by identity
    last = len(comps) - 1
    # An explicit stack rather than recursion: directory depth is bounded only by PATH_MAX.
    stack: list[tuple[Any, int, str]] = [(root, 0, "")] if comps else []
    while stack:
        node, i, prefix = stack.pop()
        key = (node, i)
        if key in seen:
            continue
        seen.add(key)
        if fresh is not None:
            node = fresh(node)
            if node is None:
                continue
        comp = comps[i]
        if comp == DSTAR:
            if i == last:
                for name in node.files:
                    out.add(prefix + name)
                for name, child in list(node.dirs.items()):
                    stack.append((child, i, prefix + name + "/"))
                continue
            stack.append((node, i + 1, prefix))
            for name, child in list(node.dirs.items()):
                stack.append((child, i, prefix + name + "/"))
            continue
        assert isinstance(comp, _Comp)
        if i == last:
            for name in comp.names(node.files):
                out.add(prefix + name)
            continue
        for name in list(comp.names(node.dirs)):
            child = node.dirs.get(name)
            if child is not None:
                stack.append((child, i + 1, prefix + name + "/"))
    return sorted(out)


@lru_cache(maxsize=256)
def _compiled(pattern: str) -> tuple[str | _Comp, ...] | None:
    comps = compile_glob(pattern)
    return None if comps is None else tuple(comps)


def match_glob(pattern: object, path: object) -> bool:
    """Whether the folder-relative file path `path` matches `pattern`, as `walk_glob` reads patterns.

    True exactly when `walk_glob(root, compile_glob(pattern))` would yield `path` from a tree holding that file:
    `*`, `?` and `[...]` stay within one component, `**` spans zero or more folders (and, as the last component,
    matches every file below), a component of `**` and more text (`**.md`) reads as `**/*.md`, and a pattern
    `compile_glob` refuses (empty, absolute, with `..`, a backslash or NUL) matches nothing. The path is read as
    walk_glob spells its answers: components split on `/`, empty and `.` ones dropped; a path with nothing left,
    or with `..` or NUL in it, matches nothing. Hiding entries (the slate's dot-files) is the tree's business, not
    the pattern's: `*` matches `.x` here, as it would in a tree that listed it. The walk is linear in the path's
    components times the pattern's, whatever the number of `**`.
    """
    if not isinstance(pattern, str) or not isinstance(path, str) or "\x00" in path:
        return False
    comps = _compiled(pattern)
    parts = [p for p in path.split("/") if p not in ("", ".")]
    if comps is None or not parts or ".." in parts:
        return False
    last = len(comps) - 1

    def closed(states: set[int]) -> set[int]:
        """The states plus those reached by letting a `**` (not the last component) match no folder."""
        out, stack = set(), list(states)
        while stack:
            i = stack.pop()
            if i not in out:
                out.add(i)
                if i < last and comps[i] == DSTAR:
                    stack.append(i + 1)
        return out

    states = closed({0})
    for name in parts[:-1]:                # the folders: a `**` takes one and stays, a component takes one and moves on
        step = set()
        for i in states:
            comp = comps[i]
            if comp == DSTAR:
                step.add(i)
            elif i < last and isinstance(comp, _Comp) and comp.matches(name):
                step.add(i + 1)
        states = closed(step)
        if not states:
            return False
    # the file: the last component matches it, or it is a last `**`, which matches every file below
    comp = comps[last]
    return last in states and (comp == DSTAR or isinstance(comp, _Comp) and comp.matches(parts[-1]))
