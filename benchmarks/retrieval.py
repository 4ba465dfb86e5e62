#!/usr/bin/env python
"""Retrieval benchmark: BEIR SciFact through the server and through the raw engines, side by side;
then similarTo on a 10,000-file folder, Folder.similar (the Python scan) against search.similar.

    python benchmarks/retrieval.py                        # st:all-MiniLM-L6-v2 if installed, else hashing
    python benchmarks/retrieval.py --embedder hashing     # fast: the offline embedder only
    python benchmarks/retrieval.py --skip-beir            # similarTo only
    python benchmarks/retrieval.py --data DIR             # another BEIR folder (corpus.jsonl, queries.jsonl, qrels/test.tsv)
    python benchmarks/retrieval.py --sparse-only          # raw tantivy against the server's sparse path only (~1 min)

`--sparse-only` (and the full run, as `sparse_compare`) measures, in turns in one run, raw tantivy against
the in-process Dispatcher and a stdio server at k=10 and k=100: queries/s in process and pipelined, and the
mean latency of one request at a time over stdio (the client's parse included), each with and without a
field selection (`fields: ["id", "score"]`); it prints the ratios against the raw engine and whether issue
18's targets are met (in process >= 0.77x raw at k=10; stdio latency <= 2x raw at k=10). Results:
benchmarks/results/retrieval-sparse.json (or `--out`).

SciFact (../shared/bench/beir/scifact) is written into a temporary slate, one file per document
(`docs/<id>.txt`: title, blank line, abstract). For each of sparse, dense and hybrid:

* raw engine: tantivy with the same schema and tokenizer as the server's sparse index; a numpy
  matrix of the same embedder's vectors (query embedded, one matrix product, top 100); RRF of
  the two lists (k=60), exactly as the server fuses. bm25s is measured too when installed.
* through the server: `ladr-lab serve --stdio` as a subprocess (sparse with `--no-dense`, dense
  and hybrid with the embedder), one request at a time (`RetrieveClient`, latency-bound) and
  pipelined (requests written from a thread while the answers are read: throughput), k=100, includeText false;
  and the protocol alone in process (`Dispatcher.handle_text`, no transport).

nDCG@10 and Recall@100 follow BEIR (pytrec_eval's definitions; qrels/test.tsv has CRLF endings);
build time is from nothing to the first answer (the server's includes starting Python and loading
the model); queries/s is over the 300 test queries. Results: benchmarks/results/retrieval.json
(retrieval-beir.json / retrieval-similar.json when one part is skipped; -<embedder> for a non-default one). Exits 0 with a message when the data is absent.
"""
from __future__ import annotations

import argparse
import datetime as _dt
import json
import math
import os
import platform
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / "benchmarks" / "results"
DATA = REPO.parent / "shared" / "bench" / "beir" / "scifact"
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

K_EVAL = 100
SIM_FILES = 10_000
SIM_QUERIES = ("quarterly revenue audit", "kernel tensor matrix", "slate ladder retrieval",
               "security policy latency", "snapshot checkpoint stream")
SIM_REPS = 60
TARGETS = {"sparse_ndcg": 0.686, "hybrid_ndcg_real_model": 0.71, "server_sparse_qps_ratio": 1 / 1.3,
           "similar_speedup": 10.0}


# --- BEIR ---------------------------------------------------------------------------------------------
def load_beir(path: Path):
    corpus = [json.loads(line) for line in open(path / "corpus.jsonl", encoding="utf-8")]
    queries = {}
    for line in open(path / "queries.jsonl", encoding="utf-8"):
        q = json.loads(line)
        queries[q["_id"]] = q["text"]
    qrels: dict[str, dict[str, int]] = {}
    with open(path / "qrels" / "test.tsv", encoding="utf-8", newline="") as fh:
        next(fh)
        for line in fh:
            line = line.strip()  # CRLF endings
            if line:
                qid, did, score = line.split("\t")
                qrels.setdefault(qid, {})[did] = int(score)
    return corpus, [(qid, queries[qid]) for qid in qrels], qrels


