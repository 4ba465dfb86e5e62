"""Searching an agent's run files (seed 004): the request rules, scopes, deduplication and top-k over the index.

A request has a query, optionally a current episode and a conversation id, a scope and a top-k:

- `Scope.RUN` (the default) searches every episode; `Scope.EPISODE` only the current one, and finds nothing
  without one (files other than `.history` and `.log` belong to no episode, so only `Scope.RUN` searches them).
- A `.history` or `.log` record is evidence only for a request with both a current episode and a conversation
  id. With both, a record of the current episode is evidence when it was written in the request's conversation
  or outside any (``-``); a record of another episode is evidence whatever its conversation. A line without
  the conversation field in the current episode is not evidence and is reported with one WARN per file.
- With a host interpreter, a record of being told the turn message is not returned and a message several files
  record is given once; a note several files record is given once with any interpreter.
- Pieces are ranked by SQLite FTS5's bm25 (all query words first, then any of them) and cut at top-k.
"""
from __future__ import annotations

import enum
import re
import threading
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from .index import RefreshStats, RunFileIndex, message_key
from .masking import Masker
from .names import agent_name, is_plain_stem
from .readings import LadrInterpreter, RecordInterpreter
from .writer import HISTORY_SUFFIX, LOG_SUFFIX

DEFAULT_TOP_K = 5
MAX_EPISODE = (1 << 63) - 1  # the largest episode SQLite's integers hold
_EPISODE_FILTER_RE = re.compile(r"episode-([0-9]+)", re.ASCII)
_WORD_RE = re.compile(r"\w+")


class Scope(enum.Enum):
    """Which episodes a request searches: the whole run (default) or only its current episode."""

    RUN = "run"
    EPISODE = "episode"


def parse_episode(value: int | str | None) -> int | None:
    """A request's current episode from ``N`` or the filter value ``episode-N`` (decimal N); ValueError otherwise."""
    if value is None:
        return None
    if isinstance(value, bool):
        raise ValueError(f"not an episode: {value!r}")
    if isinstance(value, int):
        if value < 0:
            raise ValueError(f"an episode is a decimal number >= 0 (got {value})")
        n = value
    else:
        text = str(value)
        m = _EPISODE_FILTER_RE.fullmatch(text) or re.fullmatch(r"([0-9]+)", text, re.ASCII)
        if m is None:
            raise ValueError(f'the current episode is "episode-N" with a decimal N (got {text!r})')
        n = int(m.group(1))
    if n > MAX_EPISODE:
        raise ValueError(f"no such episode: an episode is at most 2^63-1 (got {n})")
    return n


def resolve_owner(run_dir: str | Path, owner: str) -> str:
    """The file stem of an owner: the name as given when its files exist (or it is a plain stem), else `agent_name`."""
    root = Path(run_dir)
    if is_plain_stem(owner):
        if any((root / (owner + s)).exists() for s in (HISTORY_SUFFIX, LOG_SUFFIX, "")):
            return owner
        encoded = agent_name(owner)
        if encoded != owner and any((root / (encoded + s)).exists() for s in (HISTORY_SUFFIX, LOG_SUFFIX, "")):
            return encoded
        return owner
    return agent_name(owner)


def query_words(query: str) -> list[str]:
    """The words of a search text, lower-cased, each once, in order."""
    return list(dict.fromkeys(w.lower() for w in _WORD_RE.findall(query)))


def to_fts_query(query: str | list[str], any_word: bool = False) -> str | None:
    """The FTS5 query of a search text (or its words): each word quoted, so no operator can be injected; all or any."""
    words = query_words(query) if isinstance(query, str) else query
    if not words:
        return None
    return (" OR " if any_word else " ").join('"' + w.replace('"', '""') + '"' for w in words)


@dataclass(frozen=True)
class Piece:
    """One piece of evidence: at most 2,000 characters of one line of a record, with where and when it was written."""

    file: str  # relative to the run folder
    line: int  # 1-based, the record's first line
    kind: str  # note | told | said
    text: str
    piece_line: int  # the line this piece's text is on
    agent: str
    episode: int | None
    conversation: str | None
    timestamp: str | None
    level: str | None
    score: float

    def to_dict(self) -> dict:
        """The piece as a JSON-ready dict (the `ladr-lab search --json` shape)."""
        return asdict(self)


@dataclass
class SearchResult:
    """The pieces a search returned, best first, the WARNs it raised, and what its refresh read."""

    pieces: list[Piece]
    warnings: list[str] = field(default_factory=list)
    refresh: RefreshStats | None = None

    def to_dicts(self) -> list[dict]:
        """The pieces as JSON-ready dicts."""
        return [p.to_dict() for p in self.pieces]

    def to_dataframe(self):
        """The pieces as a pandas DataFrame, one row a piece."""
        import pandas as pd

        columns = list(Piece.__dataclass_fields__)
        return pd.DataFrame(self.to_dicts(), columns=columns)


