"""Safe path handling for slate folders: the one place that decides what a step may touch.

A *relative path* names a file (or subfolder) below a folder with `/` separators; a `str` or any
`os.PathLike` that gives one. `normalize_rel` turns it into its **canonical form** or refuses it:

- refused outright: non-strings, NUL bytes, backslashes, absolute paths (a leading `/`), strings
  that are not valid UTF-8 (lone surrogates), any `..` component, and any component starting with
  `.` other than `.` itself (hidden names such as `.metatags.json` or `.ladr`);
- canonicalised: empty components and `.` components are dropped, so `./core.md`,
  `notes//algebra.md`, `core.md/` and `./notes/./a.md` become `core.md`, `notes/algebra.md`,
  `core.md` and `notes/a.md`, which are the shapes a model writes;
- refused when nothing is left (``""``, `.`, `./`).

Refusing `..` rather than resolving it keeps the rule auditable: every component of an accepted
path is a real, visible name, so no accepted string can name anything but a descendant (symlinks
are checked separately by `resolve_under`), the canonical form is a fixed point, and two strings
that name the same file through the same directories get the same canonical form, which is what
metatag keys and the retrieve loop's dedup compare.
"""
from __future__ import annotations

import os

from ..errors import PathRefused

__all__ = ["as_path_str", "inside", "is_listable_name", "normalize_rel", "resolve_under"]


def as_path_str(rel: object) -> str:
    """`rel` as a string: a `str` as is, an `os.PathLike` through `os.fspath`; PathRefused otherwise."""
    if isinstance(rel, str):
        return rel
    if isinstance(rel, os.PathLike):
        value = os.fspath(rel)
        if isinstance(value, str):
            return value
    raise PathRefused(f"path must be a string or os.PathLike, got {type(rel).__name__}")


def normalize_rel(rel: object) -> str:
    """Return the canonical form of a folder-relative path (see the module docstring), or raise PathRefused."""
    text = as_path_str(rel)
    if "\x00" in text:
        raise PathRefused(f"path contains a NUL byte: {text!r}")
    if "\\" in text:
        raise PathRefused(f"path contains a backslash: {text!r}")
    if text.startswith("/"):
        raise PathRefused(f"absolute path: {text!r}")
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            raise PathRefused(f"path is not valid UTF-8: {text!r}") from None
    parts = []
    for part in text.split("/"):
        if part == "" or part == ".":
            continue
        if part == "..":
            raise PathRefused(f"path has a '..' component: {text!r}")
        if part.startswith("."):
            raise PathRefused(f"path has a hidden component {part!r}: {text!r}")
        parts.append(part)
    if not parts:
        raise PathRefused(f"empty path: {text!r}")
    return "/".join(parts)


def is_listable_name(name: str) -> bool:
    """True when a single directory entry name may appear in listings (not hidden, not odd)."""
    if not name or name.startswith(".") or "\\" in name:
        return False
    if name.isascii():
        return True
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def inside(real: str, base_real: str) -> str | None:
    """Return `real` relative to `base_real` (POSIX form, "" for the base itself) or None if outside."""
    if real == base_real:
        return ""
    prefix = base_real if base_real.endswith(os.sep) else base_real + os.sep
    if not real.startswith(prefix):
        return None
    return real[len(prefix):].replace(os.sep, "/")


def resolve_under(base: str, rel: object) -> str:
    """Resolve `rel` below the directory `base`; return the real absolute path or raise PathRefused.

    Symlinks are followed (realpath) and then the real path must still be inside the base's real
    path, with no hidden component, so a link may point elsewhere in the folder but never out.
    """
    norm = normalize_rel(rel)
    base_real = os.path.realpath(base)
    real = os.path.realpath(os.path.join(base_real, norm))
    rel_real = inside(real, base_real)
    if rel_real is None:
        raise PathRefused(f"path leaves the folder: {as_path_str(rel)!r}")
    if rel_real == "":
        raise PathRefused(f"path names the folder itself: {as_path_str(rel)!r}")
    if any(p.startswith(".") for p in rel_real.split("/")):
        raise PathRefused(f"path leads to a hidden name: {as_path_str(rel)!r}")
    return real