def ndcg_at(results: dict, qrels: dict, k: int = 10) -> float:
    total = 0.0
    for qid, rel in qrels.items():
        ranked = [d for d in results.get(qid, []) if d != qid][:k]
        dcg = sum(rel.get(d, 0) / math.log2(i + 2) for i, d in enumerate(ranked))
        ideal = sorted(rel.values(), reverse=True)[:k]
        idcg = sum(r / math.log2(i + 2) for i, r in enumerate(ideal))
        total += dcg / idcg if idcg else 0.0
    return total / len(qrels)


def recall_at(results: dict, qrels: dict, k: int = 100) -> float:
    total = 0.0
    for qid, rel in qrels.items():
        got = set(results.get(qid, [])[:k])
        pos = {d for d, r in rel.items() if r > 0}
        total += len(got & pos) / len(pos)
    return total / len(qrels)


def doc_text(d: dict) -> str:
    return (d.get("title", "").strip() + "\n\n" + d["text"]).strip()


def write_slate(root: Path, corpus: list) -> Path:
    docs = root / "docs"
    docs.mkdir(parents=True)
    for d in corpus:
        (docs / f"{d['_id']}.txt").write_text(doc_text(d), encoding="utf-8")
    return root


def row(name, results, qrels, build_s, qps, **extra) -> dict:
    out = {"engine": name, "ndcg@10": round(ndcg_at(results, qrels), 4), "recall@100": round(recall_at(results, qrels), 4),
           "build_s": None if build_s is None else round(build_s, 2), "qps": None if qps is None else round(qps, 1)}
    out.update(extra)
    return out


# --- raw engines ----------------------------------------------------------------------------------------
def raw_tantivy(corpus, queries):
    from ladr_lab.search.sparse import SparseIndex

    t = time.perf_counter()
    idx = SparseIndex()
    for d in corpus:
        idx.upsert(d["_id"], doc_text(d))
    idx.commit()
    view = idx.view()
    build = time.perf_counter() - t
    t = time.perf_counter()
    res = {qid: [str(k) for k, _ in view.search(q, K_EVAL)] for qid, q in queries}
    return res, build, len(queries) / (time.perf_counter() - t), view


def raw_bm25s(corpus, queries):
    try:
        import bm25s
        import Stemmer
    except ImportError:
        return None
    stem = Stemmer.Stemmer("english")
    t = time.perf_counter()
    tok = bm25s.tokenize([doc_text(d) for d in corpus], stopwords="en", stemmer=stem, show_progress=False)
    r = bm25s.BM25()
    r.index(tok, show_progress=False)
    build = time.perf_counter() - t
    ids = [d["_id"] for d in corpus]
    t = time.perf_counter()
    qt = bm25s.tokenize([q for _, q in queries], stopwords="en", stemmer=stem, show_progress=False)
    docs, _ = r.retrieve(qt, k=K_EVAL, show_progress=False, n_threads=1)
    qps_batch = len(queries) / (time.perf_counter() - t)
    res = {qid: [ids[i] for i in docs[j]] for j, (qid, _) in enumerate(queries)}
    return res, build, qps_batch


def raw_dense(corpus, queries, embedder):
    import numpy as np

    from ladr_lab.slate.embed import l2_normalize

    t = time.perf_counter()
    limit = getattr(embedder, "max_chars", None)
    texts = [doc_text(d)[:limit] if limit else doc_text(d) for d in corpus]
    vecs = [l2_normalize(list(v)) for v in embedder.embed(texts)]  # one call: the model batches by length
    mat = np.asarray(vecs, dtype=np.float64)
    build = time.perf_counter() - t
    ids = [d["_id"] for d in corpus]
    t = time.perf_counter()
    res = {}
    for qid, q in queries:
        qv = np.asarray(l2_normalize(list(embedder.embed([q])[0])))
        s = mat @ qv
        top = np.argpartition(-s, K_EVAL)[:K_EVAL]
        top = sorted(top, key=lambda i: (-s[i], ids[i]))
        res[qid] = [ids[i] for i in top]
    return res, build, len(queries) / (time.perf_counter() - t)


def rrf_merge(a: dict, b: dict, k: int = 60) -> dict:
    out = {}
    for qid in a:
        score: dict[str, float] = {}
        for lst in (a[qid], b.get(qid, [])):
            for rank, d in enumerate(lst, 1):
                score[d] = score.get(d, 0.0) + 1.0 / (k + rank)
        out[qid] = [d for d, _ in sorted(score.items(), key=lambda t: (-t[1], t[0]))][:K_EVAL]
    return out


