"""The incremental full-text index of one agent's run files, in SQLite FTS5 (seed 004's "Cost").

The index holds every line of the agent's files: `<agent>.history`, `<agent>.log` and every file below the
folder `<agent>/`. Each `refresh()` reads only what was appended since the last one, in 1 MiB blocks, and reads
a file again from its start when it shrank, was replaced (another inode), was rewritten (its first or last
read bytes changed) or was written without growing (same size, another mtime or ctime). A record is read
whole within one refresh (it is carried across blocks); a record still being written when a refresh reads it
is indexed in parts. When the last read ended inside a line, the part
holding that line is read again by the next refresh, so no line is ever indexed cut in two.

Each record is interpreted, masked whole, cut into lines and each line into pieces of at most
`MAX_PIECE_CHARS` (cut after a non-word character, so no word is cut in two); the pieces go to an FTS5 table
(ranked with its bm25), the record's fields (file, line, time, conversation, episode, kind, dedup keys) to a
plain table the retriever filters on. Several processes may share one index file: each write is one
BEGIN IMMEDIATE transaction, and a refresh first takes what another process committed. A record's episode
is that of the latest ``has started episode N.`` record of the agent at or before it: in its own file by
position, in the agent's other files by time (a marker of the same second counts only for a file that has no
marker of its own before the record).
"""
from __future__ import annotations

import bisect
import hashlib
import json
import logging
import os
import re
import sqlite3
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import LadrError
from .masking import Masker
from .readings import LEFT_OUT, NOTE, QUIET_LEVELS, TOLD, RecordInterpreter
from .records import CONTINUATION_INDENT, AgentRecord, parse_record_line
from .writer import EPISODE_MARKER_RE, HISTORY_SUFFIX, LOG_SUFFIX

BLOCK_BYTES = 1 << 20
MAX_PIECE_CHARS = 2000
NUL_PROBE_BYTES = 8192
SIGNATURE_BYTES = 4096
MAX_PART_CHARS = 8 << 20  # a record longer than this is indexed in parts even within one read
SCHEMA_VERSION = "5"  # 5: a masked index keeps no unmasked header in `files.state` (issue 29)
LOCK_WAIT_SECONDS = 3600.0  # how long a search waits for another process's refresh of the same index
_BATCH = 20000
_MARKER = b"has started episode"
_INF_TS = "\uffff"
_log = logging.getLogger("ladr_lab.runfiles")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta(k TEXT PRIMARY KEY, v TEXT);
CREATE TABLE IF NOT EXISTS files(id INTEGER PRIMARY KEY, rel TEXT UNIQUE, kind TEXT, dev INT, ino INT,
    seen_size INT, mtime INT, ctime INT, offset INT, lines INT, state TEXT, head_sig BLOB, tail_sig BLOB,
    tent_offset INT, tent_lines INT, tent_state TEXT, nul INT DEFAULT 0);
CREATE TABLE IF NOT EXISTS records(id INTEGER PRIMARY KEY, file INT, line INT, part_line INT, ts TEXT,
    level TEXT, conv TEXT, noconv INT, rf INT, episode INT, kind TEXT, key INT, msgkey INT, p0 INT, p1 INT,
    tentative INT);
CREATE INDEX IF NOT EXISTS records_file ON records(file, line);
CREATE INDEX IF NOT EXISTS records_ts ON records(ts);
CREATE INDEX IF NOT EXISTS records_noconv ON records(episode, file) WHERE noconv = 1;
CREATE INDEX IF NOT EXISTS records_tentative ON records(file) WHERE tentative = 1;
CREATE TABLE IF NOT EXISTS markers(file INT, line INT, ts TEXT, n INT);
CREATE VIRTUAL TABLE IF NOT EXISTS pieces USING fts5(text, rec UNINDEXED, pline UNINDEXED, pidx UNINDEXED,
    tokenize = "unicode61 remove_diacritics 2");
