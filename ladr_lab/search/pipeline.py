"""The retrieval engine behind seed 002's `retrieve`: one call runs the whole pipeline over slates.

`SearchEngine` is the interface a server talks to (`capabilities()`, `retrieve(params, progress)`; a
`JsonSearchEngine` also has `retrieve_json`, the same result as JSON text, which the server prefers), so a corpus that outgrows one machine can be served by another implementation (an OpenSearch or
vector-database client) behind the same protocol. `EmbeddedEngine` is the default: tantivy BM25,
numpy dense vectors from the slates' embedder, in this process.

The pipeline, in order: snapshot (pinned `indexVersion` or current) -> query transform -> recall
(sparse, dense, or both, `candidateK` each, pre-filtered by `filter`) -> fusion (RRF or weighted)
-> rerank (`topN`) -> recency decay -> `minScore` -> session dedup -> MMR -> pages of `k` (or a
`tokenBudget`) with a cursor. Every step is deterministic (ties broken by id), so `seed` needs no
randomness to fix.

Scores: `score` is the last stage's native number (BM25, cosine, fused RRF/weighted, cross-encoder
logit, times the recency factor). `confidence` depends only on the query and the hit, never on
the other hits, so it compares across calls: the cross-encoder's probability when reranked, else
the cosine (clipped to [0, 1]) in dense mode, `bm25 / (bm25 + 10)` in sparse mode, and the mean of
the two in hybrid mode (a signal that did not retrieve the hit counts 0 for sparse).
"""
from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from typing import Any, Protocol, runtime_checkable

from ..models.base import estimate_tokens
from . import fusion
from .budget import check_budget, current_budget, request_budget
from .corpus import Corpus, Snapshot
from .cursors import Cursors, RecallMore, Sessions
from .errors import InvalidRequestParams, OptionUnsupported
from .filters import MAX_DEPTH, MAX_IN_VALUES, MAX_NODES, OPS, Filter, load_filter
from .hits import hit_dicts, hits_json, rest_json, unit_text, unit_vector
from .plain import plain_answer
from .request import FUSIONS, HIT_FIELDS, TRANSFORMS, RetrieveRequest, load_request
from .sanitizer import CLASSES as SANITIZED
from .transform import apply_transform

__all__ = ["EmbeddedEngine", "JsonSearchEngine", "Progress", "SearchEngine", "snap_time"]

Progress = Callable[[int, int, str, list | None], None]


@runtime_checkable
class SearchEngine(Protocol):
    """What a retrieval server needs from an engine."""

    def capabilities(self) -> dict:
        """The `capabilities` object that `initialize` returns."""
        ...

    def retrieve(self, params: Mapping | RetrieveRequest, progress: Progress | None = None) -> dict:
        """Run one `retrieve` call; returns its JSON result (hits, usage, indexVersion, ...)."""
        ...


@runtime_checkable
class JsonSearchEngine(SearchEngine, Protocol):
    """A SearchEngine that can also write a result as JSON text, without building its hit dicts: the server
    splices that text into its response (`EmbeddedEngine` is one)."""

    def retrieve_json(self, params: Mapping | RetrieveRequest, progress: Progress | None = None) -> str:
        """`retrieve`, with the same result as compact JSON text."""
        ...


_STAGE_NAMES = ("sparse", "dense", "fused", "rerank", "recency")