# --- through the server -----------------------------------------------------------------------------------
def _doc_ids(hits):
    return [h["id"].rsplit("/", 1)[-1].removesuffix(".txt") for h in hits]


def start_server(slate_dir: Path, embedder_name: str | None, dense: bool):
    from ladr_lab.server import RetrieveClient

    cmd = [sys.executable, "-m", "ladr_lab", "serve", "--slate", f"SciFact={slate_dir}", "--stdio", "--no-chunks"]
    if not dense:
        cmd.append("--no-dense")
    if embedder_name:
        cmd += ["--embedder", embedder_name]
    env = dict(os.environ, PYTHONPATH=str(REPO), HF_HUB_OFFLINE="1", LITELLM_LOCAL_MODEL_COST_MAP="True")
    t = time.perf_counter()
    client = RetrieveClient.stdio(cmd, env=env)
    client.initialize()
    return client, time.perf_counter() - t


def pipelined_qps(client, queries, params: dict) -> tuple[float, dict]:
    """Write every request to the stdio server while reading every answer (client parse included): throughput.
    The writing runs in a thread: written first and read after, requests past a pipe's buffer (64 KiB) would
    deadlock, the server blocked writing answers nobody reads while the client is blocked writing to it."""
    import threading

    proc = client._transport._proc
    payload = "".join(json.dumps({"jsonrpc": "2.0", "id": i, "method": "retrieve", "params": {"query": q, **params}})
                      + "\n" for i, (_, q) in enumerate(queries)).encode()
    failed: list = []

    def write() -> None:
        try:
            proc.stdin.write(payload)
            proc.stdin.flush()
        except OSError as exc:
            failed.append(exc)

    t = time.perf_counter()
    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    got = {}
    while len(got) < len(queries):
        line = proc.stdout.readline()
        if not line:
            raise RuntimeError(f"the server closed its output after {len(got)} answers {failed}")
        msg = json.loads(line)
        got[msg["id"]] = msg
    writer.join()
    return len(queries) / (time.perf_counter() - t), got


def server_run(client, queries, mode: str):
    """(results, q/s one request at a time, q/s pipelined) for one mode through a running stdio server."""
    params = {"k": K_EVAL, "mode": mode, "includeText": False}
    for _, q in queries[:5]:
        client.retrieve(q, **params)  # warm-up
    t = time.perf_counter()
    res = {qid: _doc_ids(client.retrieve(q, **params)["hits"]) for qid, q in queries}
    qps_seq = len(queries) / (time.perf_counter() - t)
    qps_pipe, got = pipelined_qps(client, queries, params)
    assert all(_doc_ids(got[i]["result"]["hits"]) == res[qid] for i, (qid, _) in enumerate(queries))
    return res, qps_seq, qps_pipe


def in_process_dispatcher(slate_dir: Path):
    """A sparse-only engine and its JSON-RPC dispatcher in this process (the protocol without a transport)."""
    from ladr_lab.search import EmbeddedEngine
    from ladr_lab.server import Dispatcher
    from ladr_lab.slate import SlateStore

    store = SlateStore()
    store.bind("SciFact", slate_dir)
    engine = EmbeddedEngine.from_store(store, dense=False, chunks=False)
    engine.warm()
    return Dispatcher(engine)


def start_http(slate_dir: Path):
    """`ladr-lab serve --http 127.0.0.1:0 --no-dense` as a subprocess, and a client for it."""
    from ladr_lab.server import RetrieveClient

    cmd = [sys.executable, "-m", "ladr_lab", "serve", "--slate", f"SciFact={slate_dir}", "--http", "127.0.0.1:0",
           "--no-dense", "--no-chunks"]
    env = dict(os.environ, PYTHONPATH=str(REPO), LITELLM_LOCAL_MODEL_COST_MAP="True")
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            env=env, text=True)
    for line in proc.stderr:
        if "listening on " in line:
            return proc, RetrieveClient.http(line.split("listening on ", 1)[1].strip())
    raise SystemExit("the HTTP server did not start")


