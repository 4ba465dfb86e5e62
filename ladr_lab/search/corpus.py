"""The indexed corpus of the served slates: documents and chunks, sparse and dense, as snapshots.

A `Corpus` holds, for every folder of every served slate, a record per file (text, title, metadata,
trust; the text, the title and each chunk's text and context sanitized, sanitizer.py, what was taken out
counted in `trust.sanitized`, and indexed as sanitized), and over all of them: one sparse index of
documents, one of chunks, a dense index per folder of documents (the same `FolderVectors` that
`similar()` uses: the slate's own vectors of the files as written) and one dense index of chunks.
`sync()` brings them up to date: per folder a `Watch` says whether anything may have changed (what
the slate's listing saw, in-place edits included), and only then is the folder relisted and diffed by
(size, mtime, ctime), so an unchanged corpus costs one `stat` per directory and a write costs the
changed file only (no rebuild). Each state that differs from the last gets a
new `Snapshot` with its own version token; the last `keep` snapshots stay servable.

Identifiers: a document is `TITLE:FOLDER/PATH` (e.g. `Knowledge:docs/notes/a.md`), a chunk is the
document's id + `#INDEX`.
"""
from __future__ import annotations

import itertools
import os
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from ..errors import LadrError
from ..slate import SYSTEM_METATAGS
from ..slate.cache import ReadOnlyDict
from ..slate.embed import l2_normalize
from ..slate.metatags import iso_utc
from .chunks import MAX_CHARS, iter_chunks, title_of
from .columns import Columns
from .dense import DenseIndex, DenseView
from .errors import SnapshotGone
from .filters import field_type
from .folders import FileStats, Watch, vector_cache
from .sanitizer import sanitize
from .similar import FolderVectors, folder_vectors
from .sparse import SparseIndex, SparseView
from .trust import assess

__all__ = ["ChunkRec", "Corpus", "Doc", "EMBED_BATCH", "SYSTEM_FIELDS", "Snapshot"]

SYSTEM_FIELDS = {"slate": "string", "folder": "string", "path": "string", "size": "number",
                 "modified": "string", "created": "string"}
EMBED_BATCH = 64


@dataclass(frozen=True, eq=False)
class Doc:
    """One indexed file."""

    id: str
    slate: str
    folder: str
    rel: str
    text: str
    title: str
    meta: dict
    trust: dict
    citation: dict
    chunks: tuple = ()
    frags: dict = field(default_factory=dict, repr=False)  # serialised hit parts, filled by the engine

    @property
    def folder_key(self) -> tuple[str, str]:
        """(slate title, folder name)."""
        return (self.slate, self.folder)


@dataclass(frozen=True, eq=False)
class ChunkRec:
    """One indexed chunk of a document."""

    id: str
    doc_id: str
    index: int
    text: str
    context: str
    trust: dict
    frags: dict = field(default_factory=dict, repr=False)


@dataclass
class Snapshot:
    """Everything one version of the corpus answers from; never changed once made."""

    version: str
    docs: dict[str, Doc]
    sparse: SparseView
    dense: dict[tuple[str, str], DenseView]
    chunks: dict[str, ChunkRec] = field(default_factory=dict)
    chunk_sparse: SparseView | None = None
    chunk_dense: DenseView | None = None
    fields: dict[str, str] = field(default_factory=dict)
    made_at: float = 0.0
    tails: dict = field(default_factory=dict, repr=False)  # per hit-field selection: uid -> its hit JSON tail
    _columns: Columns | None = field(default=None, repr=False)

    def columns(self) -> Columns:
        """The documents' metadata as columns, what filters evaluate over (built on first use, then kept: a
        snapshot never changes)."""
        cols = self._columns
        if cols is None:
            cols = self._columns = Columns(list(self.docs), [d.meta for d in self.docs.values()])
        return cols

    def doc_of(self, key: str) -> Doc | None:
        """The document a document id or chunk id belongs to."""
        doc = self.docs.get(key)
        if doc is None and key in self.chunks:
            doc = self.docs.get(self.chunks[key].doc_id)
        return doc


class _FolderState:
    """What the corpus holds for one folder (see Corpus)."""

    def __init__(self, slate: str, name: str, folder: Any) -> None:
        self.slate = slate
        self.name = name
        self.folder = folder
        self.watch = Watch(folder)
        self.files = FileStats(folder)
        self.stats: dict[str, tuple[int, int, int]] = {}   # rel -> (size, mtime_ns, ctime_ns) as indexed
        self.docs: dict[str, Doc] = {}
        self.vectors: FolderVectors = folder_vectors(folder)

    def doc_id(self, rel: str) -> str:
        return f"{self.slate}:{self.name}/{rel}"


