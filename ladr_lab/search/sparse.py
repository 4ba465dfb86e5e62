"""The sparse index: BM25 over text units with tantivy, updated in place, read through snapshots.

Why tantivy (measured on BEIR SciFact, 5,183 documents, 300 queries, this 2-core machine; see
docs/search.md): BM25 nDCG@10 0.6868 at about 2,400 queries/s one query at a time, with real
incremental updates (add and delete documents, commit a new segment, merge in the background)
and point-in-time searchers. bm25s scores the same (0.6863) and is faster in batches, but has no
updates: every write would rebuild the index. SQLite FTS5 updates in place but answered 58
queries/s here.

Each unit version gets a fresh integer `uid` (a fast field), so a deletion is exact and a hit's
key is read in bulk from the fast-field column without fetching stored documents. Text is
analysed by tantivy's `en_stem` tokenizer (lower-case, English Snowball stemming); a query is cut
into words first, so no query syntax (fields, quotes, +/-) can be injected through it.
"""
from __future__ import annotations

import operator
import re
import threading
from collections.abc import Hashable, Iterable
from typing import Any

from .budget import check_budget

__all__ = ["HEAP_BYTES", "MAX_QUERY_WORDS", "SparseIndex", "SparseView", "query_words"]

_WORD = re.compile(r"\w+", re.UNICODE)
MAX_QUERY_WORDS = 1024
HEAP_BYTES = 20_000_000  # tantivy wants at least 15 MB per writer thread


def query_words(text: str) -> list[str]:
    """The words of a query as the sparse index sees them (lower-cased, at most 1,024)."""
    return _WORD.findall(text.lower())[:MAX_QUERY_WORDS]


class SparseView:
    """A point-in-time view of a SparseIndex: a tantivy searcher plus the uid -> key map it needs."""

    def __init__(self, index: Any, searcher: Any, keys: dict[int, Hashable]) -> None:
        self._index = index
        self._searcher = searcher
        self._keys = keys
        self.num_docs = len(keys)

    def search(self, text: str, limit: int, allowed: set | None = None) -> list[tuple[Hashable, float]]:
        """The `limit` best (key, BM25 score) pairs for `text`, best first (ties by key); `allowed`
        keeps only those keys (the index over-fetches until enough are found)."""
        words = query_words(text)
        if not words or limit <= 0 or not self._keys:
            return []
        try:
            query = self._index.parse_query(" ".join(words), ["body"])
        except ValueError:
            return []
        # one more than asked, so a tie across the cut is seen: tantivy breaks ties by its own document
        # order, and the promise is ties by key, so the first `limit` must not depend on `limit` itself
        fetch = min(self.num_docs, limit + 1 if allowed is None else max(4 * limit, 64))
        while True:
            check_budget("recall")
            hits = self._searcher.search(query, fetch, count=False).hits
            uids = self._searcher.fast_field_values("uid", [addr for _, addr in hits])
            keys = self._keys
            out = []
            for (score, _), uid in zip(hits, uids, strict=True):
                key = keys.get(uid)
                if key is not None and (allowed is None or key in allowed):
                    out.append((key, float(score)))
            if len(hits) < fetch or fetch >= self.num_docs:
                break   # everything that matches is here
            if len(out) >= limit and float(hits[-1][0]) < out[limit - 1][1]:
                break   # what was not fetched scores below the cut: no tie across it
            fetch = min(self.num_docs, fetch * 4)
        return _ties_by_key(out)[:limit]

    def columns(self, text: str, limit: int) -> tuple[list[float], list[int]] | None:
        """`search(text, limit)` (no filter) in bulk, as its scores and uids: each column read in one call, no
        per-hit tuple; None when `search` must decide (a tie among the fetched hits, an unknown uid)."""
        words = query_words(text)
        if not words or limit <= 0 or not self._keys:
            return [], []
        try:
            query = self._index.parse_query(" ".join(words), ["body"])
        except ValueError:
            return [], []
        hits = self._searcher.search(query, min(self.num_docs, limit + 1), count=False).hits
        scores = list(map(_first, hits))
        if len(set(scores)) != len(scores) or not all(map(operator.gt, scores, scores[1:])):
            return None   # ties (which `search` orders by key), or not best first
        uids = self._searcher.fast_field_values("uid", list(map(_second, hits[:limit])))
        return scores[:limit], uids

    def keys_of(self, uids: list[int]) -> list[Hashable]:
        """The keys of `columns`' uids."""
        return list(map(self._keys.__getitem__, uids))

    def has_all(self, uids: list[int]) -> bool:
        """Whether every uid is one this view knows."""
        return all(map(self._keys.__contains__, uids))


