"""Safe path handling for slate folders: the one place that decides what a step may touch.

A *relative path* names a file below a folder with `/` separators. It is refused when it is empty,
absolute, contains NUL or a backslash, has an empty component, or has any component starting with
`.` (which covers `.`, `..` and every hidden name). Refusing `..` outright, rather than normalising
it, keeps the rule simple enough to audit: no accepted string can name anything but a descendant.
"""
from __future__ import annotations

import os
import stat

from ladr_lab.errors import PathRefused


def normalize_rel(rel: object) -> str:
    """Return the canonical form of a folder-relative path, or raise PathRefused."""
    if not isinstance(rel, str):
        raise PathRefused(f"path must be a string, got {type(rel).__name__}")
    if rel == "":
        raise PathRefused("empty path")
    if "\x00" in rel:
        raise PathRefused(f"path contains a NUL byte: {rel!r}")
    if "\\" in rel:
        raise PathRefused(f"path contains a backslash: {rel!r}")
    if rel.startswith("/"):
        raise PathRefused(f"absolute path: {rel!r}")
    if not rel.isascii():
        try:
            rel.encode("utf-8")
        except UnicodeEncodeError:
            raise PathRefused(f"path is not valid UTF-8: {rel!r}") from None
    # A trailing slash is how index() names subfolders ("notes/"), so it is accepted and dropped.
    body = rel[:-1] if rel.endswith("/") else rel
    parts = body.split("/")
    for part in parts:
        if part == "":
            raise PathRefused(f"path has an empty component: {rel!r}")
        if part.startswith("."):
            raise PathRefused(f"path has a hidden or relative component {part!r}: {rel!r}")
    return body


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


def resolve_under(base: str, rel: str) -> str:
    """Resolve `rel` below the directory `base`; return the real absolute path or raise PathRefused.

    Symlinks are followed (realpath) and then the real path must still be inside the base's real
    path, with no hidden component, so a link may point elsewhere in the folder but never out.
    """
    norm = normalize_rel(rel)
    base_real = os.path.realpath(base)
    real = os.path.realpath(os.path.join(base_real, norm))
    rel_real = inside(real, base_real)
    if rel_real is None:
        raise PathRefused(f"path leaves the folder: {rel!r}")
    if rel_real == "":
        raise PathRefused(f"path names the folder itself: {rel!r}")
    if any(p.startswith(".") for p in rel_real.split("/")):
        raise PathRefused(f"path leads to a hidden name: {rel!r}")
    return real


def read_regular_file(real: str) -> bytes | None:
    """Read a regular file's bytes, or None if it is missing, not regular, or unreadable.

    O_NOFOLLOW refuses a final component swapped for a link after resolution, and O_NONBLOCK keeps a
    FIFO planted in the folder from hanging the reader; fstat then rejects anything not regular.
    """
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    flags |= getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(real, flags)
    except (OSError, ValueError):
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return None
        chunks = []
        while True:
            chunk = os.read(fd, max(st.st_size + 1, 65536))
            if not chunk:
                break
            chunks.append(chunk)
        return b"".join(chunks)
    except OSError:
        return None
    finally:
        os.close(fd)
