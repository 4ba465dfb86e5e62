"""What the server takes out of a hit's text before a client can put it into a prompt, and the report of it.

A retrieved file can hold content a reader never sees but a model reads (or a terminal acts on): terminal
escape sequences, control characters, zero-width and bidirectional control characters, Unicode tag
characters (ASCII written invisibly: the "ASCII smuggling" of prompt injections), runs of variation
selectors (bytes hidden behind an emoji), and lines that imitate the prompt's own structure (an entry
header `--- <path> [<mode>] ---`, a retrieved block's `<as> <k>:`, the forced-final line), which could
make a model believe a new entry starts. `sanitize(text)` returns the text without them and a report,
`{class: count}` (empty when nothing changed), by class, in this order:

- `ansi`: terminal escape sequences, removed whole (ECMA-48: CSI `ESC [` or U+009B with its parameters and
  final byte; the strings OSC, DCS, SOS, PM and APC up to BEL or ST, an unterminated one to the next ESC or
  the end, as a terminal would swallow it; any other `ESC` with its intermediates and final byte).
- `controls`: the other C0 controls but tab, line feed and the CR of a CRLF; DEL; C1 controls but NEL. Removed.
- `lineBreaks`: a lone CR, VT, FF, NEL, U+2028 and U+2029, each made a line feed (so the line structure a
  model might see is the one the header check sees).
- `zeroWidth`: U+00AD, U+034F, U+180E, U+200B-U+200D, U+2060-U+2064, U+206A-U+206F, U+FEFF. Removed.
- `bidi`: U+061C, U+200E, U+200F, U+202A-U+202E, U+2066-U+2069. Removed.
- `tags`: U+E0000-U+E007F. Removed.
- `variationSelectors`: U+FE00-U+FE0D and U+E0100-U+E01EF removed; U+FE0E/U+FE0F kept only right after a
  character that is not itself one (the text or emoji presentation of one character), removed in a run.
- `headers`: lines imitating the prompt's headers, escaped by a backslash put at the line's start.

Sanitizing is idempotent, and clean text comes back unchanged with an empty report. Header names match
case-insensitively in ASCII only (`RETRIEVED 2:`), as the quick check of clean text assumes. No Unicode
normalisation is applied (NFKC would rewrite ligatures, full-width forms, superscripts and mathematical
letters of ordinary content), so look-alike characters are not caught. Counts are of sequences for `ansi`,
of lines for `headers`, of characters otherwise.
"""
from __future__ import annotations

import re

from ..round.prompt import FORCED_FINAL_LINE

__all__ = ["CLASSES", "FORBIDDEN", "sanitize"]

CLASSES = ("ansi", "controls", "lineBreaks", "zeroWidth", "bidi", "tags", "variationSelectors", "headers")

_RANGES = {
    "controls": [(0x00, 0x08), (0x0E, 0x1F), (0x7F, 0x84), (0x86, 0x9F)],
    "lineBreaks": [(0x0B, 0x0C), (0x85, 0x85), (0x2028, 0x2029)],
    "zeroWidth": [(0xAD, 0xAD), (0x34F, 0x34F), (0x180E, 0x180E), (0x200B, 0x200D), (0x2060, 0x2064),
                  (0x206A, 0x206F), (0xFEFF, 0xFEFF)],
    "bidi": [(0x61C, 0x61C), (0x200E, 0x200F), (0x202A, 0x202E), (0x2066, 0x2069)],
    "tags": [(0xE0000, 0xE007F)],
    "variationSelectors": [(0xFE00, 0xFE0D), (0xE0100, 0xE01EF)],
}
# every code point no sanitized text holds (a lone CR, and U+FE0E/U+FE0F in a run, are forbidden by position)
FORBIDDEN = frozenset(chr(c) for spans in _RANGES.values() for lo, hi in spans for c in range(lo, hi + 1))
_CLASS_OF = {chr(c): name for name, spans in _RANGES.items() for lo, hi in spans for c in range(lo, hi + 1)}
_CLASS_OF["\r"] = "lineBreaks"


def _char_class(spans: list) -> str:
    return "".join(f"\\U{lo:08x}" if lo == hi else f"\\U{lo:08x}-\\U{hi:08x}" for lo, hi in spans)