_first = operator.itemgetter(0)
_second = operator.itemgetter(1)


def _ties_by_key(ranked: list) -> list:
    """`ranked` (already best first, as tantivy returns it) with equal scores ordered by key; a filtered
    fetch is re-sorted whole."""
    scores = [s for _, s in ranked]
    if len(set(scores)) == len(scores) and all(map(operator.ge, scores, scores[1:])):
        return ranked   # no ties, already in order: the commonest case, checked in C
    for i in range(1, len(ranked)):
        if ranked[i][1] > ranked[i - 1][1]:
            return sorted(ranked, key=lambda t: (-t[1], str(t[0])))
    out, start = [], 0
    for i in range(1, len(ranked) + 1):
        if i == len(ranked) or ranked[i][1] != ranked[start][1]:
            group = ranked[start:i]
            out.extend(group if len(group) == 1 else sorted(group, key=lambda t: str(t[0])))
            start = i
    return out


class SparseIndex:
    """BM25 over keyed text units: `upsert`/`delete` then `commit`; `view()` is a snapshot."""

    def __init__(self) -> None:
        import tantivy

        self._tantivy = tantivy
        sb = tantivy.SchemaBuilder()
        sb.add_text_field("body", stored=False, tokenizer_name="en_stem")
        sb.add_integer_field("uid", stored=False, indexed=True, fast=True)
        self._schema = sb.build()
        self._index = tantivy.Index(self._schema)
        self._writer = self._index.writer(heap_size=HEAP_BYTES, num_threads=1)
        self._uids: dict[Hashable, int] = {}
        self._keys: dict[int, Hashable] = {}
        self._next = 1
        self._dirty = False
        self._lock = threading.Lock()
        self._view: SparseView | None = None

    def __len__(self) -> int:
        return len(self._uids)

    def upsert(self, key: Hashable, text: str) -> None:
        """Index `text` under `key`, replacing what was indexed for it before (visible after commit)."""
        with self._lock:
            self._delete(key)
            uid = self._next
            self._next += 1
            self._writer.add_document(self._tantivy.Document(body=text, uid=uid))
            self._uids[key] = uid
            self._keys[uid] = key
            self._dirty = True

    def delete(self, key: Hashable) -> None:
        """Remove `key` (visible after commit); a no-op when absent."""
        with self._lock:
            self._delete(key)

    def _delete(self, key: Hashable) -> None:
        uid = self._uids.pop(key, None)
        if uid is not None:
            self._writer.delete_documents_by_term("uid", uid)
            del self._keys[uid]
            self._dirty = True

    def upsert_many(self, items: Iterable[tuple[Hashable, str]]) -> None:
        """`upsert` each (key, text)."""
        for key, text in items:
            self.upsert(key, text)

    def commit(self) -> None:
        """Make every change so far visible to the next `view()`."""
        with self._lock:
            if self._dirty:
                self._writer.commit()
                self._index.reload()
                self._dirty = False
                self._view = None

    def view(self) -> SparseView:
        """A snapshot of the committed index; later commits never change what it answers."""
        with self._lock:
            if self._view is None:
                self._view = SparseView(self._index, self._index.searcher(), dict(self._keys))
            return self._view