class EmbeddedEngine:
    """The default engine: the served slates indexed in this process (see the module docstring)."""

    def __init__(self, slates: Mapping[str, Any], *, dense: bool = True, chunks: bool = True, max_k: int = 1000,
                 reranker: Any = None, rerank_max: int = 200, transform_model: Any = None,
                 keep_snapshots: int = 16, sized_recall: bool = True, lean: bool = True) -> None:
        self.corpus = Corpus(dict(slates), dense=dense, chunks=chunks, keep=keep_snapshots)
        self.max_k = max_k
        self.reranker = reranker
        self.rerank_max = rerank_max
        self.transform_model = transform_model
        self.sized_recall = sized_recall
        self.lean = lean   # the plain sparse request's lean path (plain.py); False: always the general one
        self.modes = ["sparse", "dense", "hybrid"] if dense else ["sparse"]
        self.units = ["document", "chunk"] if chunks else ["document"]
        self.cursors = Cursors()
        self.sessions = Sessions()

    @classmethod
    def from_store(cls, store: Any, **options: Any) -> EmbeddedEngine:
        """An engine over every slate bound in a SlateStore."""
        return cls({t: store.slate(t) for t in store.titles()}, **options)

    def default_mode(self) -> str:
        """The mode of a request that names none: hybrid with a real embedding model; sparse otherwise,
        since fusing BM25 with the offline hashing embedder's lexical vectors ranks worse than BM25
        alone (SciFact nDCG@10: 0.53 against 0.69)."""
        if "dense" not in self.modes:
            return "sparse"
        name = str(getattr(self.corpus.embedder(), "name", ""))
        return "sparse" if name.startswith("hashing") else "hybrid"

    def warm(self) -> str:
        """Index everything now (instead of on the first request); returns the index version."""
        return self.corpus.sync().version

    # --- capabilities ---------------------------------------------------------------------------
    def _transform_deterministic(self) -> bool:
        """Whether every stage answers the same each time: true unless a query transform asks a model that may
        not (only a model that says `deterministic = True`, as the offline model does, is trusted)."""
        return self.transform_model is None or getattr(self.transform_model, "deterministic", False) is True

    def capabilities(self) -> dict:
        """The capabilities seed 002 names, as this engine honours them."""
        snap = self.corpus.sync()
        dense = "dense" in self.modes
        embedder = self.corpus.embedder() if dense else None
        return {
            "retrieve": {
                "modes": list(self.modes),
                "defaultMode": self.default_mode(),
                "maxK": self.max_k,
                "rerankBuiltin": self.reranker is not None,
                "confidence": True,
                "scoreScale": "unbounded",
                "scoreScaleByMode": {"sparse": "bm25", "dense": "cosine", "hybrid": "unbounded"},
                "deterministic": self._transform_deterministic(),
                "snapshots": True,
                "units": list(self.units),
                "levels": [0],
                "modalities": ["text"],
                "tokenBudget": True,
                "fusion": list(FUSIONS),
                "mmr": dense,
                "recency": True,
                "minScore": True,
                "embedder": getattr(embedder, "name", None),
                "fields": list(HIT_FIELDS),
                "sanitized": list(SANITIZED),
            },
            "rerank": {"methods": [self.reranker.method] if self.reranker is not None else [],
                       "model": getattr(self.reranker, "model", None), "maxCandidates": self.rerank_max},
            "session": True,
            "pagination": True,
            "filter": {"fields": dict(snap.fields), "ops": list(OPS), "combinators": ["and", "or", "not"],
                       "maxInValues": MAX_IN_VALUES, "maxNodes": MAX_NODES, "maxDepth": MAX_DEPTH},
            "transform": list(TRANSFORMS) if self.transform_model is not None else False,
        }

    # --- retrieve -------------------------------------------------------------------------------
    def retrieve(self, params: Mapping | RetrieveRequest, progress: Progress | None = None) -> dict:
        """Run the pipeline for one request (see the module docstring); raises SearchError subclasses."""
        return self._retrieve(params, progress, as_json=False)  # type: ignore[return-value]

    def retrieve_json(self, params: Mapping | RetrieveRequest, progress: Progress | None = None) -> str:
        """`retrieve`, with the result as JSON text, made without building the hit dicts (for servers)."""
        return self._retrieve(params, progress, as_json=True)  # type: ignore[return-value]

    def retrieve_plain(self, params: dict) -> str | None:
        """`retrieve_json` of a plain sparse request by the lean path (plain.py); None for any other request."""
        return plain_answer(self, params) if self.lean else None

    def _retrieve(self, params: Mapping | RetrieveRequest, progress: Progress | None, as_json: bool) -> dict | str:
        t0 = time.perf_counter()
        check_budget("start")
        req = params if isinstance(params, RetrieveRequest) else load_request(dict(params))
        notes: list[str] = []
        if req.timeout_ms is None:
            return self._run(req, progress, as_json, t0, notes)
        outer = current_budget()
        if outer is not None and req.timeout_ms > outer.seconds * 1000:
            notes.append(f"timeoutMs {req.timeout_ms} is over the server's limits.requestTimeoutMs "
                         f"({round(outer.seconds * 1000)}), which holds")
        with request_budget(req.timeout_ms / 1000):
            return self._run(req, progress, as_json, t0, notes)

    def _run(self, req: RetrieveRequest, progress: Progress | None, as_json: bool, t0: float,
             notes: list[str]) -> dict | str:
        def unsupported(message: str) -> None:
            if req.strict:
                raise OptionUnsupported(message)
            notes.append(message)

        for name in req.unknown:
            unsupported(f'unknown parameter "{name}"')
        if req.cursor is not None:
            return self._next_page(req, t0, notes, as_json)
        mode = req.mode or self.default_mode()
        if mode not in self.modes:
            unsupported(f'mode "{mode}" is not offered (retrieve.modes: {", ".join(self.modes)}); served sparse')
            mode = "sparse"
        if req.modality != "text" or req.non_text_query:
            unsupported("only text queries are supported; non-text content was ignored")
        unit = req.unit or "document"
        if unit not in self.units:
            unsupported(f'unit "{unit}" is not offered (retrieve.units: {", ".join(self.units)}); served document')
            unit = "document"
        if req.level not in (None, 0):
            unsupported(f"level {req.level} is not offered (this corpus has one level, 0)")
        rerank = req.rerank if isinstance(req.rerank, dict) else None
        if rerank is not None:
            rr = self.reranker
            if rr is None:
                unsupported(f'rerank "{rerank["method"]}" is not offered (retrieve.rerankBuiltin is false)')
                rerank = None
            elif rerank["method"] != rr.method or (rerank["model"] and rerank["model"] != rr.model):
                unsupported(f'rerank {rerank["method"]}/{rerank["model"]} is not offered (only {rr.method}/{rr.model})')
                rerank = None
        transform = req.transform
        if transform is not None and self.transform_model is None:
            unsupported(f'transform "{transform}" needs a configured model (none is)')
            transform = None
        if req.mmr is not None and "dense" not in self.modes:
            unsupported("mmr needs the dense index, which this server does not keep")
        use_mmr = req.mmr is not None and "dense" in self.modes

        snap = self.corpus.snapshot(req.index_version)
        pred = load_filter(req.filter, snap.fields) if req.filter is not None else None

        # The funnel: candidateK >= topN >= k, each clamped to what the server allows.
        k_asked = req.k if req.k is not None else (self.max_k if req.token_budget else 10)
        k = min(k_asked, self.max_k)
        if k < k_asked and req.k is not None:
            notes.append(f"k clamped to retrieve.maxK={self.max_k}")
        cand = min(req.candidate_k if req.candidate_k is not None else max(k, 100), self.max_k)
        if cand < k:
            notes.append(f"candidateK raised to k={k}")
            cand = k
        top_n = None
        if rerank is not None:
            top_n = min(rerank["topN"] or cand, cand, self.rerank_max)
            if top_n < k:
                notes.append(f"k lowered to rerank.topN={top_n}")
                k = top_n
        total = 3 + (rerank is not None)

        queries, rewritten = [req.query], None
        if transform is not None:
            check_budget("transform")
            queries, rewritten = apply_transform(self.transform_model, transform, req.query)
            if not self._transform_deterministic():   # seed 002: "SHOULD note non-determinism in usage.notes"
                notes.append(f"the {transform} transform asked {getattr(self.transform_model, 'name', 'a model')}, "
                             "which may answer differently each time: seed cannot fix it")

        stages: dict[str, dict] = {}  # per candidate: its score at each stage
        # Recall sized by need: when no stage after recall reorders the list or drops hits from inside it
        # (one sparse list, no rerank, recency, session dedup or MMR; minScore only cuts a tail), the first
        # k + 1 candidates decide the page and whether a next one exists; a cursor recalls further as it pages.
        sized = (self.sized_recall and mode == "sparse" and len(queries) == 1 and rerank is None
                 and req.recency is None and req.session is None and not use_mmr)
        extend: Callable[..., tuple[list, int]] | None = None
        if sized and k + 1 < cand:
            ranked = self._recall(snap, queries, mode, unit, k + 1, pred, req.fusion, stages)
            if len(ranked) > k:
                # hits lie past the page (else recall is exhausted: nothing to page to); a cursor recalls further
                extend = RecallMore(self._recall, queries[0], mode, unit, pred, req.min_score)
        else:
            ranked = self._recall(snap, queries, mode, unit, cand, pred, req.fusion, stages)
        recalled = len(ranked)
        # usage.candidates: the distinct candidates the funnel carries on (after fusion, at most candidateK),
        # not the sum of the recall lists (hybrid recalls up to candidateK from each, then fuses to candidateK)
        candidates = recalled
        if progress is not None:
            progress(1, total, f"{mode} recall: {len(ranked)} candidates",
                     hit_dicts(snap, ranked[:k], unit, stages, req, mode, None))

        reranked = 0
        if rerank is not None:
            check_budget("rerank")
            head = ranked[:top_n]
            texts = [unit_text(snap, key, unit) for key, _ in head]
            scores = self.reranker.score(req.query, texts)
            for (key, _), s in zip(head, scores, strict=True):
                stages[key]["rerank"] = s
            ranked = sorted(((key, stages[key]["rerank"]) for key, _ in head), key=lambda t: (-t[1], t[0]))
            reranked = len(head)
            if progress is not None:
                progress(2, total, f"reranked {reranked}", hit_dicts(snap, ranked[:k], unit, stages, req, mode, True))

        if req.recency is not None:
            ranked = self._recency(snap, ranked, req.recency, stages, notes)
        if req.min_score is not None:
            ranked = [(key, s) for key, s in ranked if s >= req.min_score]
        if req.session is not None:
            seen = self.sessions.seen(req.session)
            ranked = [(key, s) for key, s in ranked if key not in seen]
        if use_mmr and req.mmr is not None and len(ranked) > 1:
            check_budget("mmr")
            ranked = self._mmr(snap, ranked, unit, req.mmr)

        check_budget("page")
        page = self._pack(snap, ranked, 0, k, unit, req.token_budget, notes)
        state = {"snap": snap.version, "ranked": ranked, "stages": stages, "unit": unit, "mode": mode,
                 "k": k, "token_budget": req.token_budget, "include_text": req.include_text,
                 "include_vector": req.include_vector, "session": req.session, "reranked": rerank is not None,
                 "offset": len(page), "as_json": as_json, "fields": req.fields, "extend": extend, "cand": cand,
                 "plain": mode == "sparse" and len(queries) == 1 and rerank is None and req.recency is None,
                 "recalled": recalled}
        result = self._result(snap, page, state, req, notes, t0, candidates=candidates, reranked=reranked,
                              effective={"k": k, "candidateK": cand, **({"topN": top_n} if top_n else {})})
        if rewritten is not None:
            if isinstance(result, str):
                result = result[:-1] + ',"rewrittenQuery":' + json.dumps(rewritten, ensure_ascii=False) + "}"
            else:
                result["rewrittenQuery"] = rewritten
        if progress is not None:
            progress(total, total, "done", None)
        return result

    # --- stages ---------------------------------------------------------------------------------
    def _allowed(self, snap: Snapshot, unit: str, pred: Callable | None,
                 folders: bool = True) -> tuple[set | None, dict | None]:
        """The ids a filter lets through (evaluated in bulk over the snapshot's columns: filters.py), and per folder
        the relative paths (for the dense indexes of documents; only when `folders`)."""
        if pred is None:
            return None, None
        if isinstance(pred, Filter):
            docs = pred.select(snap)
        else:   # a plain predicate on one document's metadata
            docs = {d.id for d in snap.docs.values() if pred(d.meta)}
        per_folder: dict[tuple[str, str], set] | None = None
        if folders and unit != "chunk":
            per_folder = {}
            for doc_id in docs:
                d = snap.docs[doc_id]
                per_folder.setdefault(d.folder_key, set()).add(d.rel)
        if unit == "chunk":
            return {cid for cid, c in snap.chunks.items() if c.doc_id in docs}, per_folder
        return docs, per_folder

    def _dense_list(self, snap: Snapshot, qvec: list[float], unit: str, limit: int, allowed: set | None,
                    per_folder: dict | None) -> list[tuple[str, float]]:
        if unit == "chunk":
            if snap.chunk_dense is None:
                return []
            return [(str(key), s) for key, s in snap.chunk_dense.search(qvec, limit, allowed, positive_only=False)]
        out: list[tuple[str, float]] = []
        for (title, name), view in snap.dense.items():
            rels = None if per_folder is None else per_folder.get((title, name), set())
            if rels is not None and not rels:
                continue
            for rel, s in view.search(qvec, limit, rels, positive_only=False):
                doc_id = f"{title}:{name}/{rel}"
                if doc_id in snap.docs:
                    out.append((doc_id, s))
        out.sort(key=lambda t: (-t[1], t[0]))
        return out[:limit]

    def _recall(self, snap: Snapshot, queries: list[str], mode: str, unit: str, cand: int, pred: Callable | None,
                fusion_opts: dict | None, stages: dict) -> list[tuple[str, float]]:
        allowed, per_folder = self._allowed(snap, unit, pred, folders=mode != "sparse")
        per_query = []
        embedder = self.corpus.embedder() if mode != "sparse" else None
        for q in queries:
            check_budget("recall")
            lists: dict[str, list] = {}
            if mode in ("sparse", "hybrid"):
                view = snap.chunk_sparse if unit == "chunk" else snap.sparse
                lists["sparse"] = view.search(q, cand, allowed) if view else []
            if mode in ("dense", "hybrid"):
                from ..slate.embed import l2_normalize

                assert embedder is not None   # dense and hybrid modes always have one
                qvec = l2_normalize(list(embedder.embed([q])[0]))
                lists["dense"] = self._dense_list(snap, qvec, unit, cand, allowed, per_folder)
                if mode == "hybrid":
                    self._fill_dense(snap, qvec, unit, lists, stages)
            for name, ranked in lists.items():
                for key, s in ranked:
                    st = stages.get(key)
                    if st is None:
                        stages[key] = {name: s}
                    else:
                        st[name] = s
            if mode == "hybrid":
                opts = fusion_opts or {"method": "rrf", "weights": None, "rrfK": None}
                if opts["method"] == "weighted":
                    fused = fusion.weighted(lists, opts["weights"])
                else:
                    fused = fusion.rrf(lists, opts["rrfK"] or fusion.RRF_K, opts["weights"])
                fused = fused[:cand]
                for key, s in fused:
                    stages[key]["fused"] = max(s, stages[key].get("fused", s))
                per_query.append(fused)
            else:
                per_query.append(lists[mode])
        if len(per_query) == 1:
            return per_query[0]
        merged = fusion.rrf({str(i): r for i, r in enumerate(per_query)})[:cand]
        for key, s in merged:
            stages[key]["fused"] = s
        return merged

    def _fill_dense(self, snap: Snapshot, qvec: list[float], unit: str, lists: dict, stages: dict) -> None:
        """Cosines for sparse candidates the dense list missed (so hybrid confidence sees both)."""
        have = {key for key, _ in lists.get("dense", [])}
        missing = [key for key, _ in lists.get("sparse", []) if key not in have]
        if not missing:
            return
        found: dict = {}
        if unit == "chunk":
            if snap.chunk_dense is not None:
                found = snap.chunk_dense.dot(qvec, missing)
        else:
            by_folder: dict = {}
            for key in missing:
                doc = snap.docs.get(key)
                if doc is not None:
                    by_folder.setdefault(doc.folder_key, []).append(doc)
            for fk, docs in by_folder.items():
                view = snap.dense.get(fk)
                if view is not None:
                    dots = view.dot(qvec, [d.rel for d in docs])
                    found.update({d.id: dots[d.rel] for d in docs if d.rel in dots})
        for key, cos in found.items():
            stages.setdefault(key, {})["cosine"] = cos

    def _recency(self, snap: Snapshot, ranked: list, opts: dict, stages: dict, notes: list) -> list:
        now = snap_time(snap)
        missing = 0
        out = []
        for key, s in ranked:
            doc = snap.doc_of(key)
            when = fusion.timestamp(doc.meta.get(opts["field"])) if doc is not None else None
            if when is None:
                missing += 1
                factor = 1.0
            else:
                factor = fusion.recency_factor((now - when) / 86400.0, opts["halfLifeDays"])
            stages[key]["recency"] = factor
            out.append((key, s * factor if s > 0 else s / max(factor, 1e-12)))
        if missing:
            notes.append(f'recency: {missing} candidate(s) have no usable "{opts["field"]}" and were not decayed')
        out.sort(key=lambda t: (-t[1], t[0]))
        return out

    def _mmr(self, snap: Snapshot, ranked: list, unit: str, lam: float) -> list:
        import numpy as np

        vecs = [unit_vector(snap, key, unit) for key, _ in ranked]
        dim = max((len(v) for v in vecs if v is not None), default=0)
        mat = np.zeros((len(vecs), dim))
        for i, v in enumerate(vecs):
            if v is not None and len(v) == dim:
                mat[i] = v
        return fusion.mmr(ranked, mat @ mat.T, lam)

    def _pack(self, snap: Snapshot, ranked: list, offset: int, k: int, unit: str, budget: int | None,
              notes: list) -> list:
        page = ranked[offset:offset + k]
        if budget is None:
            return page
        out: list = []
        used = 0
        for key, s in page:
            cost = estimate_tokens(unit_text(snap, key, unit))
            if used + cost > budget:
                if not out:
                    notes.append(f"tokenBudget {budget} is smaller than the best hit ({cost} tokens); it is returned alone")
                    out.append((key, s))
                break
            out.append((key, s))
            used += cost
        return out

    # --- results --------------------------------------------------------------------------------
    def _result(self, snap: Snapshot, page: list, state: dict, req: Any, notes: list, t0: float, *,
                candidates: int, reranked: int, effective: dict) -> dict | str:
        unit = state["unit"]
        if state.get("as_json"):
            hits_text, keys = hits_json(snap, page, unit, state["stages"], state)
        else:
            hits = hit_dicts(snap, page, unit, state["stages"], state, state["mode"], state["reranked"])
            keys = [h["id"] for h in hits]
        if state["session"] is not None:
            self.sessions.add(state["session"], keys)
        result: dict[str, Any] = {"indexVersion": snap.version}
        if state["offset"] < len(state["ranked"]):
            result["nextCursor"] = self.cursors.save(state)
        usage: dict[str, Any] = {"candidates": candidates, "reranked": reranked,
                                 "latencyMs": round((time.perf_counter() - t0) * 1000, 3),
                                 "returned": len(keys), "effective": effective, "mode": state["mode"], "unit": unit}
        if state["token_budget"] is not None:
            usage["tokens"] = sum(estimate_tokens(unit_text(snap, key, unit)) for key in keys)
        if notes:
            usage["notes"] = notes
        result["usage"] = usage
        if state.get("as_json"):
            return '{"hits":' + hits_text + "," + rest_json(result)[1:]
        return {"hits": hits, **result}

    def _next_page(self, req: RetrieveRequest, t0: float, notes: list, as_json: bool) -> dict | str:
        check_budget("page")
        state = self.cursors.load(req.cursor or "")
        if state is None:
            raise InvalidRequestParams(f'cursor "{req.cursor}" is unknown or expired')
        snap = self.corpus.snapshot(state["snap"])
        state = dict(state, as_json=as_json, fields=req.fields if req.fields is not None else state.get("fields"))
        ranked = state["ranked"]
        extend = state.get("extend")
        want = min(state["offset"] + state["k"] + 1, state["cand"])
        if extend is not None and state["recalled"] < want:
            # sized recall (see _retrieve): recall far enough for this page and the question of a next one
            stages = dict(state["stages"])
            ranked, found = extend(snap, want, stages)
            state.update(ranked=ranked, stages=stages, recalled=found,
                         extend=extend if found == want < state["cand"] else None)

        if state["session"] is not None:
            seen = self.sessions.seen(state["session"])
            ranked = ranked[: state["offset"]] + [(key, s) for key, s in ranked[state["offset"]:] if key not in seen]
            state["ranked"] = ranked
        page = self._pack(snap, ranked, state["offset"], state["k"], state["unit"], state["token_budget"], notes)
        state["offset"] += len(page)
        return self._result(snap, page, state, req, notes, t0, candidates=len(ranked), reranked=0,
                            effective={"k": state["k"]})


def snap_time(snap: Snapshot) -> float:
    """The time recency is measured from: when the snapshot was made (so results do not drift)."""
    return getattr(snap, "made_at", None) or time.time()
