"""The retrieve loop's fetching (seeds 000, 001; SPEC §3); judging an output is `round/verdict.py`.

`fetch(folder, request, seen,
top_k, limits)` executes the request's modes in SPEC order (files, subfolders, metatag, glob,
similarTo) with per-node dedup on the canonical path, and returns one `Entry` per result: the typed
trace record (`Fetched`) and the text the model is shown.

No request a model can write ends a run: a malformed mode value (`{"metatag": "tags"}`), a
folder-level metatag asked as a file query (`{"metatag": {"name": "index"}}`), a request that names no
mode at all, all answer with an entry that says what happened.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import PathRefused, SlateError
from ..round.prompt import SEPARATOR, Entry, render_entry
from ..round.records import Fetched
from ..round.vocabulary import MODES
from ..search import similar as nearest_files
from ..slate.metatags import FOLDER_LEVEL

if TYPE_CHECKING:
    from ..slate import Folder

__all__ = ["DEFAULT_TOP_K", "Entry", "GAP", "Limits", "MIN_PIECE", "bounded_text", "fetch", "left_out_note"]

DEFAULT_TOP_K = 5
MIN_PIECE = 1_000      # a file is cut to fit the rest of a round's block only if at least this much fits
GAP = len(SEPARATOR)   # the blank line between two entries of a block, as the prompt joins them


@dataclass(frozen=True)
class Limits:
    """Bounds on what one fetch puts into a prompt (issue: a 200 MB file must not become a prompt).

    `entry_chars` cuts one retrieved entry (and a slateRead of a whole file); `round_chars` bounds one
    round's retrieved block: entries past it are left out (not marked as in context, so a later round
    can ask again). The defaults (50,000 and 200,000 characters, about 12k and 50k tokens) leave room
    in a 128k-token context window for several rounds."""

    entry_chars: int = 50_000
    round_chars: int = 200_000


def _short(value: Any, n: int = 60) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= n else text[: n - 3] + "..."


def bounded_text(folder: Folder, rel: str, max_chars: int) -> tuple[str | None, int | None]:
    """A file's text cut at `max_chars` with a closing line saying so, and its size in bytes when cut
    (None when whole). Only as much of the file is read as the bound needs."""
    excerpt = folder.read_excerpt(rel, max_chars)
    if excerpt is None:
        return None, None
    if not excerpt.truncated:
        return excerpt.text, None
    return (excerpt.text + f"\n[cut: showing the first {len(excerpt.text):,} characters of a "
                           f"{excerpt.total_bytes:,}-byte file]"), excerpt.total_bytes


def left_out_note(bound: int, many: bool = False) -> str:
    """Why an entry (or, `many`, several) was left out of a round: the words the model and the trace get."""
    return (f"this round's retrieved block reached its {bound:,}-character bound; "
            f"ask for {'them' if many else 'it'} again in a later round")


class _Round:
    """One round's entries, with per-node dedup and the round's size bound.

    Every entry is charged as the model sees it (header line, body, the blank line between entries), so a
    round holds at most `round_chars` characters of entries whatever they say. Once an entry does not fit,
    it and every later one are hidden: recorded as `left_out` in the trace and counted in one closing
    summary entry (which comes on top of the bound: one line)."""

    def __init__(self, folder: Folder, seen: set[str], limits: Limits) -> None:
        self.folder = folder
        self.seen = seen
        self.limits = limits
        self.entries: list[Entry] = []
        self.used = 0
        self.hidden = 0

    def add(self, fetched: Fetched, content: str | None = None) -> bool:
        """Show the entry if its rendered text fits the round's room, else hide it (left out); True if shown."""
        entry = Entry(fetched, content)
        cost = len(render_entry(entry)) + GAP
        if self.hidden or cost > self.room():
            self.hide(fetched)
            return False
        self.used += cost
        self.entries.append(entry)
        return True

    def hide(self, fetched: Fetched) -> None:
        """Record an entry as left out of the model's view (it is not marked as in context)."""
        self.hidden += 1
        self.entries.append(Entry(Fetched(path=fetched.path, mode=fetched.mode, status="left_out",
                                          asked=fetched.asked, score=fetched.score,
                                          note=left_out_note(self.limits.round_chars)), shown=False))

    def close(self) -> list[Entry]:
        """The round's entries, with the summary of the hidden ones (shown, not recorded) at the end."""
        if self.hidden:
            modes = sorted({e.fetched.mode for e in self.entries if not e.shown})
            summary = Fetched(path=f"({self.hidden:,} more)", mode=", ".join(modes), status="left_out",
                              note=left_out_note(self.limits.round_chars, many=True))
            self.entries.append(Entry(summary, f"({self.hidden:,} more left out: {summary.note})", recorded=False))
        return self.entries

    def room(self) -> int:
        return max(0, self.limits.round_chars - self.used)

    def body_room(self, path: str, mode: str) -> int:
        """How many characters of body fit after this entry's header, within the round's room."""
        header = len(render_entry(Entry(Fetched(path=path, mode=mode), ""))) + GAP
        return self.room() - header

    def give(self, asked: Any, mode: str, **extra) -> None:
        """Deliver one file (by the path as asked), or say why not."""
        if not isinstance(asked, str):
            self.add(Fetched(path=_short(asked), mode=mode, status="no_match",
                             note=f"{mode} takes path strings (got {_short(asked)})"))
            return
        try:
            rel = self.folder.normalize(asked)
        except PathRefused:
            # exactly "(not found)" (SPEC conformance): a refused path is not told apart from a missing one
            self.add(Fetched(path=asked, mode=mode, status="not_found", **extra))
            return
        rel = _listed(self.folder, rel) or rel
        shown = asked if asked != rel else None
        if self.hidden:                     # the round is full: read nothing more
            self.hide(Fetched(path=rel, mode=mode, asked=shown, **extra))
            return
        if rel in self.seen:
            self.add(Fetched(path=rel, mode=mode, status="already_in_context", asked=shown, **extra))
            return
        avail = self.body_room(shown or rel, mode)
        limit = min(self.limits.entry_chars, avail)
        if limit <= 0:
            self.add(self._left_out(rel, mode, shown, **extra))
            return
        try:
            text, total = bounded_text(self.folder, rel, limit)
            if text is not None and len(text) > avail:
                # the cut line pushed it past the round's room: cut that much more
                limit -= len(text) - avail
                text, total = bounded_text(self.folder, rel, limit) if limit > 0 else (text, total)
        except (PathRefused, SlateError):
            text, total = None, None
        if text is None:
            self.add(Fetched(path=rel, mode=mode, status="not_found", asked=shown, **extra))
            return
        if total is not None and limit < min(MIN_PIECE, self.limits.entry_chars):
            # the round's block is nearly full: a stub of this file helps nobody; it can be asked for later
            self.add(self._left_out(rel, mode, shown, **extra))
            return
        if self.add(Fetched(path=rel, mode=mode, status="fetched", chars=len(text), asked=shown,
                            truncated=True if total is not None else None, total_bytes=total, **extra), text):
            self.seen.add(rel)

    def _left_out(self, rel: str, mode: str, shown: str | None, **extra) -> Fetched:
        return Fetched(path=rel, mode=mode, status="left_out", asked=shown,
                       note=left_out_note(self.limits.round_chars), **extra)

    def listing(self, label: str, mode: str, value: Any, asked: str | None = None) -> None:
        """A listing (a subfolder's index, the folder's index or tree) as JSON, bounded like a file."""
        if self.hidden:
            self.hide(Fetched(path=label, mode=mode, asked=asked))
            return
        text = json.dumps(value, ensure_ascii=False)
        total = None
        avail = self.body_room(asked or label, mode)
        limit = min(self.limits.entry_chars, avail)
        if len(text) > limit:
            total = len(text.encode("utf-8"))
            note = f"\n[cut: showing the first {limit:,} characters of a {len(text):,}-character listing]"
            if limit + len(note) > avail:       # the round's room binds: the cut line must fit in it too
                limit = avail - len(note)
            if limit < min(MIN_PIECE, self.limits.entry_chars):
                self.add(Fetched(path=label, mode=mode, status="left_out", asked=asked,
                                 note=left_out_note(self.limits.round_chars)))
                return
            text = text[:limit] + f"\n[cut: showing the first {limit:,} characters of a {len(text):,}-character listing]"
        self.add(Fetched(path=label, mode=mode, status="listed", chars=len(text), asked=asked,
                         truncated=True if total is not None else None, total_bytes=total), text)


