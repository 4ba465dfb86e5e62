"""Reading the prompt the runtime assembles (SPEC §1) back into its parts, and the word handling the
offline model scores with. Pure stdlib; used by OfflineModel.

The user message is `Name:\\n<value>` sections separated by blank lines, then one `<as> <k>:` block
per retrieval round whose entries are `--- <path> [<mode>] ---\\n<content>`, then, on a forced final
call, the exhausted line. Parsing is forgiving: text before any header is a nameless section, a
header only counts at the start or after a blank line, and retrieved blocks are recognised by the
`retrieve_as` hint when given, else by a `<Name> 1:` line followed by an entry header.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

EXHAUSTED_LINE = "Retrieval budget exhausted. Produce your final answer now."
QUESTION_NAMES = ("question", "query", "input", "task", "claim", "topic", "prompt", "context")

_HEADER = re.compile(r"^(?P<name>[A-Za-z_][\w .()/'-]{0,79}?):[ \t]*$")
_BLOCK = re.compile(r"^(?P<as>\S.*?) (?P<k>\d+):[ \t]*$")
_ENTRY = re.compile(r"^--- (?P<path>.+?)(?: \[(?P<mode>[^\]]*)\])? ---[ \t]*$")
_WORD = re.compile(r"[a-z0-9]+")
_SENT_SPLIT = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9`\"'(\[*_])")
_BULLET = re.compile(r"^(?:[-*+•]|\d+[.)])\s+")
_EXTENSION = re.compile(r"\.[A-Za-z0-9]{1,5}$")
_SUFFIXES = ("ies", "ing", "ion", "ed", "es", "al", "ly", "s", "e", "y")
_INDEX_KEYS = {"name", "size", "files", "children", "created", "modified", "embedding", "path"}

STOPWORDS = frozenset(
    """a about above after again against all also am an and any are as at be because been before
    being below between both but by can could did do does doing done down during each either etc
    few for from further get gets got had has have having he her here hers him his how however i if
    in into is it its itself just let like made make many may me might more most much must my no nor
    not now of off on once one only or other our ours out over own per please same shall she should
    show so some such tell than that the their theirs them then there these they this those through
    thus to too under until up upon us use used using very via was way we were what whats when
    where whether which while who whom whose why will with within without would yes yet you your
    explain describe give list find know want need say says said does question answer""".split()
)


def stem(word: str) -> str:
    """Strip up to two common English suffixes (plurals, -ing, -ed, -ion, -al, -ly, final e/y), keeping
    at least three letters, so "retrieval", "retrieving" and "retrieves" all become "retriev"."""
    if word.isdigit():
        return word
    for _ in range(2):
        for suffix in _SUFFIXES:
            if word.endswith(suffix) and len(word) - len(suffix) >= 3 and not (suffix == "s" and word.endswith("ss")):
                word = word[: -len(suffix)]
                break
        else:
            break
    return word


def words(text: str) -> list[str]:
    """Lowercased content words of `text` (stopwords and 1-letter words dropped), in order."""
    return [w for w in _WORD.findall((text or "").lower()) if len(w) > 1 and w not in STOPWORDS]


def terms(text: str) -> list[str]:
    """Stemmed content words of `text`, in order of first appearance, without repeats."""
    seen: dict[str, None] = {}
    for w in words(text):
        seen.setdefault(stem(w), None)
    return list(seen)


def path_terms(path: str) -> set[str]:
    """Stemmed words of a file path, split on `/ - _ .` and camelCase, the extension dropped."""
    path = _EXTENSION.sub("", path.rstrip("/"))
    path = re.sub(r"([a-z])([A-Z])", r"\1 \2", path)
    return set(terms(re.sub(r"[/\-_.]", " ", path)))


def leaf_strings(value) -> list[str]:
    """Every string (and number) inside a JSON value, depth first."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, bool) or value is None:
        return []
    if isinstance(value, (int, float)):
        return [str(value)]
    if isinstance(value, dict):
        return [s for v in value.values() for s in leaf_strings(v)]
    if isinstance(value, (list, tuple)):
        return [s for v in value for s in leaf_strings(v)]
    return []