"""


def _hash(*parts: str) -> int:
    h = hashlib.blake2b("\x1f".join(parts).encode("utf-8", "surrogatepass"), digest_size=8).digest()
    return int.from_bytes(h, "big", signed=True)


_LAST_BREAK = re.compile(r".*[\W_]", re.S)  # up to a line's last character that is not a letter or digit


def cut_line(line: str, limit: int = MAX_PIECE_CHARS) -> list[str]:
    """A line cut into pieces of at most `limit` characters, each cut after a non-word character when the piece
    has one: so no word of at most `limit` characters is ever cut in two (and lost to a search)."""
    out, j, n = [], 0, len(line)
    while n - j > limit:
        end = j + limit
        if (line[end - 1].isalnum() and line[end].isalnum()) and (m := _LAST_BREAK.match(line, j, end)):
            end = m.end()  # after the window's last break; a word longer than `limit` is cut where it must be
        out.append(line[j:end])
        j = end
    out.append(line[j:])
    return out


def message_key(message: str) -> int:
    """The key a told message is compared by (the turn-message rule)."""
    return _hash("message", message)


def _norm_ts(ts: str | None) -> str | None:
    return ts.replace(",", ".") if ts and "," in ts else ts


@dataclass
class _File:
    """What the index knows of one file (a row of `files`)."""

    id: int
    rel: str
    kind: str  # history | log | other
    dev: int = 0
    ino: int = 0
    seen_size: int = 0
    mtime: int = 0
    ctime: int = 0
    offset: int = 0
    lines: int = 0
    state: dict = field(default_factory=dict)
    head_sig: bytes = b""
    tail_sig: bytes = b""
    tent_offset: int | None = None
    tent_lines: int = 0
    tent_state: dict = field(default_factory=dict)
    nul: int = 0

    @property
    def records(self) -> bool:
        return self.kind != "other"


@dataclass
class RefreshStats:
    """What one refresh did: files seen, bytes read, records and pieces added, files read again from the start."""

    files: int = 0
    bytes_read: int = 0
    records: int = 0
    pieces: int = 0
    reread: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


class _Markers:
    """The agent's episode markers in memory: per file by line, and per file by time for the other files' view."""

    def __init__(self) -> None:
        self.by_line: dict[int, list[tuple[int, str, int]]] = {}
        self.by_time: dict[int, list[tuple[str, int]]] = {}

    def add(self, file: int, line: int, ts: str, n: int) -> None:
        bisect.insort(self.by_line.setdefault(file, []), (line, ts, n))
        bisect.insort(self.by_time.setdefault(file, []), (ts, n))

    def forget(self, file: int) -> None:
        self.by_line.pop(file, None)
        self.by_time.pop(file, None)

    def episode(self, file: int, line: int, ts: str | None) -> int | None:
        """The episode of a record at `line` of `file` written at `ts` (None: no marker before it)."""
        ts = ts or _INF_TS
        own = None
        mine = self.by_line.get(file)
        if mine:
            i = bisect.bisect_right(mine, (line, _INF_TS, 1 << 62))
            if i:
                own = mine[i - 1]
        best = None  # (ts, n): the latest marker of another file before ts (at ts, when the file has none)
        for f, ms in self.by_time.items():
            if f != file:
                i = bisect.bisect_right(ms, (ts, 1 << 62)) if own is None else bisect.bisect_left(ms, (ts,))
                if i and (best is None or ms[i - 1] > best):
                    best = ms[i - 1]
        if own is None:
            return best[1] if best else None
        if best is not None and best[0] > own[1]:
            return best[1]
        return own[2]


class RunFileIndex:
    """The incremental FTS5 index of one agent's files in a run folder (see the module docstring)."""

    def __init__(self, run_dir: str | Path, owner: str, *, interpreter: RecordInterpreter | None = None,
                 masker: Masker | None = None, path: str | Path | None = None) -> None:
        self.root = Path(os.path.realpath(run_dir))  # a run folder that is itself a link is followed
        self.owner = owner
        self.interpreter = interpreter
        self.masker = masker
        self.warned: set[str] = set()
        try:
            if path is not None:
                _create_private(Path(path))
            # several processes may share an index file (the search cache): each waits for the other's write
            self.db = sqlite3.connect("" if path is None else str(path), check_same_thread=False,
                                      isolation_level=None, timeout=LOCK_WAIT_SECONDS)
            # a rollback journal, not WAL: a first build is one big transaction that WAL would write twice;
            # every write is a BEGIN IMMEDIATE transaction, so two processes never interleave their refreshes
            self.db.execute("PRAGMA synchronous=OFF" if path is None else "PRAGMA journal_mode=TRUNCATE")
            self.db.execute("PRAGMA temp_store=MEMORY")
            self.db.execute("PRAGMA cache_size=-262144")  # 256 MiB: FTS5 merges its segments in the page cache
            if masker is not None:  # what a masked index drops (an older build's rows) is overwritten, not left free
                self.db.execute("PRAGMA secure_delete=ON")
            self.db.execute("BEGIN IMMEDIATE")
            try:
                self._create()
                self._check_meta()
                self.db.execute("COMMIT")
            except BaseException:
                self.db.execute("ROLLBACK")
                raise
            self._load()
        except (sqlite3.Error, OSError) as exc:  # a folder that does not exist, a file not an index, a read-only disk
            raise LadrError(f"cannot use {path} as a run-file index: {exc}") from None

    def _load(self) -> None:
        """What the index keeps in memory, as the database has it (at start, and after a failed refresh)."""
        self.markers = _Markers()
        for f, line, ts, n in self.db.execute("SELECT file, line, ts, n FROM markers"):
            self.markers.add(f, line, ts, n)
        self._next_rec = (self.db.execute("SELECT max(id) FROM records").fetchone()[0] or 0) + 1
        self._next_piece = (self.db.execute("SELECT max(rowid) FROM pieces").fetchone()[0] or 0) + 1
        self._rec_rows: list[tuple] = []
        self._piece_rows: list[tuple] = []
        self.generation = getattr(self, "generation", 0) + 1  # changes whenever the indexed pieces may have
        self._stats_cache: dict = {}
        self._data_version = self._version()

    def _version(self) -> int:
        """SQLite's data version: it changes when another connection (another process) commits to the index."""
        return self.db.execute("PRAGMA data_version").fetchone()[0]

    # ---- setup -----------------------------------------------------------------------------------------
    def _config(self) -> dict:
        return {"version": SCHEMA_VERSION, "root": str(self.root), "owner": self.owner,
                "interpreter": getattr(self.interpreter, "name", type(self.interpreter).__name__)
                if self.interpreter is not None else "none",
                "masker": self.masker.name if self.masker is not None else "none",
                "max_piece_chars": str(MAX_PIECE_CHARS)}

    def _create(self) -> None:
        for statement in _SCHEMA.split(";"):
            if statement.strip():
                self.db.execute(statement)

    def _check_meta(self) -> None:
        want = self._config()
        have = dict(self.db.execute("SELECT k, v FROM meta"))
        if have and have != want:  # built for another version, folder, owner, interpreter or masker: start again
            for table in ("files", "records", "markers", "pieces", "meta"):
                self.db.execute(f"DROP TABLE IF EXISTS {table}")
            self._create()
            have = {}
        if not have:
            self.db.executemany("INSERT INTO meta VALUES (?, ?)", list(want.items()))

    def close(self) -> None:
        """Close the index's database."""
        self.db.close()

    def warn(self, message: str, stats: RefreshStats | None = None) -> None:
        """Report `message` once in the index's life (logged at WARNING and added to `stats.warnings`)."""
        if message in self.warned:
            return
        self.warned.add(message)
        _log.warning(message)
        if stats is not None:
            stats.warnings.append(message)

    # ---- which files -----------------------------------------------------------------------------------
    def _inside(self, real: str) -> bool:
        root = str(self.root)
        return real == root or real.startswith(root.rstrip(os.sep) + os.sep)

    def _check(self, path: Path, kind: str, stats: RefreshStats) -> tuple[str, os.stat_result] | None:
        try:
            st = os.lstat(path)
        except OSError:
            return None
        rel = path.relative_to(self.root).as_posix()
        if stat.S_ISLNK(st.st_mode):
            if self._inside(os.path.realpath(path)):
                self.warn(f"{rel}: left out: a symbolic link (links below the run folder are not followed)", stats)
            else:
                self.warn(f"{rel}: left out: its real path lies outside the run folder", stats)
            return None
        if not stat.S_ISREG(st.st_mode):
            return None
        if not self._inside(os.path.realpath(path)):  # pragma: no cover - only a link can lead out, see above
            self.warn(f"{rel}: left out: its real path lies outside the run folder", stats)
            return None
        return rel, st

    def iter_files(self, stats: RefreshStats) -> Iterator[tuple[str, str, Path, os.stat_result]]:
        """The agent's files as (relative path, kind, path, lstat), links and files outside left out with a WARN."""
        for suffix, kind in ((HISTORY_SUFFIX, "history"), (LOG_SUFFIX, "log")):
            p = self.root / (self.owner + suffix)
            got = self._check(p, kind, stats)
            if got:
                yield got[0], kind, p, got[1]
        folder = self.root / self.owner
        if os.path.islink(folder):
            self._check(folder, "other", stats)
            return
        if not folder.is_dir():
            return
        for here, dirs, names in os.walk(folder, followlinks=False):
            base = Path(here)
            for d in list(dirs):
                if d.startswith(".") or os.path.islink(base / d):
                    dirs.remove(d)
                    if not d.startswith("."):
                        self._check(base / d, "other", stats)
            dirs.sort()
            for name in sorted(names):
                if not name.startswith("."):
                    got = self._check(base / name, "other", stats)
                    if got:
                        yield got[0], "other", base / name, got[1]

    # ---- refresh ---------------------------------------------------------------------------------------
    def _files(self) -> dict[str, _File]:
        out = {}
        for row in self.db.execute("SELECT id, rel, kind, dev, ino, seen_size, mtime, ctime, offset, lines, state, "
                                   "head_sig, tail_sig, tent_offset, tent_lines, tent_state, nul FROM files"):
            f = _File(row[0], row[1], row[2], row[3], row[4], row[5], row[6], row[7], row[8], row[9],
                      json.loads(row[10] or "{}"), row[11] or b"", row[12] or b"", row[13], row[14] or 0,
                      json.loads(row[15] or "{}"), row[16])
            out[f.rel] = f
        return out

    def _stored_state(self, state: dict) -> str:
        """A parse state as `files` keeps it: the record's header fields without its first line's message (the
        record's pieces hold that, masked) and, with masking on, its free-text fields masked."""
        head = state.get("head")
        if head is not None:
            head = {k: v for k, v in head.items() if k != "message"}
            if self.masker is not None:
                for k in ("state", "conversation", "agent"):
                    if isinstance(head.get(k), str):
                        head[k] = self.masker.mask(head[k])
            state = {**state, "head": head}
        return json.dumps(state)

    def _save(self, f: _File) -> None:
        self.db.execute("INSERT OR REPLACE INTO files VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                        (f.id, f.rel, f.kind, f.dev, f.ino, f.seen_size, f.mtime, f.ctime, f.offset, f.lines,
                         self._stored_state(f.state), f.head_sig, f.tail_sig, f.tent_offset, f.tent_lines,
                         self._stored_state(f.tent_state), f.nul))

    def _drop_rows(self, file_id: int, from_line: int | None = None) -> list[str]:
        """Delete a file's records, pieces and markers (or only its tentative part, whose lines start after
        `from_line`); the times of the markers dropped."""
        cond, args = ("file = ?", (file_id,)) if from_line is None else ("file = ? AND tentative = 1", (file_id,))
        table = "records" if from_line is None else "records INDEXED BY records_tentative"
        ranges: list[list[int]] = []
        for p0, p1 in self.db.execute(f"SELECT p0, p1 FROM {table} WHERE {cond} AND p1 >= p0 ORDER BY id", args):
            if ranges and ranges[-1][1] + 1 == p0:
                ranges[-1][1] = p1
            else:
                ranges.append([p0, p1])
        for p0, p1 in ranges:
            self.db.execute("DELETE FROM pieces WHERE rowid BETWEEN ? AND ?", (p0, p1))
        self.db.execute(f"DELETE FROM {table} WHERE {cond}", args)
        mcond, margs = ("file = ?", (file_id,)) if from_line is None else ("file = ? AND line > ?", (file_id, from_line))
        gone = [ts for (ts,) in self.db.execute(f"SELECT ts FROM markers WHERE {mcond}", margs)]
        self.db.execute(f"DELETE FROM markers WHERE {mcond}", margs)
        self.markers.forget(file_id)
        for line, ts, n in self.db.execute("SELECT line, ts, n FROM markers WHERE file = ?", (file_id,)):
            self.markers.add(file_id, line, ts, n)
        return gone

    @staticmethod
    def _signature(fh, start: int, length: int) -> bytes:
        fh.seek(start)
        return hashlib.sha1(fh.read(length)).digest()

    def _signatures(self, path: Path, end: int) -> tuple[bytes, bytes]:
        with open(path, "rb") as fh:
            head = self._signature(fh, 0, min(SIGNATURE_BYTES, end))
            tail_start = max(0, end - SIGNATURE_BYTES)
            return head, self._signature(fh, tail_start, end - tail_start)

    def refresh(self) -> RefreshStats:
        """Read what was appended to the agent's files since the last refresh (all of a file that changed)."""
        stats = RefreshStats()
        seen: set[str] = set()
        plans: list[tuple[_File, Path, int]] = []  # (file, path, end)
        changed_ts: list[str] = []
        self.db.execute("BEGIN IMMEDIATE")  # waits for another process's refresh of the same index to end
        try:
            if self._version() != self._data_version:  # another process wrote the index: take it as it is now
                self._load()
            known = self._files()
            for rel, kind, path, st in self.iter_files(stats):
                seen.add(rel)
                stats.files += 1
                f = known.get(rel)
                if f is None:
                    fid = (self.db.execute("SELECT max(id) FROM files").fetchone()[0] or 0) + 1
                    f = _File(fid, rel, kind)
                    self._save(f)
                same_inode = (f.dev, f.ino) == (st.st_dev, st.st_ino)
                if same_inode and (f.seen_size, f.mtime, f.ctime) == (st.st_size, st.st_mtime_ns, st.st_ctime_ns):
                    if f.nul:  # one WARN in each index's life, also when another process built it
                        self.warn(f"{rel}: left out: a NUL byte in its first 8 KiB", stats)
                    continue  # unchanged since the last refresh
                # written without growing (a same-size rewrite, even with its mtime put back: the ctime moved):
                # read again from the start, as a file that shrank
                restart = not same_inode or st.st_size < f.offset or (0 < f.offset == st.st_size)
                if not restart and f.offset:
                    restart = self._signatures(path, f.offset) != (f.head_sig, f.tail_sig)
                if restart and (f.offset or f.nul):
                    changed_ts += self._drop_rows(f.id)
                    stats.reread.append(rel)
                if restart:
                    f = _File(f.id, rel, kind)
                f.dev, f.ino, f.seen_size, f.mtime, f.ctime = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns,
                                                               st.st_ctime_ns)
                if f.nul:
                    if self._has_nul(path, 0):
                        self._save(f)
                        continue
                    f = _File(f.id, rel, kind, st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
                if f.tent_offset is not None:  # the last read ended inside a line: read that part again
                    changed_ts += self._drop_rows(f.id, from_line=f.tent_lines)
                    f.offset, f.lines, f.state = f.tent_offset, f.tent_lines, f.tent_state
                    f.tent_offset = None
                if f.offset < NUL_PROBE_BYTES and self._has_nul(path, f.offset):
                    changed_ts += self._drop_rows(f.id)
                    f = _File(f.id, rel, kind, st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns, nul=1)
                    self._save(f)
                    self.warn(f"{rel}: left out: a NUL byte in its first 8 KiB", stats)
                    continue
                plans.append((f, path, st.st_size))
            for rel, f in known.items():
                if rel not in seen:  # the file is gone: so is what it said
                    changed_ts += self._drop_rows(f.id)
                    self.db.execute("DELETE FROM files WHERE id = ?", (f.id,))
            first_new = self._next_rec
            if plans or len(seen) != len(known) or changed_ts:
                self.generation += 1
            for f, path, end in plans:
                if f.records:
                    changed_ts += self._scan_markers(f, path, end)
            for f, path, end in plans:
                self._read(f, path, end, stats)
            self._flush()
            if changed_ts:
                self._recompute(min(changed_ts), first_new)
            self.db.execute("COMMIT")
        except BaseException:
            self.db.execute("ROLLBACK")
            self._load()
            raise
        self._data_version = self._version()
        return stats

    # ---- term statistics (what ranking needs to know about a query's words) -----------------------------
    def piece_count(self) -> int:
        """How many pieces the index holds."""
        key = (self.generation, None)
        if key not in self._stats_cache:
            self._stats_cache[key] = self.db.execute("SELECT count(*) FROM pieces_docsize").fetchone()[0]
        return self._stats_cache[key]

    def doc_frequency(self, term: str) -> int:
        """How many pieces hold `term` (a token as FTS5's tokenizer writes it)."""
        key = (self.generation, term)
        if key not in self._stats_cache:
            self.db.execute("CREATE VIRTUAL TABLE IF NOT EXISTS temp.pieces_vocab USING fts5vocab(main, pieces, 'row')")
            row = self.db.execute("SELECT doc FROM temp.pieces_vocab WHERE term = ?", (term,)).fetchone()
            self._stats_cache[key] = row[0] if row else 0
        return self._stats_cache[key]

    @staticmethod
    def _has_nul(path: Path, offset: int) -> bool:
        with open(path, "rb") as fh:
            fh.seek(offset)
            return b"\x00" in fh.read(NUL_PROBE_BYTES - offset)

    def _blocks(self, path: Path, start: int, end: int) -> Iterator[tuple[int, bytes]]:
        """(offset, bytes) of [start, end) read in BLOCK_BYTES reads, each cut after its last newline but the end."""
        with open(path, "rb") as fh:
            fh.seek(start)
            pos, carry = start, b""
            while pos < end:
                data = fh.read(min(BLOCK_BYTES, end - pos))
                if not data:
                    break
                pos += len(data)
                data = carry + data
                cut = len(data) if pos >= end else data.rfind(b"\n") + 1
                if cut == 0:  # a line longer than a block: keep reading
                    carry = data
                    continue
                yield pos - len(data), data[:cut]
                carry = data[cut:]
            if carry:
                yield pos - len(carry), carry

    def _scan_markers(self, f: _File, path: Path, end: int) -> list[str]:
        """Find the episode markers in the part of `f` about to be read, before any of its records is indexed."""
        found = []
        line = f.lines
        for _, data in self._blocks(path, f.offset, end):
            counted = 0  # newlines of data[:counted] are in `line`
            at = data.find(_MARKER)
            while at >= 0:
                start = data.rfind(b"\n", 0, at) + 1
                stop = data.find(b"\n", at)
                stop = len(data) if stop < 0 else stop
                line += data.count(b"\n", counted, start)
                counted = start
                fields = parse_record_line(data[start:stop].rstrip(b"\r").decode("utf-8", "replace")) \
                    if data[start:start + 1].isdigit() else None
                m = EPISODE_MARKER_RE.fullmatch(fields["message"]) if fields and fields["agent"] == self.owner \
                    else None
                if m and fields is not None and int(m.group(1)) < 1 << 63:  # SQLite's integers: no larger episode
                    ts = _norm_ts(fields["timestamp"]) or ""
                    self.db.execute("INSERT INTO markers VALUES (?,?,?,?)", (f.id, line + 1, ts, int(m.group(1))))
                    self.markers.add(f.id, line + 1, ts, int(m.group(1)))
                    found.append(ts)
                at = data.find(_MARKER, stop)
            line += data.count(b"\n", counted)
        return found

    # ---- reading records -------------------------------------------------------------------------------
    def _read(self, f: _File, path: Path, end: int, stats: RefreshStats) -> None:
        """Index [f.offset, end) of a file, record by record, and move its state to `end`."""
        part = _Part.resume(f.state)
        line_no, offset, complete, last_start = f.lines, f.offset, True, f.offset
        for block_start, data in self._blocks(path, f.offset, end):
            raws = data.split(b"\n")
            complete = raws[-1] == b""
            if complete:
                raws.pop()
            pos = block_start
            for raw in raws:
                line_no += 1
                ln = raw.decode("utf-8", "replace")
                if ln.endswith("\r"):
                    ln = ln[:-1]
                if not f.records:  # another file: its paragraphs (runs of non-blank lines) are its records
                    if not ln.strip():
                        self._emit(f, part, stats)
                        part = _Part()
                    else:
                        if part.empty:
                            part = _Part(None, line_no, line_no, pos, line_no - 1, {})
                        part.add(ln)
                elif ln[:1].isdigit() and (fields := parse_record_line(ln)) is not None:
                    self._emit(f, part, stats, next_ts=_norm_ts(fields["timestamp"]))
                    part = _Part(fields, line_no, line_no, pos, line_no - 1, part.state())
                    part.add(fields["message"])
                else:  # a continuation line: only a message's own lines carry the indent
                    if part.empty:
                        part = part.next_part(line_no, pos)
                    part.add(ln[len(CONTINUATION_INDENT):] if part.head is not None
                             and ln.startswith(CONTINUATION_INDENT) else ln)
                if part.chars > MAX_PART_CHARS:  # a giant record: index what we have, go on with a new part
                    self._emit(f, part, stats)
                    part = _Part.resume(part.state())
                last_start = pos
                pos += len(raw) + 1
            stats.bytes_read += len(data)
            offset = block_start + len(data)
            if len(self._piece_rows) >= _BATCH:
                self._flush()
        if not complete:  # the read ended inside a line: the next refresh reads this part again, whole
            f.tent_offset, f.tent_lines, f.tent_state = (part.offset, part.lines_before, part.before) \
                if not part.empty else (last_start, line_no - 1, part.state())
        self._emit(f, part, stats, tentative=not complete)
        f.offset, f.lines, f.state = offset, line_no, part.state()
        f.head_sig, f.tail_sig = self._signatures(path, offset)
        self._save(f)

    def _emit(self, f: _File, part: _Part, stats: RefreshStats, *, next_ts: str | None = None,
              tentative: bool = False) -> None:
        """Interpret, mask, cut and queue one record part."""
        if part.empty:
            return
        head = part.head
        message = "\n".join(part.body)
        if head is None:
            ts, conv, level, noconv = (next_ts if f.records else None), None, None, int(f.records)
        else:
            ts, conv, level = _norm_ts(head["timestamp"]), head["conversation"], head["level"]
            noconv = int(conv is None)
        if level in QUIET_LEVELS:
            return
        if self.interpreter is None:  # every record a note
            kind, text, msg = NOTE, message, None
        else:
            rec = AgentRecord(part.line, None, None, None, None, None, message, "preamble" if f.records else "text") \
                if head is None else AgentRecord(part.line, head["timestamp"], level, head["state"], conv, head["agent"],
                                            message, head["kind"])
            reading = self.interpreter.read(f.rel, part.line, rec)
            if reading.kind == LEFT_OUT:
                return
            kind, text, msg = reading.kind, reading.text, reading.message
        if self.masker is not None:
            text = self.masker.mask(text)
            msg = self.masker.mask(msg) if msg is not None else None
            conv = self.masker.mask(conv) if conv is not None else None
        episode = self.markers.episode(f.id, part.part_line, ts) if f.records else None
        if kind == NOTE or msg is None:
            # "a note several files record is given once": the copies of one record in .history and .log share
            # its episode and conversation; the same words written in another episode or conversation are
            # another record (round 1 of yesterday's run is not round 1 of today's)
            key, msgkey = _hash("note", str(episode), conv or "", text), None
        else:
            key = _hash(kind, msg)
            msgkey = message_key(msg) if kind == TOLD else None
        rec_id = self._next_rec
        self._next_rec += 1
        p0 = self._next_piece
        pidx = 0
        for i, ln in enumerate(text.split("\n")):
            for piece in (cut_line(ln) if len(ln) > MAX_PIECE_CHARS else (ln,)):
                if piece.strip():
                    self._piece_rows.append((self._next_piece, piece, rec_id, part.part_line + i, pidx))
                    self._next_piece += 1
                    pidx += 1
        self._rec_rows.append((rec_id, f.id, part.line, part.part_line, ts, level, conv, noconv, int(f.records),
                               episode, kind, key, msgkey, p0, self._next_piece - 1, int(tentative)))
        stats.records += 1
        stats.pieces += pidx

    def _flush(self) -> None:
        if self._rec_rows:
            self.db.executemany("INSERT INTO records VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)", self._rec_rows)
            self._rec_rows = []
        if self._piece_rows:
            self.db.executemany("INSERT INTO pieces(rowid, text, rec, pline, pidx) VALUES (?,?,?,?,?)",
                                self._piece_rows)
            self._piece_rows = []

    def _recompute(self, since: str, first_new: int) -> None:
        """Set again the episode of records indexed before this refresh that markers found now may move."""
        # "+id": search by time (the few recent records), not by id (every record indexed before)
        rows = self.db.execute("SELECT id, file, part_line, ts, episode FROM records WHERE ts >= ? AND rf = 1 AND "
                               "+id < ? UNION ALL SELECT id, file, part_line, ts, episode FROM records WHERE "
                               "ts IS NULL AND rf = 1 AND +id < ?", (since, first_new, first_new)).fetchall()
        updates = []
        for rid, fid, line, ts, old in rows:
            new = self.markers.episode(fid, line, ts)
            if new != old:
                updates.append((new, rid))
        self.db.executemany("UPDATE records SET episode = ? WHERE id = ?", updates)


def _create_private(path: Path) -> None:
    """Create the index file `path` readable by its owner only (0600), empty, when it does not exist yet: SQLite
    gives its journal the database file's mode, so the journal is 0600 too. An existing file keeps its mode."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return
    try:
        os.fchmod(fd, 0o600)  # whatever the umask
    finally:
        os.close(fd)


@dataclass
class _Part:
    """A record (or a part of one) being read: its header fields, first lines, and where it started."""

    head: dict | None = None
    line: int = 0  # the record's first line (0: no record yet)
    part_line: int = 0  # this part's first line
    offset: int = 0  # the byte offset of this part's first line
    lines_before: int = 0  # complete lines before this part
    before: dict = field(default_factory=dict)  # the parse state before this part
    body: list[str] = field(default_factory=list)
    chars: int = 0

    @property
    def empty(self) -> bool:
        return not self.body

    def add(self, text: str) -> None:
        self.body.append(text)
        self.chars += len(text)

    def state(self) -> dict:
        """The parse state after this part: the record it belongs to, so the next lines can continue it."""
        return {"head": self.head, "line": self.line} if self.line else {}

    @classmethod
    def resume(cls, state: dict) -> _Part:
        """An empty part that continues the record a saved state names."""
        return cls(head=state.get("head"), line=state.get("line", 0), before=state) if state else cls()

    def next_part(self, line_no: int, offset: int) -> _Part:
        """A part starting at `line_no` that continues this record (a preamble when there is no record yet)."""
        line = self.line or line_no
        return _Part(self.head, line, line_no, offset, line_no - 1, self.state())


__all__ = ["BLOCK_BYTES", "MAX_PIECE_CHARS", "NUL_PROBE_BYTES", "RefreshStats", "RunFileIndex", "cut_line",
           "message_key"]