def in_turns(ways: dict, rounds: int) -> dict:
    """Seconds each way spent over `rounds` rounds, each way run once per round (after one warm-up run of
    each, so every cache is filled before anything is timed): load changes hit every column alike."""
    spent = dict.fromkeys(ways, 0.0)
    for fn in ways.values():
        fn()
    for _ in range(rounds):
        for name, fn in ways.items():
            t = time.perf_counter()
            fn()
            spent[name] += time.perf_counter() - t
    return spent


def sparse_speed(view, queries, stdio_client, dispatcher, http_client, rounds: int = 5) -> dict:
    """Queries/s of the raw engine and of the server's ways in, measured in turns (round after round,
    each way once per round) so that the machine's load changes hit every column alike."""
    lines = [json.dumps({"jsonrpc": "2.0", "id": i, "method": "retrieve",
                         "params": {"query": q, "k": K_EVAL, "mode": "sparse", "includeText": False}})
             for i, (_, q) in enumerate(queries)]

    def raw():
        for _, q in queries:
            view.search(q, K_EVAL)

    def in_proc():
        for line in lines:
            dispatcher.handle_text(line)

    def http():
        for _, q in queries:
            http_client.retrieve(q, k=K_EVAL, mode="sparse", include_text=False)

    ways = {"raw": raw, "stdio_pipelined": lambda: pipelined_qps(stdio_client, queries, {"k": K_EVAL, "mode": "sparse", "includeText": False}),
            "stdio_pipelined_k10": lambda: pipelined_qps(stdio_client, queries, {"k": 10, "mode": "sparse", "includeText": False}),
            "in_process": in_proc, "http": http}
    spent = in_turns(ways, rounds)
    return {name: round(rounds * len(queries) / sec, 1) for name, sec in spent.items()}


LEAN = ["id", "score"]   # the field selection measured against the full hit


def sparse_compare(view, queries, stdio_client, dispatcher, rounds: int = 5) -> dict:
    """The raw engine and the server side by side, in turns (each way once per round, so load changes hit
    every column alike): queries/s in process and pipelined over stdio, and the mean latency of one request
    at a time over stdio (the client's parse included), at k=10 and k=100, with and without `fields`; and a
    ping's round trip over the same pipe (the transport's floor)."""
    def lines(k, fields=None):
        extra = {"fields": fields} if fields is not None else {}
        return [json.dumps({"jsonrpc": "2.0", "id": i, "method": "retrieve",
                            "params": {"query": q, "k": k, "mode": "sparse", "includeText": False, **extra}})
                for i, (_, q) in enumerate(queries)]

    def raw(k):
        return lambda: [view.search(q, k) for _, q in queries]

    def in_proc(k, fields=None):
        msgs = lines(k, fields)
        return lambda: [dispatcher.handle_text(m) for m in msgs]

    def one_at_a_time(k, fields=None):
        extra = {"fields": fields} if fields is not None else {}
        return lambda: [stdio_client.retrieve(q, k=k, mode="sparse", include_text=False, **extra) for _, q in queries]

    def piped(k, fields=None):
        extra = {"fields": fields} if fields is not None else {}
        return lambda: pipelined_qps(stdio_client, queries, {"k": k, "mode": "sparse", "includeText": False, **extra})

    # the transport's own floor: a ping's round trip over the same stdio pipe (no search, no hits)
    ways = {"stdio_ping": lambda: [stdio_client.call("ping") for _ in queries]}
    for k in (10, 100):
        ways[f"raw_k{k}"] = raw(k)
        ways[f"in_process_k{k}"] = in_proc(k)
        ways[f"in_process_k{k}_fields"] = in_proc(k, LEAN)
        ways[f"stdio_one_k{k}"] = one_at_a_time(k)
        ways[f"stdio_one_k{k}_fields"] = one_at_a_time(k, LEAN)
        ways[f"stdio_pipelined_k{k}"] = piped(k)
        ways[f"stdio_pipelined_k{k}_fields"] = piped(k, LEAN)
    spent = in_turns(ways, rounds)
    n = rounds * len(queries)
    qps = {name: round(n / sec, 1) for name, sec in spent.items()}
    ms = {name: round(1000 * sec / n, 4) for name, sec in spent.items()}
    ratios = {}
    for k in (10, 100):
        raw_qps = qps[f"raw_k{k}"]
        for name in ways:
            if name.endswith(f"k{k}") or name.endswith(f"k{k}_fields"):
                if name.startswith(("in_process", "stdio_pipelined")):
                    ratios[f"{name} q/s / raw"] = round(qps[name] / raw_qps, 3)
                elif name.startswith("stdio_one"):
                    ratios[f"{name} latency / raw"] = round(ms[name] / ms[f"raw_k{k}"], 3)
    ratios["stdio_ping latency / raw_k10"] = round(ms["stdio_ping"] / ms["raw_k10"], 3)
    return {"qps": qps, "mean_ms": ms, "ratios": ratios, "rounds": rounds, "queries": len(queries),
            "lean_fields": LEAN}