class Corpus:
    """The served slates, indexed (see the module docstring)."""

    def __init__(self, slates: dict[str, Any], *, dense: bool = True, chunks: bool = True,
                 chunk_chars: int = MAX_CHARS, keep: int = 16) -> None:
        self._slates = dict(slates)
        self.dense_enabled = dense
        self.chunks_enabled = chunks
        self.chunk_chars = chunk_chars
        self.keep = max(1, keep)
        self._folders: dict[tuple[str, str], _FolderState] = {}
        self._roots: dict[str, int | None] = {}
        self._sparse = SparseIndex()
        self._chunk_sparse = SparseIndex() if chunks else None
        self._chunk_dense = DenseIndex() if (chunks and dense) else None
        self._chunks: dict[str, ChunkRec] = {}
        self._docs: dict[str, Doc] = {}
        self._lock = threading.RLock()
        self._snapshots: OrderedDict[str, Snapshot] = OrderedDict()
        self._counter = itertools.count(1)
        self._epoch = os.urandom(3).hex()
        self._current: Snapshot | None = None

    # --- folders --------------------------------------------------------------------------------
    def _folder_states(self) -> list[_FolderState]:
        for title, slate in self._slates.items():
            try:
                root_mtime = os.stat(slate.root).st_mtime_ns
            except OSError:
                root_mtime = None
            if self._roots.get(title, -1) != root_mtime or root_mtime is None:
                self._roots[title] = root_mtime
                for name in slate.folder_names():
                    if (title, name) not in self._folders:
                        try:
                            folder = slate.folder(name)
                        except LadrError:
                            continue
                        self._folders[(title, name)] = _FolderState(title, name, folder)
        return list(self._folders.values())

    def embedder(self) -> Any:
        """The embedder of the served slates (the first folder's; every folder of a store shares one)."""
        states = self._folder_states()
        if not states:
            from ..slate import get_embedder

            return get_embedder(None)
        return vector_cache(states[0].folder).embedder

    # --- sync -----------------------------------------------------------------------------------
    def sync(self) -> Snapshot:
        """Bring every index up to date with the folders and return the current snapshot."""
        with self._lock:
            changed = self._current is None
            for st in self._folder_states():
                if st.watch.moved():
                    changed |= self._sync_folder(st)
            dense_views: dict[tuple[str, str], DenseView] = {}
            if self.dense_enabled:
                for key, st in self._folders.items():
                    view = st.vectors.view()
                    dense_views[key] = view
                    if self._current is None or self._current.dense.get(key) is not view:
                        changed = True
            if not changed and self._current is not None:
                return self._current
            self._sparse.commit()
            if self._chunk_sparse is not None:
                self._chunk_sparse.commit()
            snap = Snapshot(
                version=f"{self._epoch}.{next(self._counter)}",
                docs=dict(self._docs),
                sparse=self._sparse.view(),
                dense=dense_views,
                chunks=dict(self._chunks),
                chunk_sparse=self._chunk_sparse.view() if self._chunk_sparse is not None else None,
                chunk_dense=self._chunk_dense.view() if self._chunk_dense is not None else None,
                fields=self._fields(),
                made_at=time.time(),
            )
            self._current = snap
            self._snapshots[snap.version] = snap
            while len(self._snapshots) > self.keep:
                self._snapshots.popitem(last=False)
            return snap

    def snapshot(self, version: str | None = None) -> Snapshot:
        """The pinned snapshot `version` (SnapshotGone when it is not kept), or a fresh current one."""
        if version is None:
            return self.sync()
        with self._lock:
            snap = self._snapshots.get(version)
        if snap is None:
            raise SnapshotGone(f'indexVersion "{version}" is not available (kept: the last {self.keep} versions)',
                               {"indexVersion": version})
        return snap

    def _sync_folder(self, st: _FolderState) -> bool:
        listing = st.files.signatures(st.watch.mark())
        try:
            tags = st.folder.metatags()
        except LadrError:
            tags = {}
        changed = False
        seen = set()
        for rel, size, mtime, ctime in listing:
            seen.add(rel)
            meta_user = tags.get(rel) or {}
            old = st.docs.get(rel)
            if old is not None and st.stats.get(rel) == (size, mtime, ctime):
                if _user_meta(old.meta) != meta_user:
                    st.docs[rel] = self._with_meta(old, meta_user, st, rel, size, mtime)
                    self._docs[old.id] = st.docs[rel]
                    changed = True
                continue
            text = st.folder.read_text(rel)
            if text is None:
                continue
            doc = self._make_doc(st, rel, text, meta_user, size, mtime)
            self._index_doc(doc, old)
            st.docs[rel] = doc
            st.stats[rel] = (size, mtime, ctime)
            self._docs[doc.id] = doc
            changed = True
        for rel in [r for r in st.docs if r not in seen]:
            old = st.docs.pop(rel)
            st.stats.pop(rel, None)
            self._unindex_doc(old)
            self._docs.pop(old.id, None)
            changed = True
        return changed

    def _make_doc(self, st: _FolderState, rel: str, text: str, user: dict, size: int, mtime: int) -> Doc:
        doc_id = st.doc_id(rel)
        clean, trust = _vetted(text)
        title = sanitize(title_of(clean, rel.rsplit("/", 1)[-1]))[0]
        meta = self._meta(st, rel, user, size, mtime)
        chunks: tuple = ()
        if self.chunks_enabled:
            # cut from the file's text and each sanitized on its own, so a chunk's report is of its own text
            chunks = tuple(iter_chunks(text, title, self.chunk_chars))
        citation = {"source": st.slate, "uri": f"slate:{st.slate}/{st.name}/{rel}", "title": title,
                    "path": f"{st.name}/{rel}"}
        return Doc(doc_id, st.slate, st.name, rel, clean, title, meta, trust, ReadOnlyDict(citation), chunks)

    def _meta(self, st: _FolderState, rel: str, user: dict, size: int, mtime: int) -> dict:
        meta = {k: v for k, v in user.items() if k not in SYSTEM_METATAGS}
        meta.update(slate=st.slate, folder=st.name, path=rel, size=size, modified=iso_utc(mtime))
        created = st.folder.get_metatag(rel, "created")
        if created is not None:
            meta["created"] = created
        return ReadOnlyDict(meta)

    def _with_meta(self, old: Doc, user: dict, st: _FolderState, rel: str, size: int, mtime: int) -> Doc:
        meta = self._meta(st, rel, user, size, mtime)
        return Doc(old.id, old.slate, old.folder, old.rel, old.text, old.title, meta, old.trust, old.citation,
                   old.chunks)

    def _index_doc(self, doc: Doc, old: Doc | None) -> None:
        self._sparse.upsert(doc.id, doc.text)
        if old is not None:
            self._unindex_chunks(old)
        if not self.chunks_enabled or self._chunk_sparse is None:
            return
        recs = []
        for c in doc.chunks:
            text, trust = _vetted(c.text)
            recs.append(ChunkRec(f"{doc.id}#{c.index}", doc.id, c.index, text, sanitize(c.context)[0], trust))
        for rec in recs:
            self._chunks[rec.id] = rec
            self._chunk_sparse.upsert(rec.id, rec.text)
        if self._chunk_dense is not None and recs:
            embedder = self.embedder()
            limit = getattr(embedder, "max_chars", None)
            for start in range(0, len(recs), EMBED_BATCH):
                batch = recs[start:start + EMBED_BATCH]
                try:
                    vecs = embedder.embed([r.text[:limit] if limit else r.text for r in batch])
                except Exception:  # noqa: BLE001 - a failing remote embedder leaves chunks sparse-only
                    continue
                for rec, vec in zip(batch, vecs, strict=False):
                    self._chunk_dense.upsert(rec.id, l2_normalize(list(vec)))

    def _unindex_chunks(self, doc: Doc) -> None:
        for c in doc.chunks:
            cid = f"{doc.id}#{c.index}"
            self._chunks.pop(cid, None)
            if self._chunk_sparse is not None:
                self._chunk_sparse.delete(cid)
            if self._chunk_dense is not None:
                self._chunk_dense.delete(cid)

    def _unindex_doc(self, doc: Doc) -> None:
        self._sparse.delete(doc.id)
        self._unindex_chunks(doc)

    def _fields(self) -> dict[str, str]:
        fields = dict(SYSTEM_FIELDS)
        for doc in self._docs.values():
            for k, v in doc.meta.items():
                if k not in fields:
                    fields[k] = field_type(v)
        return fields

    def folder_key(self, doc: Doc) -> tuple[str, str]:
        """The (slate, folder) a document lives in."""
        return doc.folder_key

    def versions(self) -> list[str]:
        """The kept snapshot versions, oldest first."""
        with self._lock:
            return list(self._snapshots)


def _vetted(text: str) -> tuple[str, ReadOnlyDict]:
    """A unit's text sanitized, and its `trust`: the heuristic's verdict and `sanitized` (False, or the report)."""
    clean, report = sanitize(text)
    t = assess(clean, text)
    return clean, ReadOnlyDict(level=t["level"], score=t["score"], injectionSuspected=t["injectionSuspected"],
                               sanitized=ReadOnlyDict(report) if report else False)


def _user_meta(meta: dict) -> dict:
    return {k: v for k, v in meta.items() if k not in SYSTEM_FIELDS}