def _listed(folder, rel: str, *, sub: bool = False) -> str | None:
    """The listed file (or subfolder) a canonical request path names (docs/DECISIONS.md): as written, in another
    Unicode normal form, or without the folder's own name in front (`docs/core.md` in folder `docs`) when the
    path as written names nothing; None when nothing listed matches. Never anything outside the folder."""
    locate = getattr(folder, "locate", None)
    if locate is None:
        return None
    found = locate(rel, folder=sub)
    if found is not None:
        return found
    prefix = str(getattr(folder, "name", "")).strip("/") + "/"
    if prefix != "/" and rel.startswith(prefix) and len(rel) > len(prefix):
        return locate(rel[len(prefix):], folder=sub)
    return None


def _as_list(v: Any) -> list:
    if v is None:
        return []
    return v if isinstance(v, list) else [v]


def fetch(folder: Folder, request: dict, seen: set[str], top_k: int | None = None, limits: Limits | None = None) -> list[Entry]:
    """Run every mode of `request` against `folder`; `seen` (canonical paths given this step) is updated."""
    rnd = _Round(folder, seen, limits or Limits())
    known = [m for m in MODES if request.get(m) is not None]
    if not known:
        others = [k for k in request if k != "topK"]
        rnd.add(Fetched(path="(request)", mode="request", status="no_match",
                        note="the request names no retrieval mode; use " + ", ".join(MODES)
                             + (f" (it had: {', '.join(map(str, others))})" if others else "")))
        return rnd.close()
    for asked in _as_list(request.get("files")):
        rnd.give(asked, "files")
    for sub in _as_list(request.get("subfolders")):
        _subfolder(rnd, folder, sub)
    similar: list[str] = []
    for q in _as_list(request.get("metatag")):
        _metatag(rnd, folder, q, similar)
    for pattern in _as_list(request.get("glob")):
        if not isinstance(pattern, str):
            rnd.add(Fetched(path=_short(pattern), mode="glob", status="no_match",
                            note=f"glob takes a pattern string (got {_short(pattern)})"))
            continue
        matches = folder.glob(pattern)
        parts = [p for p in pattern.split("/") if p not in ("", ".")]
        name = str(getattr(folder, "name", "")).strip("/").split("/")
        if not matches and not pattern.startswith("/") and ".." not in parts and len(parts) > len(name) \
                and parts[:len(name)] == name:
            matches = folder.glob("/".join(parts[len(name):]))   # `docs/*.md` in folder `docs`, as for files
        if not matches:
            rnd.add(Fetched(path=pattern, mode="glob", status="no_match"))
        for rel in matches:
            rnd.give(rel, "glob")
    for text in _as_list(request.get("similarTo")):
        if isinstance(text, str):
            similar.append(text)
        else:
            rnd.add(Fetched(path=_short(text), mode="similarTo", status="no_match",
                            note=f"similarTo takes a text (got {_short(text)})"))
    k = top_k if top_k and top_k > 0 else DEFAULT_TOP_K
    for text in similar:
        hits = nearest_files(folder, text, k)
        if not hits:
            rnd.add(Fetched(path=text[:60], mode="similarTo", status="no_match"))
        for rel, score in hits:
            rnd.give(rel, "similarTo", score=round(float(score), 4))
    return rnd.close()