def sparse_targets(cmp: dict) -> dict:
    """Issue 18 item 11's targets against one `sparse_compare`: in process >= 0.77x raw q/s at k=10; over stdio
    one request at a time (client parse included) <= 2x the raw engine's latency at k=10."""
    r = cmp["ratios"]
    inproc = r["in_process_k10 q/s / raw"]
    lat = min(r["stdio_one_k10 latency / raw"], r["stdio_one_k10_fields latency / raw"])
    return {"in-process q/s >= 0.77x raw at k=10": f"{'MET' if inproc >= 0.77 else 'NOT MET'} ({inproc:.2f}x)",
            "stdio latency <= 2x raw at k=10 (best of with/without fields)":
                f"{'MET' if lat <= 2.0 else 'NOT MET'} ({lat:.2f}x)"}


def print_compare(cmp: dict) -> None:
    print(f"\nindexed in process in {cmp['in_process_index_s']} s; {cmp['sanitized_documents']} of "
          f"{cmp['documents']} documents sanitized")
    print(f"\nsparse, raw tantivy against the server, in turns ({cmp['rounds']} rounds x {cmp['queries']} queries; "
          f"_fields = fields {cmp['lean_fields']}):")
    print(f"{'way':<30} | {'q/s':>9} | {'mean ms':>9}")
    for name, q in cmp["qps"].items():
        print(f"{name:<30} | {q:>9} | {cmp['mean_ms'][name]:>9}")
    print("ratios:")
    for name, v in cmp["ratios"].items():
        print(f"  {name:<42} {v}")


def sparse_only(path: Path, n_queries: int | None, max_docs: int | None, rounds: int) -> dict:
    """Only the sparse comparison (raw tantivy, the in-process Dispatcher, a stdio server): a couple of minutes."""
    corpus, queries, _qrels = load_beir(path)
    corpus = corpus[:max_docs] if max_docs else corpus
    queries = queries[:n_queries] if n_queries else queries
    print(f"SciFact: {len(corpus)} documents, {len(queries)} queries; sparse only", flush=True)
    tmp = Path(tempfile.mkdtemp(prefix="ladr-retrieval-bench-"))
    try:
        slate_dir = write_slate(tmp / "scifact", corpus)
        _res, _build, _qps, view = raw_tantivy(corpus, queries)
        client, _ = start_server(slate_dir, None, dense=False)
        try:
            t0 = time.perf_counter()
            dispatcher = in_process_dispatcher(slate_dir)   # indexing (sanitizing included) from nothing
            index_s = time.perf_counter() - t0
            docs = dispatcher.engine.corpus.sync().docs.values()
            sanitized = sum(1 for d in docs if d.trust.get("sanitized"))
            cmp = sparse_compare(view, queries, client, dispatcher, rounds)
        finally:
            client.close()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return {"documents": len(corpus), "in_process_index_s": round(index_s, 3), "sanitized_documents": sanitized,
            **cmp}


