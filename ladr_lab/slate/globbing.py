"""Glob patterns over a folder's cached tree: `*`/`?`/`[...]` stay in one component, `**` spans them.

A pattern is split on `/` and each component is matched against one path component with
`fnmatch` (whose translation uses atomic groups, so a hostile pattern such as `*a*a*a*a*b` cannot
trigger catastrophic backtracking). A component that is exactly `**` matches zero or more
directories; as the last component it matches every file below. A component that starts with `**`
followed by more text (`**.md`) is read as `**/*.md`, which is what people mean by it. Elsewhere a
double star behaves like a single one. Matching walks only the directories the pattern can reach,
so `*.md` looks at the folder's own entries and nothing else.
"""
from __future__ import annotations

import fnmatch
import re
from collections.abc import Callable, Iterator
from typing import Any

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
