"""Reading the user message `prompt.py` assembles (SPEC §1) back into its fields and retrieved entries.

The one grammar of the prompt, for any reader of a prompt (the offline model reads prompts through it):
`Name:` fields separated by blank lines, then one `<as> <k>:` block per retrieval round whose entries are
`--- <path> [<mode>] ---` then their content, then, on a forced final call, `FORCED_FINAL_LINE`. Parsing is
forgiving: text before any header is a nameless field, a header only counts at the start or after a blank
line, an entry header only at the start of its block or after a blank line, and retrieved blocks are
recognised by the `retrieve_as` hint when given, else by a `<Name> 1:` line followed by an entry header.
An entry's status is read from its content (`(not found)` and the other words of `STATUS_TEXT`; a
subfolder's JSON listing is `listed`; anything else `fetched`): the trace's own status words.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

from .prompt import FORCED_FINAL_LINE
from .vocabulary import STATUS_TEXT

__all__ = ["ParsedEntry", "ParsedPrompt", "Section", "norm_path", "parse_prompt"]

_HEADER = re.compile(r"^(?P<name>[A-Za-z_][\w .()/'-]{0,79}?):[ \t]*$")
_BLOCK = re.compile(r"^(?P<as>\S.*?) (?P<k>\d+):[ \t]*$")
_ENTRY = re.compile(r"^--- (?P<path>.+?)(?: \[(?P<mode>[^\]]*)\])? ---[ \t]*$")
# the status an entry's content announces: "(not found" -> not_found, ... (its note may follow the words)
_MARKERS = tuple((text[:-1].lower(), status) for status, text in STATUS_TEXT.items())
# the summary entry of a full round, "(2 more left out: ...)", announces left-out entries too
_MORE_LEFT_OUT = re.compile(r"^\(\d[\d,]* more left out\b")


def norm_path(path: str) -> str:
    """A retrieved path as the runtime keys it: no leading `./` or `/`, subfolders without `/`."""
    path = path.strip().replace("\\", "/")
    while path.startswith("./"):
        path = path[2:]
    return path.lstrip("/").rstrip("/")


@dataclass(frozen=True)
class Section:
    """One `Name:` field of the user message and its text (a nameless one holds text before any header)."""

    name: str
    text: str


@dataclass(frozen=True)
class ParsedEntry:
    """One retrieved entry as the model reads it: path (as `norm_path` keys it), mode, status (a word of
    the trace's: fetched, not_found, already_in_context, no_match, left_out, listed), its content, and for
    a listing its entries."""

    path: str
    mode: str
    status: str
    content: str
    listing: list | None = None


@dataclass(frozen=True)
class ParsedPrompt:
    """A user message read back: its fields, each round's entries, whether the forced-final line ends it,
    and the name its retrieved blocks go by (None when it has none)."""

    sections: tuple[Section, ...]
    blocks: tuple[tuple[ParsedEntry, ...], ...]
    forced: bool = False
    retrieve_as: str | None = field(default=None, compare=False)


def _sections(lines: list[str]) -> list[Section]:
    out: list[Section] = []
    name: str | None = None
    buf: list[str] = []

    def flush():
        text = "\n".join(buf).strip("\n")
        if name is not None or text.strip():
            out.append(Section(name or "", text))

    for i, line in enumerate(lines):
        m = _HEADER.match(line)
        if m and (i == 0 or not lines[i - 1].strip()):
            flush()
            name, buf = m.group("name").strip(), []
        else:
            buf.append(line)
    flush()
    return out


def _entry(path: str, mode: str, content: str) -> ParsedEntry:
    text = content.strip("\n")
    marker = text.strip().lower()
    path = norm_path(path)
    for words, status in _MARKERS:
        if marker.startswith(words):
            return ParsedEntry(path, mode, status, text)
    if _MORE_LEFT_OUT.match(marker):
        return ParsedEntry(path, mode, "left_out", text)
    if mode == "subfolders" or (not mode and marker.startswith("[")):
        try:
            listing = json.loads(text)
        except ValueError:
            listing = None
        if isinstance(listing, list) and all(isinstance(v, dict) and "name" in v for v in listing):
            return ParsedEntry(path, mode or "subfolders", "listed", text, listing)
    return ParsedEntry(path, mode or "files", "fetched", text)


def _blocks(lines: list[str], as_name: str) -> list[list[ParsedEntry]]:
    blocks: list[list[ParsedEntry]] = []
    current: list[ParsedEntry] | None = None
    head: tuple[str, str] | None = None
    buf: list[str] = []

    def flush_entry():
        if head is not None and current is not None:
            current.append(_entry(head[0], head[1], "\n".join(buf)))

    for i, line in enumerate(lines):
        if line == f"{as_name} {len(blocks) + 1}:" and (i == 0 or not lines[i - 1].strip()):
            flush_entry()
            head, buf = None, []
            current = []
            blocks.append(current)
            continue
        m = _ENTRY.match(line)
        if m and current is not None and (not buf or not buf[-1].strip() or head is None):
            flush_entry()
            head, buf = (m.group("path"), (m.group("mode") or "").strip()), []
            continue
        buf.append(line)
    flush_entry()
    return blocks


def _find_blocks(lines: list[str], retrieve_as: str | None) -> tuple[int, str | None]:
    for i, line in enumerate(lines):
        if i and lines[i - 1].strip():
            continue
        m = _BLOCK.match(line)
        if not m or m.group("k") != "1":
            continue
        if retrieve_as:
            if m.group("as") == retrieve_as:
                return i, retrieve_as
            continue
        nxt = next((x for x in lines[i + 1:] if x.strip()), "")
        if _ENTRY.match(nxt) or nxt == f"{m.group('as')} 2:" or not nxt:
            return i, m.group("as")
    return len(lines), None


def parse_prompt(user: str, retrieve_as: str | None = None) -> ParsedPrompt:
    """A user message split into its fields, its retrieved blocks (named `retrieve_as` when known) and
    whether it ends with the forced-final line."""
    lines = (user or "").replace("\r\n", "\n").split("\n")
    while lines and not lines[-1].strip():
        lines.pop()
    forced = bool(lines) and lines[-1].strip() == FORCED_FINAL_LINE
    if forced:
        lines.pop()
    start, as_name = _find_blocks(lines, retrieve_as)
    blocks = _blocks(lines[start:], as_name) if as_name else []
    return ParsedPrompt(tuple(_sections(lines[:start])), tuple(tuple(b) for b in blocks), forced, as_name)