def beir(path: Path, embedder_name: str | None) -> dict:
    from ladr_lab.slate import get_embedder

    corpus, queries, qrels = load_beir(path)
    print(f"SciFact: {len(corpus)} documents, {len(queries)} test queries; embedder {embedder_name or 'hashing'}")
    rows = []
    tmp = Path(tempfile.mkdtemp(prefix="ladr-retrieval-bench-"))
    try:
        slate_dir = write_slate(tmp / "scifact", corpus)
        print("raw tantivy ...", flush=True)
        sparse_raw, b, q, view = raw_tantivy(corpus, queries)
        rows.append(row("raw tantivy (sparse)", sparse_raw, qrels, b, q))
        got = raw_bm25s(corpus, queries)
        if got is not None:
            r, b, q = got
            rows.append(row("raw bm25s (sparse, batch)", r, qrels, b, q))
        print("raw dense ...", flush=True)
        embedder = get_embedder(embedder_name)
        dense_raw, b, q = raw_dense(corpus, queries, embedder)
        rows.append(row("raw numpy (dense)", dense_raw, qrels, b, q))
        rows.append(row("raw RRF (hybrid)", rrf_merge(sparse_raw, dense_raw), qrels, None, None))
        del embedder
        print("server sparse ...", flush=True)
        client, b = start_server(slate_dir, embedder_name, dense=False)
        res, qs, qp = server_run(client, queries, "sparse")
        rows.append(row("server sparse (stdio)", res, qrels, b, qs, qps_pipelined=round(qp, 1)))
        print("sparse speed, in turns ...", flush=True)
        http_proc, http_client = start_http(slate_dir)
        try:
            dispatcher = in_process_dispatcher(slate_dir)
            speed = sparse_speed(view, queries, client, dispatcher, http_client)
            compare = sparse_compare(view, queries, client, dispatcher)
        finally:
            http_client.close()
            http_proc.terminate()
            http_proc.wait()
            http_proc.stderr.close()
            client.close()
        print("server dense + hybrid ...", flush=True)
        client, b = start_server(slate_dir, embedder_name, dense=True)
        for mode in ("dense", "hybrid"):
            res, qs, qp = server_run(client, queries, mode)
            rows.append(row(f"server {mode} (stdio)", res, qrels, b, qs, qps_pipelined=round(qp, 1),
                            build_note="one server for dense and hybrid: its build indexes both"))
        client.close()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return {"rows": rows, "documents": len(corpus), "queries": len(queries), "sparse_speed": speed,
            "sparse_compare": compare}


# --- similarTo ----------------------------------------------------------------------------------------
WORDS = ("slate ladder retrieval index metatag folder round model prompt answer budget gate node step "
         "trace cache scan write atomic lock embedding vector glob subfolder request schema field "
         "alpha beta gamma delta epsilon theta lambda sigma omega kernel tensor matrix integral "
         "derivative theorem lemma proof report summary quarterly revenue security policy audit "
         "latency throughput replica shard queue stream batch window checkpoint snapshot").split()


def make_folder(root: Path, n: int) -> None:
    rng = random.Random(7 + n)
    paras = [" ".join(rng.choices(WORDS, k=rng.randint(28, 90))).capitalize() + "." for _ in range(512)]
    docs = root / "docs"
    for sub in ("notes", "reports", "archive", "research"):
        (docs / sub).mkdir(parents=True)
    subs = ("notes", "reports", "archive", "research")
    for i in range(n):
        rel = f"{subs[i % 4]}/note-{i:06d}.md" if i < n // 4 else f"doc-{i:06d}.md"
        text = f"# Document {i}\n\n{paras[i % 512]} {paras[(i * 7 + 3) % 512]}"
        (docs / rel).write_bytes(text.encode()[: rng.randint(200, 600)])


