"""How the offline model reads a prompt: the fields and retrieved entries the shared grammar finds
(`round.grammar`), each field classified (prose, or JSON: an index, a listing, other JSON), the files and
subfolders the prompt reveals with their metatags, and the question."""
from __future__ import annotations

import json
from dataclasses import dataclass, field

from ...round.grammar import ParsedEntry, norm_path, parse_prompt
from .words import leaf_strings

__all__ = ["Field", "FileInfo", "Prompt", "pick_question", "read_prompt"]

QUESTION_NAMES = ("question", "query", "input", "task", "claim", "topic", "prompt", "context")
_INDEX_KEYS = {"name", "size", "files", "children", "created", "modified", "embedding", "path"}


@dataclass
class Field:
    """One `Name:` field of the user message as the offline model reads it: its text, and the JSON value and
    kind (prose | index | listing | json) when its text is JSON."""

    name: str
    text: str
    value: object = None
    kind: str = "prose"


@dataclass
class FileInfo:
    """A file the prompt shows (index, tree, listing or metatag section) and what is known about it."""

    order: int
    meta: list[str] = field(default_factory=list)
    listing_round: int = 0  # the retrieval round whose subfolder listing revealed it; 0 = the fields


@dataclass
class Prompt:
    """The parsed prompt: system text, field sections, retrieved blocks and what they reveal."""

    system: str
    sections: list[Field]
    blocks: list[list[ParsedEntry]]
    forced: bool
    question: str = ""
    question_section: Field | None = None
    files: dict[str, FileInfo] = field(default_factory=dict)
    subfolders: dict[str, FileInfo] = field(default_factory=dict)
    known_children: set[str] = field(default_factory=set)
    browsed: set[str] = field(default_factory=set)
    seen: set[str] = field(default_factory=set)

    @property
    def entries(self) -> list[ParsedEntry]:
        """Every retrieved entry, in order."""
        return [e for block in self.blocks for e in block]

    def fetched(self) -> list[ParsedEntry]:
        """Entries with real file content, first occurrence of each path."""
        out, paths = [], set()
        for e in self.entries:
            if e.status == "fetched" and e.path not in paths:
                paths.add(e.path)
                out.append(e)
        return out


def _classify(section: Field) -> None:
    text = section.text.strip()
    if not text or text[0] not in "[{\"":
        return
    try:
        value = json.loads(text)
    except ValueError:
        return
    section.value = value
    if isinstance(value, str):
        section.text = value
    elif isinstance(value, list) and value and all(isinstance(v, str) for v in value):
        section.text = "\n\n".join(value)
    elif isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
        if all("name" in v for v in value):
            section.kind = "index"
        elif all(("file" in v or "path" in v) for v in value):
            section.kind = "listing"
        else:
            section.kind = "json"
    elif isinstance(value, dict) and value and all(
        isinstance(v, dict) and ("." in k or "/" in k) for k, v in value.items()
    ):
        section.kind = "listing"
    else:
        section.kind = "json"


def _walk(prompt: Prompt, entries, prefix: str, listing_round: int) -> None:
    for e in entries or []:
        if not isinstance(e, dict) or "name" not in e:
            continue
        raw = str(e.get("name") or e.get("path"))
        name = norm_path(raw)
        if not name:
            continue
        path = name if (not prefix or name.startswith(prefix)) else prefix + name
        is_dir = raw.endswith("/") or "children" in e or isinstance(e.get("files"), int)
        meta = [s for k, v in e.items() if k not in _INDEX_KEYS for s in leaf_strings(v)]
        target = prompt.subfolders if is_dir else prompt.files
        info = target.get(path)
        if info is None:
            info = target[path] = FileInfo(len(prompt.files) + len(prompt.subfolders), listing_round=listing_round)
        info.meta.extend(meta)
        if is_dir and isinstance(e.get("children"), list):
            prompt.known_children.add(path)
            _walk(prompt, e["children"], path + "/", listing_round)
        elif "/" in path and not is_dir:
            prompt.known_children.add(path.rsplit("/", 1)[0])


def _attach_meta(prompt: Prompt, value) -> None:
    items = value.items() if isinstance(value, dict) else (
        (v.get("file") or v.get("path"), v.get("value", {k: x for k, x in v.items() if k not in ("file", "path")}))
        for v in value
    )
    for path, meta in items:
        if not isinstance(path, str):
            continue
        path = norm_path(path)
        info = prompt.files.get(path)
        if info is None:
            info = prompt.files[path] = FileInfo(order=len(prompt.files) + len(prompt.subfolders))
        info.meta.extend(leaf_strings(meta))


def pick_question(sections: list[Field]) -> Field | None:
    """The section that holds the question: a field named Question/Query/Input/Task/Claim/Topic, else
    a field whose name contains one of those words, else the first plain-prose field."""
    prose = [s for s in sections if s.kind == "prose" and s.text.strip()]
    for s in sections:
        if s.name.lower().replace(" ", "").replace("_", "") in QUESTION_NAMES and s.text.strip():
            return s
    for s in prose:
        low = s.name.lower()
        if any(n in low for n in QUESTION_NAMES):
            return s
    return prose[0] if prose else None


def read_prompt(system: str, user: str, retrieve_as: str | None = None) -> Prompt:
    """The prompt's fields (classified), retrieved blocks, the files it reveals and the question."""
    parsed = parse_prompt(user, retrieve_as)
    sections = [Field(s.name, s.text) for s in parsed.sections]
    for s in sections:
        _classify(s)
    blocks = [list(b) for b in parsed.blocks]
    prompt = Prompt(system=system or "", sections=sections, blocks=blocks, forced=parsed.forced)
    for s in sections:
        if s.kind == "index":
            _walk(prompt, s.value, "", 0)
    for s in sections:
        if s.kind == "listing":
            _attach_meta(prompt, s.value)
    for k, block in enumerate(blocks, 1):
        for e in block:
            if e.status == "listed":
                prompt.browsed.add(e.path)
                prompt.known_children.add(e.path)
                _walk(prompt, e.listing, e.path + "/" if e.path else "", k)
            else:
                prompt.seen.add(e.path)
    q = pick_question(sections)
    prompt.question_section = q
    prompt.question = q.text.strip() if q else ""
    return prompt