def _subfolder(rnd: _Round, folder, sub: Any) -> None:
    if not isinstance(sub, str):
        rnd.add(Fetched(path=_short(sub), mode="subfolders", status="no_match",
                        note=f"subfolders takes folder names (got {_short(sub)})"))
        return
    try:
        # "", ".", "/" and "./" name the folder itself; ".." (anywhere) is refused like any path that leaves it
        rel = "" if all(part in ("", ".") for part in sub.split("/")) else folder.normalize(sub)
        if rel and rel == str(getattr(folder, "name", "")).strip("/") and _listed(folder, rel, sub=True) is None:
            rel = ""                        # `docs` in folder `docs`: the folder itself
        elif rel:
            rel = _listed(folder, rel, sub=True) or rel
        listing = folder.index(rel) if rel else folder.index()
    except SlateError:       # PathRefused included: "(not found)", as for files
        rel, listing = sub, None
    label = (rel or "") + "/"
    asked = sub if sub.rstrip("/") != rel else None
    if listing is None:
        rnd.add(Fetched(path=sub.rstrip("/") + "/", mode="subfolders", status="not_found"))
    else:
        rnd.listing(label, "subfolders", listing, asked)


def _metatag(rnd: _Round, folder, q: Any, similar: list[str]) -> None:
    if not isinstance(q, dict) or not isinstance(q.get("name"), str) or not q["name"]:
        got = q.get("name") if isinstance(q, dict) else q
        rnd.add(Fetched(path=_short(got), mode="metatag", status="no_match",
                        note='metatag takes an object like {"name": "tags", "contains": "..."} with a string name '
                             f"(got {_short(q)})"))
        return
    name = q["name"]
    if q.get("similarTo") is not None:
        if isinstance(q["similarTo"], str):
            similar.append(q["similarTo"])
        else:
            rnd.add(Fetched(path=name, mode="similarTo", status="no_match",
                            note=f"similarTo takes a text (got {_short(q['similarTo'])})"))
        return
    if name in FOLDER_LEVEL:
        # index and tree describe the folder, not a file: answer with the folder-level value itself
        depth = q.get("depth") if name == "tree" else None
        if depth is not None and (not isinstance(depth, int) or isinstance(depth, bool) or depth < 1):
            rnd.add(Fetched(path=name, mode="metatag", status="no_match",
                            note=f"tree takes depth as a whole number >= 1 (got {_short(depth)})"))
            return
        rnd.listing(name, "metatag", folder.index() if name == "index" else folder.tree(depth))
        return
    contains = q.get("contains")
    if contains is not None and not isinstance(contains, str):
        rnd.add(Fetched(path=name, mode="metatag", status="no_match",
                        note=f"metatag contains takes a text (got {_short(contains)})"))
        return
    label = name + (f'~"{contains}"' if contains is not None else "")
    matches = folder.metatag_query(name, contains)
    if not matches:
        rnd.add(Fetched(path=label, mode="metatag", status="no_match"))
    for rel in matches:
        rnd.give(rel, "metatag")
