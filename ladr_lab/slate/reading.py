"""Reading one slate file safely: the whole of it, or a bounded excerpt.

Both reads open the file with O_NOFOLLOW (a final component swapped for a link after resolution is
refused), O_NONBLOCK (a FIFO planted in the folder cannot hang the reader) and O_CLOEXEC, then
`fstat` the descriptor and refuse anything that is not a regular file.

An excerpt is read only as far as it is needed: at most `4 * max_chars + 4` bytes, since no UTF-8
character takes more than four bytes, so a 200 MB file costs a few kilobytes of I/O and memory.
It is decoded incrementally, so a multi-byte character cut by the bound is left out whole rather
than turned into a replacement character; undecodable bytes inside the text are replaced, as
`read_text` does.
"""
from __future__ import annotations

import codecs
import os
import stat
from dataclasses import dataclass

from ..errors import SlateError

__all__ = ["Excerpt", "check_max_chars", "read_regular_excerpt", "read_regular_file"]

_FLAGS = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
_CHUNK = 1 << 16


@dataclass(frozen=True)
class Excerpt:
    """The start of a file, at most `max_chars` characters of it, and whether that is all of it."""

    text: str          # at most max_chars characters (UTF-8, undecodable bytes replaced)
    total_bytes: int   # the file's size on disk when it was read
    truncated: bool    # True when `text` is not the whole file


def _open_regular(real: str) -> tuple[int, os.stat_result] | None:
    """An open descriptor and its fstat for a regular file, or None (missing, odd or unreadable)."""
    try:
        fd = os.open(real, _FLAGS)
    except (OSError, ValueError):
        return None
    try:
        st = os.fstat(fd)
    except OSError:
        os.close(fd)
        return None
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        return None
    return fd, st


def read_regular_file(real: str) -> bytes | None:
    """Read a regular file's bytes, or None if it is missing, not regular, or unreadable."""
    opened = _open_regular(real)
    if opened is None:
        return None
    fd, st = opened
    try:
        chunks = []
        while True:
            chunk = os.read(fd, max(st.st_size + 1, _CHUNK))
            if not chunk:
                break
            chunks.append(chunk)
        return b"".join(chunks)
    except OSError:
        return None
    finally:
        os.close(fd)


def check_max_chars(max_chars: object) -> int:
    """`max_chars` as a non-negative int, or SlateError."""
    if isinstance(max_chars, bool) or not isinstance(max_chars, int) or max_chars < 0:
        raise SlateError(f"max_chars must be a non-negative integer (got {max_chars!r})")
    return max_chars


def read_regular_excerpt(real: str, max_chars: int) -> Excerpt | None:
    """The first `max_chars` characters of a regular file (see the module docstring), or None."""
    max_chars = check_max_chars(max_chars)
    opened = _open_regular(real)
    if opened is None:
        return None
    fd, st = opened
    budget = 4 * max_chars + 4      # enough bytes for max_chars + 1 characters, whatever they are
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    pieces: list[str] = []
    have = 0                        # characters decoded so far
    read = 0                        # bytes read so far
    eof = False
    try:
        # One more character than asked tells whether the text goes on; ASCII needs a single read.
        while have <= max_chars and read < budget:
            # First read: exactly enough for ASCII. Later ones: enough for the missing characters
            # even if each takes four bytes. The budget caps the total either way.
            want = min(budget - read, max_chars + 4 if not read else 4 * (max_chars + 1 - have))
            chunk = os.read(fd, want)
            if not chunk:
                eof = True
                break
            read += len(chunk)
            piece = decoder.decode(chunk)
            pieces.append(piece)
            have += len(piece)
    except OSError:
        return None
    finally:
        os.close(fd)
    if eof:
        tail = decoder.decode(b"", final=True)  # an incomplete sequence at the real end is replaced
        pieces.append(tail)
        have += len(tail)
    text = "".join(pieces)
    return Excerpt(text=text[:max_chars], total_bytes=st.st_size, truncated=have > max_chars)
