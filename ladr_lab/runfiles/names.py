"""Agent names: the one-to-one, readable encoding of a step (and the calls that led to it) as a file stem.

A stem keeps ASCII letters, digits, ``_``, ``-``, ``.`` (never leading) and any other letter or digit
(``日本`` stays ``日本``); every other character is written as ``%XX`` per UTF-8 byte, ``%`` included, so
no two step ids share a stem and the stem decodes back. A child run's step is
``<step>@<call step>#<node>``, innermost call first (``research@outer#2``); ``@`` and ``#`` inside ids are
encoded, so the parts split back. A stem longer than 200 bytes keeps its first part and ends in
``~<digest>`` (``~`` is otherwise always encoded). The stem is both the file name and the agent field of
every record in the file.
"""
from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

MAX_STEM_BYTES = 200
_KEEP_ASCII = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-.")
_ESCAPE_RE = re.compile(r"(?:%[0-9A-F]{2})+")


def _keep(ch: str) -> bool:
    if ch.isascii():
        return ch in _KEEP_ASCII
    # other scripts' letters and digits stay readable; marks, spaces, symbols and separators are encoded
    return ch.isalnum()


def encode_name(name: str) -> str:
    """One id as a readable, reversible file-name part: unsafe characters as ``%XX`` (UTF-8), no leading dot."""
    text = str(name)
    if text == "":
        return "%"  # only the empty id encodes to a lone "%" (every other "%" starts an escape)
    out = []
    for i, ch in enumerate(text):
        if _keep(ch) and not (i == 0 and ch == "."):
            out.append(ch)
        else:
            out.extend(f"%{b:02X}" for b in ch.encode("utf-8", "surrogatepass"))
    return "".join(out)


def decode_name(part: str) -> str:
    """The id that `encode_name` wrote as `part`."""
    if part == "%":
        return ""
    return _ESCAPE_RE.sub(lambda m: bytes.fromhex(m.group(0).replace("%", "")).decode("utf-8", "surrogatepass"),
                          part)


def agent_name(step: object, callers: Sequence[tuple[object, object]] = ()) -> str:
    """The agent (writer) name of a step: its encoded id, then ``@<call step>#<node>`` per call, innermost first."""
    parts = [encode_name("" if step is None else str(step))]
    for call_step, node in reversed(list(callers)):
        parts.append(f"{encode_name(str(call_step))}#{encode_name(str(node))}")
    stem = "@".join(parts)
    raw = stem.encode("utf-8")
    if len(raw) <= MAX_STEM_BYTES:
        return stem
    # file names are at most 255 bytes: keep a readable head and a digest of the whole name
    head = raw[:MAX_STEM_BYTES - 17].decode("utf-8", "ignore")
    head = re.sub(r"%[0-9A-F]?$", "", head)
    return f"{head}~{hashlib.sha256(raw).hexdigest()[:16]}"


def split_agent_name(stem: str) -> tuple[str, list[tuple[str, str]]]:
    """The step id and the calls (outermost first) that `agent_name` encoded in `stem` (not for digested stems)."""
    step, *calls = stem.split("@")
    callers = []
    for call in reversed(calls):
        call_step, _, node = call.rpartition("#")
        callers.append((decode_name(call_step), decode_name(node)))
    return decode_name(step), callers


def is_plain_stem(name: str) -> bool:
    """Whether `name` can be used as a file stem as it is: one path component, not hidden, no NUL."""
    return bool(name) and not name.startswith(".") and not any(c in name for c in "/\\\x00") and \
        not any(c.isspace() for c in name)


__all__ = ["MAX_STEM_BYTES", "agent_name", "decode_name", "encode_name", "is_plain_stem", "split_agent_name"]