class RunFileRetriever:
    """Seed 004's incremental text-files retriever over one agent's files in a run folder."""

    def __init__(self, run_dir: str | Path, owner: str, *, interpreter: RecordInterpreter | None = None,
                 masker: Masker | None = None, index_path: str | Path | None = None) -> None:
        self.run_dir = Path(run_dir)
        if not self.run_dir.is_dir():
            from ..errors import LadrError

            raise LadrError(f"run folder {self.run_dir} does not exist or is not a folder")
        self.owner = resolve_owner(self.run_dir, owner)
        self.interpreter = interpreter
        self.masker = masker
        self.index = RunFileIndex(self.run_dir, self.owner, interpreter=interpreter, masker=masker, path=index_path)
        self._lock = threading.Lock()
        self._warned: set[str] = set()

    def close(self) -> None:
        """Close the index."""
        self.index.close()

    def __enter__(self) -> RunFileRetriever:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _warn(self, message: str, out: list[str], key: str | None = None) -> None:
        """Report `message` once in the retriever's life per `key` (the message itself by default)."""
        key = message if key is None else key
        if key not in self._warned:
            self._warned.add(key)
            self.index.warn(message)
            out.append(message)

    def search(self, query: str, *, episode: int | str | None = None, conversation: str | None = None,
               scope: Scope | str = Scope.RUN, top_k: int = DEFAULT_TOP_K,
               turn_message: str | None = None) -> SearchResult:
        """The top-k pieces for `query` under the request rules of seed 004 (reading what was appended first)."""
        scope = Scope(scope)
        ep = parse_episode(episode)
        if top_k < 1:
            raise ValueError(f"top_k must be >= 1 (got {top_k})")
        if conversation is not None and self.masker is not None:  # the index keeps conversation ids masked
            conversation = self.masker.mask(conversation)
        with self._lock:
            stats = self.index.refresh()
            warnings = list(stats.warnings)
            pieces = self._query(query, ep, conversation, scope, top_k, turn_message, warnings)
        return SearchResult(pieces, warnings, stats)

    def _conditions(self, ep: int | None, conv: str | None, scope: Scope,
                    turn_message: str | None) -> tuple[str, list[Any]] | None:
        both = ep is not None and conv is not None
        if scope is Scope.EPISODE:
            if not both:
                return None
            cond, args = "r.rf = 1 AND r.episode = ? AND (r.conv = ? OR r.conv = '-')", [ep, conv]
        elif both:
            cond, args = "(r.rf = 0 OR r.episode IS NOT ? OR r.conv = ? OR r.conv = '-')", [ep, conv]
        else:
            cond, args = "r.rf = 0", []
        if turn_message is not None and self.interpreter is not None:
            told = message_key(self.masker.mask(turn_message) if self.masker else turn_message)
            cond += " AND NOT (r.kind = 'told' AND r.msgkey IS ?)"
            args.append(told)
        return cond, args

    def _absent_episode(self) -> int:
        """An episode no marker of the agent names (0 when free, else one more than the largest)."""
        db = self.index.db
        if db.execute("SELECT 1 FROM markers WHERE n = 0 LIMIT 1").fetchone() is None:
            return 0
        return min((db.execute("SELECT max(n) FROM markers").fetchone()[0] or 0) + 1, MAX_EPISODE)

    def _query(self, query: str, ep: int | None, conv: str | None, scope: Scope, top_k: int,
               turn_message: str | None, warnings: list[str]) -> list[Piece]:
        db = self.index.db
        files = dict(db.execute("SELECT id, rel FROM files"))
        if not files:   # a misspelt owner would otherwise look like an agent that recorded nothing
            agents = sorted({p.name[:-len(sfx)] for sfx in (HISTORY_SUFFIX, LOG_SUFFIX)
                             for p in self.run_dir.glob("*" + sfx)})
            self._warn(f"{self.owner}: no {self.owner}{HISTORY_SUFFIX}, {self.owner}{LOG_SUFFIX} or {self.owner}/ "
                       f"in {self.run_dir}" + (f" (agents with files there: {', '.join(agents[:20])})"
                                               if agents else ""), warnings, key="no-files")
        has_records = any(rel.endswith((HISTORY_SUFFIX, LOG_SUFFIX)) and "/" not in rel for rel in files.values())
        if has_records and (ep is None or conv is None):
            absent = self._absent_episode()
            self._warn(f"{self.owner}: .history and .log records are evidence only for a request with both a "
                       f"current episode and a conversation id (none given: only other files are searched; to "
                       f"search the records of every episode, give an episode the run does not have and the "
                       f"conversation '-', e.g. --episode {absent} --conversation -)"
                       if scope is Scope.RUN else
                       f"{self.owner}: Scope.EPISODE finds nothing without both a current episode and a conversation",
                       warnings)
        if ep is not None and conv is not None:
            for fid, count in db.execute("SELECT file, count(*) FROM records WHERE noconv = 1 AND episode = ? "
                                         "GROUP BY file", (ep,)):
                # seed 004: "one WARN per file" (not one per episode asked, nor one per new line appended)
                self._warn(f"{files.get(fid, fid)}: {count} record(s) of episode {ep} without the conversation "
                           f"field are not evidence", warnings, key=f"noconv:{fid}")
        cond = self._conditions(ep, conv, scope, turn_message)
        if cond is None:
            return []
        where, args = cond
        out: list[Piece] = []
        seen: set[tuple[int, int]] = set()
        taken: set[int] = set()
        fetch = ("SELECT p.rowid, p.text, p.pline, p.pidx, r.file, r.line, r.kind, r.conv, r.episode, r.ts, r.level, "
                 "r.key FROM pieces p JOIN records r ON r.id = p.rec WHERE p.rowid = ? AND " + where)
        words = query_words(query)
        total = self.index.piece_count() if words else 0
        # a word in half the pieces or more gets no weight from bm25 (FTS5 floors its idf there): it only narrows
        weak = {w for w in words if 0 < 2 * self.index.doc_frequency(w) >= total}
        # every word first; then any of the words bm25 weighs; then any word at all
        strong = [w for w in words if w not in weak]
        phases = [(words, False)]
        if len(words) > 1 and strong and strong != words:
            phases.append((strong, True))
        if len(words) > 1:
            phases.append((words, True))
        for use, any_word in phases:
            fts = to_fts_query(use, any_word)
            if fts is None or len(out) >= top_k:
                break
            if all(w in weak for w in use):  # bm25 would tie them all: the most recent pieces first
                ranked = db.execute("SELECT rowid, 0.0 FROM pieces WHERE pieces MATCH ? ORDER BY rowid DESC", (fts,))
            else:  # rank first (FTS5 sorts only rowids and scores), then read the best candidates' rows
                ranked = db.execute("SELECT rowid, bm25(pieces) FROM pieces WHERE pieces MATCH ? ORDER BY 2, rowid DESC",
                                    (fts,))
            for rowid, score in ranked:
                if rowid in taken:
                    continue
                row = db.execute(fetch, (rowid, *args)).fetchone()
                if row is None:
                    continue
                _, text, pline, pidx, fid, line, kind, rconv, repisode, ts, level, key = row
                if (key, pidx) in seen:
                    continue
                seen.add((key, pidx))
                taken.add(rowid)
                out.append(Piece(files.get(fid, str(fid)), line, kind, text, pline, self.owner, repisode, rconv, ts,
                                 level, round(-score, 6)))
                if len(out) >= top_k:
                    break
        return out