_ANSI = re.compile(r"(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]"                                # CSI
                   r"|(?:\x1b[\]PX^_]|[\x90\x98\x9d\x9e\x9f])[^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)?"  # strings
                   r"|\x1b[ -/]*[0-~]")                                               # any other escape
_CHARS = re.compile("[" + "".join(_char_class(s) for s in _RANGES.values()) + "]|\r(?!\n)")
# the quick checks of `sanitize` (a regex character class alone, so `re` scans for it without backtracking)
_SUSPECT = re.compile("[" + "".join(_char_class(s) for s in _RANGES.values()) + "\ufe0e\ufe0f]")
_LONE_CR = re.compile("\r(?!\n)")
_ASCII_KEPT = bytes(range(0x20, 0x7F)) + b"\t\n\r"
_SELECTOR_RUN = re.compile("(?<![^\ufe0e\ufe0f])[\ufe0e\ufe0f]")   # at the start, or after another selector
# `--- <path> [<mode>] ---`: dashes, a space, anything, a space, dashes (what the prompt's grammar reads as an entry
# header, and more); one with only dashes, pipes, colons and spaces between may be a Markdown table's delimiter row
_ENTRY = r"-{3,}[ \t][^\n]*[ \t]-{3,}[ \t]*\r?$"
_ROW = re.compile(r"-{3,}[ \t][\s|:\-]*[ \t]-{3,}[ \t]*\r?")
_HEADERS = re.compile(
    r"^(?=[ \t]*(?:(?P<entry>" + _ENTRY + ")"
    + r"|(?ai:retrieved)\w* \d+:[ \t]*\r?$"                                  # Retrieved 2:, RetrievedDocuments 2:
    + r"|[^\s\\][^\n]*? \d+:[ \t]*\r?\n(?:[ \t]*\r?\n)*[ \t]*"              # <as> <k>: then an entry header
    + r"(?:" + _ENTRY + r"|\(nothing retrieved\)[ \t]*\r?$)"
    + r"|(?ai:" + re.escape(FORCED_FINAL_LINE) + r")[ \t]*\r?$))", re.M)


def sanitize(text: str) -> tuple[str, dict[str, int]]:
    """`text` without what the module docstring lists, and how many of each class were taken out or escaped
    (only the classes that were, in `CLASSES` order; `{}` and `text` unchanged when nothing was)."""
    if _clean(text):
        return text, {}
    counts = dict.fromkeys(CLASSES, 0)
    text, counts["ansi"] = _ANSI.subn("", text)

    def one(m: re.Match) -> str:
        name = _CLASS_OF[m.group()]
        counts[name] += 1
        return "\n" if name == "lineBreaks" else ""

    text = _CHARS.sub(one, text)
    text, runs = _SELECTOR_RUN.subn("", text)
    counts["variationSelectors"] += runs
    text, counts["headers"] = _escape_headers(text)
    return text, {name: n for name, n in counts.items() if n}


def _clean(text: str) -> bool:
    """Whether `text` certainly holds nothing to take out, decided by scans done in C: the commonest case, made
    cheap. Every header line holds `---` or `retriev` in some ASCII case (so `bytes.lower` finds it)."""
    raw = text.encode("utf-8", "surrogatepass")
    if text.isascii():
        if raw.translate(None, _ASCII_KEPT):
            return False
    elif _SUSPECT.search(text) is not None:
        return False
    if b"\r" in raw and _LONE_CR.search(text) is not None:
        return False
    return (b"---" not in raw and b"retriev" not in raw.lower()) or _HEADERS.search(text) is None


def _escape_headers(text: str) -> tuple[str, int]:
    """`text` with a backslash before each line imitating a header, and how many; a Markdown table's delimiter
    row (`--- | ---`) is one only at the start of the text or after a blank line, where no table can have it."""
    escaped = 0

    def one(m: re.Match) -> str:
        nonlocal escaped
        entry, at = m.group("entry"), m.start()
        if entry is not None and _ROW.fullmatch(entry) and at and text[text.rfind("\n", 0, at - 1) + 1:at].strip():
            return ""
        escaped += 1
        return "\\"

    return _HEADERS.sub(one, text), escaped