def similar_bench(n: int) -> dict:
    from ladr_lab.search import similar
    from ladr_lab.search.similar import folder_vectors
    from ladr_lab.slate import SlateStore

    tmp = Path(tempfile.mkdtemp(prefix="ladr-similar-bench-"))
    try:
        make_folder(tmp, n)
        store = SlateStore()
        store.bind("K", tmp)
        folder = store.slate("K").folder("docs")
        t = time.perf_counter()
        folder.similar(SIM_QUERIES[0], 5)
        cold_scan = time.perf_counter() - t
        t = time.perf_counter()
        similar(folder, SIM_QUERIES[0], 5)
        cold_index = time.perf_counter() - t
        for q in SIM_QUERIES:
            assert folder.similar(q, 5) == similar(folder, q, 5), q
        scan, index = [], []
        for i in range(SIM_REPS):  # interleaved, so machine noise hits both
            q = SIM_QUERIES[i % len(SIM_QUERIES)]
            t = time.perf_counter()
            folder.similar(q, 5)
            scan.append(time.perf_counter() - t)
            t = time.perf_counter()
            similar(folder, q, 5)
            index.append(time.perf_counter() - t)
        after_write, after_write_scan = [], []
        for i in range(10):  # a write through the store, then one similarTo round: each side its own write
            folder.write_text(f"written-{i}.md", f"quarterly revenue audit note {i}")
            t = time.perf_counter()
            similar(folder, "quarterly revenue audit", 5)
            after_write.append(time.perf_counter() - t)
            folder.write_text(f"also-written-{i}.md", f"quarterly revenue audit memo {i}")
            t = time.perf_counter()
            want = folder.similar("quarterly revenue audit", 5)
            after_write_scan.append(time.perf_counter() - t)
            assert similar(folder, "quarterly revenue audit", 5) == want
        ms = lambda xs: round(statistics.median(xs) * 1000, 3)  # noqa: E731
        return {"files": n, "cold_scan_s": round(cold_scan, 3), "cold_index_s": round(cold_index, 3),
                "warm_scan_median_ms": ms(scan), "warm_index_median_ms": ms(index),
                "warm_speedup": round(statistics.median(scan) / statistics.median(index), 1),
                "after_write_index_median_ms": ms(after_write), "after_write_scan_median_ms": ms(after_write_scan),
                "relists": folder_vectors(folder).syncs, "embedder": "hashing (the store's default)",
                "file_stats_native": callable(getattr(folder, "file_stats", None))}
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


# --- main -------------------------------------------------------------------------------------------------
def default_embedder() -> str | None:
    try:
        import sentence_transformers  # noqa: F401

        from ladr_lab.slate.embed import packaged_model_path
        if packaged_model_path("all-MiniLM-L6-v2"):
            return "st:all-MiniLM-L6-v2"
    except ImportError:
        pass
    return None


def print_table(rows: list[dict]) -> None:
    cols = ["engine", "ndcg@10", "recall@100", "build_s", "qps", "qps_pipelined"]
    print("\n" + " | ".join(f"{c:>14}" if i else f"{c:<26}" for i, c in enumerate(cols)))
    for r in rows:
        print(" | ".join((f"{str(r.get(c, '')):<26}" if i == 0 else f"{'' if r.get(c) is None else r.get(c):>14}")
                         for i, c in enumerate(cols)))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--data", type=Path, default=DATA)
    p.add_argument("--embedder", default=None, help="hashing, st:MODEL, ... (default: MiniLM if installed)")
    p.add_argument("--skip-beir", action="store_true")
    p.add_argument("--skip-similar", action="store_true")
    p.add_argument("--similar-files", type=int, default=SIM_FILES)
    p.add_argument("--sparse-only", action="store_true",
                   help="only raw tantivy against the server's sparse path (in process, stdio), a couple of minutes")
    p.add_argument("--queries", type=int, default=None, help="with --sparse-only: the first N test queries")
    p.add_argument("--max-docs", type=int, default=None, help="with --sparse-only: the first N documents")
    p.add_argument("--rounds", type=int, default=5, help="with --sparse-only: rounds of turns")
    p.add_argument("--out", type=Path, default=None, help="where the JSON goes (default: benchmarks/results/)")
    a = p.parse_args(argv)
    if a.sparse_only:
        return _sparse_only_main(a)
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    embedder = a.embedder if a.embedder not in (None, "hashing") else (None if a.embedder == "hashing" else default_embedder())
    out: dict = {"machine": {"python": platform.python_version(), "platform": platform.platform(), "cpus": os.cpu_count(),
                             "when": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
                             "commit": _git("rev-parse", "--short", "HEAD"),
                             "dirty": bool(_git("status", "--porcelain", "ladr_lab"))},
                 "embedder": (embedder or "hashing") if not a.skip_beir else None, "targets": TARGETS}
    if not a.skip_beir:
        if not (a.data / "corpus.jsonl").exists():
            print(f"BEIR data not found at {a.data}: skipping the SciFact part "
                  "(put corpus.jsonl, queries.jsonl and qrels/test.tsv there)")
        else:
            out["beir"] = beir(a.data, embedder)
            print_table(out["beir"]["rows"])
            print("\nsparse queries/s, measured in turns (k=100 unless said):",
                  ", ".join(f"{k} {v}" for k, v in out["beir"]["sparse_speed"].items()))
            print_compare(out["beir"]["sparse_compare"])
    if not a.skip_similar:
        print(f"\nsimilarTo on {a.similar_files:,} files ...", flush=True)
        out["similar"] = similar_bench(a.similar_files)
        s = out["similar"]
        print(f"  Folder.similar (scan): cold {s['cold_scan_s']} s, warm median {s['warm_scan_median_ms']} ms")
        print(f"  search.similar (index): cold {s['cold_index_s']} s, warm median {s['warm_index_median_ms']} ms "
              f"-> {s['warm_speedup']}x")
        print(f"  right after a write: index {s['after_write_index_median_ms']} ms, "
              f"scan {s['after_write_scan_median_ms']} ms")
    out["verdicts"] = verdicts(out)
    for name, v in out["verdicts"].items():
        print(f"  {name}: {v}")
    RESULTS.mkdir(parents=True, exist_ok=True)
    parts = [] if not (a.skip_beir or a.skip_similar) else ["similar" if a.skip_beir else "beir"]
    if "beir" in out and embedder != default_embedder():
        parts.append((embedder or "hashing").replace(":", "-").replace("/", "-"))
    name = "-".join(["retrieval", *parts]) + ".json"
    path = a.out or RESULTS / name
    path.write_text(json.dumps(out, indent=2) + "\n")
    print(f"\nsaved {path}")
    return 0


