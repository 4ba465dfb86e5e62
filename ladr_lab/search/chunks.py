"""Splitting a document into chunks: paragraphs packed up to a size, each with its heading context.

A chunk is a run of whole paragraphs (blank-line separated) of at most `max_chars` characters; a
longer paragraph is cut at the last sentence end or space before the limit. Each chunk carries
its 0-based `index` in the document, its character offset, and a `context`: the trail of Markdown
headings above it (`"Guide > Install"`), else the document's title.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["Chunk", "MAX_CHARS", "iter_chunks", "title_of"]

MAX_CHARS = 1000
_HEADING = re.compile(r"^(#{1,6})\s+(.*\S)\s*$")
_PARA = re.compile(r"\n[ \t]*\n")


@dataclass(frozen=True)
class Chunk:
    """One chunk of a document."""

    index: int
    text: str
    start: int
    context: str


def title_of(text: str, fallback: str) -> str:
    """The document's title: its first Markdown heading, else its first non-empty line (clipped), else `fallback`."""
    for line in text.splitlines()[:50]:
        s = line.strip()
        if not s:
            continue
        m = _HEADING.match(s)
        title = m.group(2) if m else s
        return title[:200]
    return fallback


def _pieces(text: str, max_chars: int) -> list[tuple[int, str]]:
    out = []
    pos = 0
    for m in list(_PARA.finditer(text)) + [None]:
        end = m.start() if m else len(text)
        para = text[pos:end]
        start = pos
        pos = m.end() if m else len(text)
        lead = len(para) - len(para.lstrip())
        para, start = para.strip(), start + lead
        while len(para) > max_chars:
            sentence = para.rfind(". ", 0, max_chars)
            cut = sentence + 1 if sentence >= max_chars // 2 else para.rfind(" ", 0, max_chars)
            if cut <= max_chars // 4:
                cut = max_chars
            out.append((start, para[:cut].rstrip()))
            rest = para[cut:]
            skip = len(rest) - len(rest.lstrip())
            para, start = rest.lstrip(), start + cut + skip
        if para:
            out.append((start, para))
    return out


def iter_chunks(text: str, title: str, max_chars: int = MAX_CHARS):
    """Yield the document's chunks in order (see the module docstring)."""
    trail: list[tuple[int, str]] = []
    index = 0
    buf: list[str] = []
    buf_start = 0
    buf_context = title

    def context() -> str:
        return " > ".join(h for _, h in trail) or title

    for start, para in _pieces(text, max_chars):
        first = para.split("\n", 1)[0].strip()
        m = _HEADING.match(first)
        if m:
            level = len(m.group(1))
            trail = [(lv, h) for lv, h in trail if lv < level] + [(level, m.group(2))]
        size = sum(len(b) + 2 for b in buf)
        if buf and (size + len(para) > max_chars or m):
            yield Chunk(index, "\n\n".join(buf), buf_start, buf_context)
            index += 1
            buf = []
        if not buf:
            buf_start, buf_context = start, context()
        buf.append(para)
    if buf:
        yield Chunk(index, "\n\n".join(buf), buf_start, buf_context)