def norm_path(path: str) -> str:
    """A retrieved path as the runtime keys it: no leading `./` or `/`, subfolders without `/`."""
    path = path.strip().replace("\\", "/")
    while path.startswith("./"):
        path = path[2:]
    return path.lstrip("/").rstrip("/")


@dataclass
class Section:
    """One `Name:` field of the user message."""

    name: str
    text: str
    value: object = None
    kind: str = "prose"  # prose | index | listing | json


@dataclass
class Entry:
    """One retrieved entry: path, mode, status (fetched/not_found/already/no_match/listed), content."""

    path: str
    mode: str
    status: str
    content: str
    listing: list | None = None


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
    sections: list[Section]
    blocks: list[list[Entry]]
    forced: bool
    question: str = ""
    question_section: Section | None = None
    files: dict[str, FileInfo] = field(default_factory=dict)
    subfolders: dict[str, FileInfo] = field(default_factory=dict)
    known_children: set[str] = field(default_factory=set)
    browsed: set[str] = field(default_factory=set)
    seen: set[str] = field(default_factory=set)

    @property
    def entries(self) -> list[Entry]:
        """Every retrieved entry, in order."""
        return [e for block in self.blocks for e in block]

    def fetched(self) -> list[Entry]:
        """Entries with real file content, first occurrence of each path."""
        out, paths = [], set()
        for e in self.entries:
            if e.status == "fetched" and e.path not in paths:
                paths.add(e.path)
                out.append(e)
        return out


def _classify(section: Section) -> None:
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
    for s in out:
        _classify(s)
    return out


def _entry(path: str, mode: str, content: str) -> Entry:
    text = content.strip("\n")
    marker = text.strip().lower()
    path = norm_path(path)
    if marker.startswith("(not found"):
        return Entry(path, mode, "not_found", text)
    if marker.startswith("(already in context"):
        return Entry(path, mode, "already", text)
    if marker.startswith("(no match"):
        return Entry(path, mode, "no_match", text)
    if mode == "subfolders" or (not mode and marker.startswith("[")):
        try:
            listing = json.loads(text)
        except ValueError:
            listing = None
        if isinstance(listing, list) and all(isinstance(v, dict) and "name" in v for v in listing):
            return Entry(path, mode or "subfolders", "listed", text, listing)
    return Entry(path, mode or "files", "fetched", text)


def _blocks(lines: list[str], as_name: str) -> list[list[Entry]]:
    blocks: list[list[Entry]] = []
    current: list[Entry] | None = None
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


def pick_question(sections: list[Section]) -> Section | None:
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


def parse_prompt(system: str, user: str, retrieve_as: str | None = None) -> Prompt:
    """Split an assembled prompt into sections, retrieved blocks, known files and the question."""
    lines = (user or "").replace("\r\n", "\n").split("\n")
    while lines and not lines[-1].strip():
        lines.pop()
    forced = bool(lines) and lines[-1].strip() == EXHAUSTED_LINE
    if forced:
        lines.pop()
    start, as_name = _find_blocks(lines, retrieve_as)
    sections = _sections(lines[:start])
    blocks = _blocks(lines[start:], as_name) if as_name else []
    prompt = Prompt(system=system or "", sections=sections, blocks=blocks, forced=forced)
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


def sentences(text: str) -> list[str]:
    """Prose sentences of a document: headings, code blocks and tables skipped, bullets kept whole."""
    units: list[str] = []
    para: list[str] = []
    in_code = False

    def flush():
        if para:
            units.append(" ".join(para))
            para.clear()

    for line in (text or "").splitlines():
        s = line.strip()
        if s.startswith(("```", "~~~")):
            flush()
            in_code = not in_code
            continue
        if in_code:
            continue
        if not s or s.startswith(("#", "|", "---", "<!--")):
            flush()
            continue
        m = _BULLET.match(s)
        if m:
            flush()
            units.append(s[m.end():])
            continue
        para.append(s)
    flush()
    out = []
    for unit in units:
        for sent in _SENT_SPLIT.split(unit):
            sent = re.sub(r"\*\*|__", "", sent)
            sent = re.sub(r"\s+", " ", sent).strip()
            if "{" in sent or "}" in sent or not re.search(r"[A-Za-z]", sent):
                continue
            if len(_WORD.findall(sent.lower())) < 3:
                continue
            out.append(sent)
    return out