def _machine() -> dict:
    return {"python": platform.python_version(), "platform": platform.platform(), "cpus": os.cpu_count(),
            "when": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
            "commit": _git("rev-parse", "--short", "HEAD"), "dirty": bool(_git("status", "--porcelain", "ladr_lab")),
            "load": os.getloadavg()}


def _sparse_only_main(a) -> int:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    out: dict = {"machine": _machine(), "targets": {"in_process_k10_qps_ratio": 0.77, "stdio_k10_latency_ratio": 2.0}}
    if not (a.data / "corpus.jsonl").exists():
        print(f"BEIR data not found at {a.data}: nothing measured")
    else:
        out["sparse_compare"] = sparse_only(a.data, a.queries, a.max_docs, a.rounds)
        print_compare(out["sparse_compare"])
        out["verdicts"] = sparse_targets(out["sparse_compare"])
        for name, v in out["verdicts"].items():
            print(f"  {name}: {v}")
    path = a.out or RESULTS / "retrieval-sparse.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(out, indent=2) + "\n")
    print(f"\nsaved {path}")
    return 0


def verdicts(out: dict) -> dict:
    v = {}
    rows = {r["engine"]: r for r in out.get("beir", {}).get("rows", [])}
    if rows:
        s = rows.get("server sparse (stdio)")
        v["sparse nDCG@10 >= 0.686"] = "PASS" if s and s["ndcg@10"] >= TARGETS["sparse_ndcg"] else "FAIL"
        h = rows.get("server hybrid (stdio)")
        real = out["embedder"] not in (None, "hashing")
        v["hybrid nDCG@10 >= 0.71 (real model)"] = ("NOT MEASURED (no real model)" if not real else
                                                    "PASS" if h and h["ndcg@10"] >= TARGETS["hybrid_ndcg_real_model"]
                                                    else "FAIL")
        speed = out["beir"].get("sparse_speed") or {}
        for way in ("stdio_pipelined", "stdio_pipelined_k10", "in_process", "http"):
            if speed.get(way) and speed.get("raw"):
                ratio = speed[way] / speed["raw"]
                v[f"server sparse q/s >= raw/1.3 ({way})"] = \
                    f"{'PASS' if ratio >= TARGETS['server_sparse_qps_ratio'] else 'FAIL'} ({ratio:.2f})"
    if out.get("beir", {}).get("sparse_compare"):
        v.update(sparse_targets(out["beir"]["sparse_compare"]))
    if "similar" in out:
        sp = out["similar"]["warm_speedup"]
        v["warm similarTo >= 10x Folder.similar"] = f"{'PASS' if sp >= TARGETS['similar_speedup'] else 'FAIL'} ({sp}x)"
    return v


def _git(*args: str) -> str:
    try:
        return subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return ""


if __name__ == "__main__":
    sys.exit(main())