class RunFileSource:
    """A run-file retriever as a step's knowledge source: a name, a top-k, and evidence rendered for a prompt."""

    def __init__(self, run_dir: str | Path, *, owner: str, name: str = "agent-files", top_k: int = DEFAULT_TOP_K,
                 scope: Scope | str = Scope.RUN, mask: bool = False,
                 interpreter: RecordInterpreter | None = None, index_path: str | Path | None = None) -> None:
        self.name = name
        self.top_k = top_k
        self.scope = Scope(scope)
        self.retriever = RunFileRetriever(run_dir, owner, interpreter=interpreter or LadrInterpreter(),
                                          masker=Masker.hiding_outside(run_dir) if mask else None,
                                          index_path=index_path)

    def pieces(self, question: str, *, episode: int | str | None = None,
               conversation: str | None = None) -> list[Piece]:
        """The top-k pieces for `question` (the turn message: a record of being told it is not returned)."""
        return self.retriever.search(question, episode=episode, conversation=conversation, scope=self.scope,
                                     top_k=self.top_k, turn_message=question).pieces

    def evidence(self, question: str, *, episode: int | str | None = None, conversation: str | None = None) -> str:
        """The top-k pieces for `question` as prompt text: one block a piece, headed by where it was written."""
        blocks = []
        for i, p in enumerate(self.pieces(question, episode=episode, conversation=conversation), start=1):
            where = f"{p.file}:{p.line}" + (f", episode {p.episode}" if p.episode is not None else "")
            if p.conversation not in (None, "-"):
                where += f", {p.conversation}"
            blocks.append(f"--- {self.name} {i}: {where} [{p.kind}] ---\n{p.text}")
        return "\n\n".join(blocks) if blocks else "(no evidence)"

    def close(self) -> None:
        """Close the retriever's index."""
        self.retriever.close()


def search_run_files(run_dir: str | Path, query: str, *, owner: str, episode: int | str | None = None,
                     conversation: str | None = None, scope: Scope | str = Scope.RUN, top_k: int = DEFAULT_TOP_K,
                     mask: bool = False, interpreter: RecordInterpreter | None = None):
    """Search an agent's run files once and return the pieces as a pandas DataFrame (ladr_lab's interpreter)."""
    with RunFileRetriever(run_dir, owner, interpreter=interpreter or LadrInterpreter(),
                          masker=Masker.hiding_outside(run_dir) if mask else None) as r:
        return r.search(query, episode=episode, conversation=conversation, scope=scope, top_k=top_k).to_dataframe()


__all__ = ["DEFAULT_TOP_K", "Piece", "RunFileRetriever", "RunFileSource", "Scope", "SearchResult", "parse_episode",
           "query_words", "resolve_owner", "search_run_files", "to_fts_query"]
