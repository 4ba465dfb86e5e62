"""Bounded requests (issue 29, item 5): filters evaluated in bulk, and pings under load, old code against new.

    python benchmarks/server_bounds.py [--docs 3000] [--clients 8] [--pings 18] [--old-ref 9b6d87e] [--quick]

On one generated slate of --docs documents (each with `owner`, `year` and `tags` metatags):
1. Filter evaluation, in this process: for each filter of 1,000 nodes (the issue's 999 `ne` leaves in an `or`,
   and shapes where no leaf can be skipped), the old per-document predicate (`filters.py` at --old-ref, loaded
   as a module, run over every document as the old engine did) against the new `load_filter(...).select(snap)`
   (columns built once per snapshot, as the engine keeps them); both include checking the tree; the two must
   select the same documents. Median of --reps runs, milliseconds.
2. The server, old and new, each `ladr-lab serve --http` in its own process (4 workers; the old one is
   `git archive --old-ref` unpacked to a temp dir), and `--stdio`: one request's latency (median of --reps) for
   the issue's filter and for the costliest request the limits allow (a 1,000-node filter every leaf of which
   runs, k = candidateK = 1,000); then --clients threads sending the costliest request in a loop while a fresh
   client pings --pings times (1 s timeout, 0.4 s apart): how many pings were answered within 1 s, their
   median and worst latency, and the searches answered per second.
Prints a table; writes benchmarks/results/server_bounds.json (machine, commit, arguments, every number).
"""
from __future__ import annotations

import argparse
import http.client
import importlib.util
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
from io import BytesIO
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OLD_REF = "9b6d87e"   # main before issue 29 item 5: per-document filters, pings on the worker threads
JSON = {"Content-Type": "application/json"}
PING = json.dumps({"jsonrpc": "2.0", "id": "ping", "method": "ping"}).encode()
ENV = dict(os.environ, LITELLM_LOCAL_MODEL_COST_MAP="True")


def _slate(root: Path, n: int) -> Path:
    folder = root / "Big" / "docs"
    folder.mkdir(parents=True)
    tags = {}
    words = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda".split()
    for i in range(n):
        (folder / f"d{i:05d}.md").write_text(f"# Doc {i}\n\nresidual attention network {words[i % 11]} {i}",
                                             encoding="utf-8")
        tags[f"d{i:05d}.md"] = {"owner": f"u{i % 1500}", "year": 1990 + i % 30,
                                "tags": [words[i % 11], words[(i * 7) % 11]]}
    (folder / ".metatags.json").write_text(json.dumps(tags))
    return root / "Big"


def filters(n_leaves: int = 999) -> dict[str, dict]:
    """The filters measured, each of 1,000 nodes (`n_leaves` leaves under one combinator)."""
    def under(op: str, leaves: list) -> dict:
        return {op: leaves}

    return {
        "issue: or of 999 ne (path)": under("or", [{"field": "path", "op": "ne", "value": f"d{i:05d}.md"}
                                                    for i in range(n_leaves)]),
        "and of 999 ne (path)": under("and", [{"field": "path", "op": "ne", "value": f"x{i}.md"}
                                               for i in range(n_leaves)]),
        "or of 999 eq (owner)": under("or", [{"field": "owner", "op": "eq", "value": f"v{i}"}
                                              for i in range(n_leaves)]),
        "and of 999 gte (year)": under("and", [{"field": "year", "op": "gte", "value": 1000 + i}
                                                for i in range(n_leaves)]),
        "or of 999 contains (tags)": under("or", [{"field": "tags", "op": "contains", "value": f"q{i}"}
                                                   for i in range(n_leaves)]),
        "or of 999 in x 1 (owner)": under("or", [{"field": "owner", "op": "in", "value": [f"w{i}"]}
                                                  for i in range(n_leaves)]),
    }


def costliest() -> dict:
    """The costliest retrieve the limits allow: 1,000 filter nodes that all run, every document a candidate,
    maxK hits with their text."""
    return {"query": "residual attention network", "k": 1000, "candidateK": 1000,
            "filter": filters()["and of 999 ne (path)"]}


def _old_filters(ref: str):
    source = subprocess.run(["git", "show", f"{ref}:ladr_lab/search/filters.py"], cwd=ROOT, check=True,
                            capture_output=True, text=True).stdout
    path = Path(tempfile.mkdtemp()) / "_old_filters.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location("ladr_lab.search._old_filters", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def _median_ms(fn, reps: int) -> tuple[float, object]:
    out = None
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        out = fn()
        times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times), out


def measure_filters(slate: Path, a: argparse.Namespace) -> dict:
    """Part 1: old per-document evaluation against new bulk evaluation, same documents, same run."""
    from ladr_lab.search import EmbeddedEngine
    from ladr_lab.search.filters import load_filter
    from ladr_lab.slate import SlateStore

    old = _old_filters(a.old_ref)
    store = SlateStore()
    store.bind("Big", slate)
    engine = EmbeddedEngine.from_store(store, dense=False, chunks=False)
    snap = engine.corpus.sync()
    docs = list(snap.docs.values())
    out = {}
    for name, tree in filters().items():
        def before(tree=tree):
            pred = old.load_filter(tree, snap.fields)
            return {d.id for d in docs if pred(d.meta)}

        def after(tree=tree):
            return load_filter(tree, snap.fields).select(snap)

        load_filter(tree, snap.fields).select(snap)   # the columns of this field, built once per snapshot
        old_ms, old_ids = _median_ms(before, max(1, a.reps // 3) if not a.quick else 1)
        new_ms, new_ids = _median_ms(after, a.reps)
        assert old_ids == new_ids, name
        out[name] = {"old_ms": round(old_ms, 2), "new_ms": round(new_ms, 3), "speedup": round(old_ms / new_ms, 1),
                     "selected": len(new_ids)}
    return out


def _unpack(ref: str, into: Path) -> Path:
    data = subprocess.run(["git", "archive", ref, "ladr_lab"], cwd=ROOT, check=True, capture_output=True).stdout
    with tarfile.open(fileobj=BytesIO(data)) as tar:
        tar.extractall(into, filter="data")
    return into


def _serve(code: Path, slate: Path, *how: str) -> subprocess.Popen:
    env = dict(ENV, PYTHONPATH=str(code))
    return subprocess.Popen([sys.executable, "-m", "ladr_lab", "serve", "--slate", f"Big={slate}", "--no-dense",
                             "--no-chunks", *how], stdin=subprocess.PIPE if "--stdio" in how else subprocess.DEVNULL,
                            stdout=subprocess.PIPE if "--stdio" in how else subprocess.DEVNULL, stderr=subprocess.PIPE,
                            env=env, cwd=code)   # not ROOT: `-m` puts the working directory first on the path


def _address(proc: subprocess.Popen) -> tuple[str, int]:
    assert proc.stderr is not None
    for raw in proc.stderr:
        m = re.search(rb"listening on http://([\d.]+):(\d+)/", raw)
        if m:
            threading.Thread(target=lambda: [None for _ in proc.stderr], daemon=True).start()   # type: ignore[union-attr]
            return m.group(1).decode(), int(m.group(2))
    raise RuntimeError("the server did not start")


def _request(address: tuple[str, int], body: bytes, conn: http.client.HTTPConnection | None = None,
             timeout: float = 120.0) -> tuple[bytes, float]:
    t0 = time.perf_counter()
    own = conn is None
    conn = conn or http.client.HTTPConnection(*address, timeout=timeout)
    try:
        conn.request("POST", "/", body=body, headers=JSON)
        data = conn.getresponse().read()
    finally:
        if own:
            conn.close()
    return data, time.perf_counter() - t0


def _rpc(params: dict) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": 7, "method": "retrieve", "params": params}).encode()


def measure_http(code: Path, slate: Path, a: argparse.Namespace) -> dict:
    """Part 2 over HTTP: single-request latencies, then pings while clients send the costliest request."""
    proc = _serve(code, slate, "--http", "127.0.0.1:0", "--workers", "4")
    try:
        address = _address(proc)
        conn = http.client.HTTPConnection(*address, timeout=120)
        single = {}
        for name, params in (("issue filter (k=10)", {"query": "residual attention",
                                                     "filter": filters()["issue: or of 999 ne (path)"]}),
                             ("costliest (k=1000)", costliest())):
            times = []
            for i in range(a.reps + 1):   # the first, which builds the filter's columns, is not counted
                data, took = _request(address, _rpc(params), conn)
                assert data.startswith(b'{"jsonrpc":"2.0","id":7,"result":'), data[:200]
                if i:
                    times.append(took * 1000)
            single[name] = round(statistics.median(times), 1)
        conn.close()
        stop = threading.Event()
        answered = [0]
        body = _rpc(costliest())

        def client() -> None:
            c = http.client.HTTPConnection(*address, timeout=300)
            while not stop.is_set():
                data, _ = _request(address, body, c)
                if data.startswith(b'{"jsonrpc":"2.0","id":7,"result":'):
                    answered[0] += 1
            c.close()

        threads = [threading.Thread(target=client, daemon=True) for _ in range(a.clients)]
        for t in threads:
            t.start()
        time.sleep(1.0)
        t0 = time.perf_counter()
        n0 = answered[0]
        pings: list[float | None] = []
        for _ in range(a.pings):
            try:
                data, took = _request(address, PING, timeout=1.0)
                pings.append(took * 1000 if b'"result"' in data else None)
            except (TimeoutError, OSError):
                pings.append(None)
            time.sleep(0.4)
        seconds = time.perf_counter() - t0
        rate = (answered[0] - n0) / seconds
        stop.set()
        for t in threads:
            t.join(300)
        ok = [p for p in pings if p is not None and p < 1000]
        return {"single_ms": single, "load": {
            "clients": a.clients, "seconds": round(seconds, 1), "searches_per_s": round(rate, 1),
            "pings": len(pings), "pings_within_1s": len(ok),
            "ping_median_ms": round(statistics.median(ok), 1) if ok else None,
            "ping_max_ms": round(max(ok), 1) if len(ok) == len(pings) else None}}
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def measure_stdio(code: Path, slate: Path, a: argparse.Namespace) -> dict:
    """Part 2 over stdio: single-request latencies (a line in, a line out)."""
    proc = _serve(code, slate, "--stdio")
    assert proc.stdin is not None and proc.stdout is not None
    threading.Thread(target=lambda: [None for _ in proc.stderr], daemon=True).start()   # type: ignore[union-attr]
    out = {}
    try:
        for name, params in (("issue filter (k=10)", {"query": "residual attention",
                                                     "filter": filters()["issue: or of 999 ne (path)"]}),
                             ("costliest (k=1000)", costliest())):
            times = []
            for i in range(a.reps + 1):
                t0 = time.perf_counter()
                proc.stdin.write(_rpc(params) + b"\n")
                proc.stdin.flush()
                line = proc.stdout.readline()
                assert line.startswith(b'{"jsonrpc":"2.0","id":7,"result":'), line[:200]
                if i:
                    times.append((time.perf_counter() - t0) * 1000)
            out[name] = round(statistics.median(times), 1)
    finally:
        proc.stdin.close()
        proc.wait(timeout=60)
    return out


def _table(doc: dict) -> str:
    lines = ["filter evaluation (in process), ms:", f"  {'filter (1,000 nodes)':32} {'old':>10} {'new':>8} {'x':>7}"]
    for name, r in doc["filters"].items():
        lines.append(f"  {name:32} {r['old_ms']:10.1f} {r['new_ms']:8.2f} {r['speedup']:7.0f}")
    for face in ("http", "stdio"):
        lines.append(f"{face}, one request, ms (median):")
        for name in doc["old"][face] if face == "stdio" else doc["old"][face]["single_ms"]:
            old = doc["old"][face][name] if face == "stdio" else doc["old"][face]["single_ms"][name]
            new = doc["new"][face][name] if face == "stdio" else doc["new"][face]["single_ms"][name]
            lines.append(f"  {name:32} {old:10.1f} {new:8.1f}")
    lines.append(f"http, {doc['args']['clients']} clients sending the costliest request, fresh pings:")
    for kind in ("old", "new"):
        r = doc[kind]["http"]["load"]
        lines.append(f"  {kind}: {r['pings_within_1s']} of {r['pings']} pings within 1 s (median "
                     f"{r['ping_median_ms']} ms, max {r['ping_max_ms']} ms); {r['searches_per_s']} searches/s")
    return "\n".join(lines)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--docs", type=int, default=3000)
    p.add_argument("--clients", type=int, default=8)
    p.add_argument("--pings", type=int, default=18)
    p.add_argument("--reps", type=int, default=9)
    p.add_argument("--old-ref", default=OLD_REF)
    p.add_argument("--quick", action="store_true", help="3 repetitions, 6 pings")
    p.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "server_bounds.json"))
    a = p.parse_args()
    if a.quick:
        a.reps, a.pings = 3, 6
    with tempfile.TemporaryDirectory() as tmp:
        slate = _slate(Path(tmp), a.docs)
        doc: dict = {"filters": measure_filters(slate, a)}
        old = _unpack(a.old_ref, Path(tmp) / "old")
        for kind, code in (("old", old), ("new", ROOT)):
            doc[kind] = {"http": measure_http(code, slate, a), "stdio": measure_stdio(code, slate, a)}
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout
    dirty = bool(subprocess.run(["git", "status", "--porcelain", "ladr_lab"], cwd=ROOT, capture_output=True,
                                text=True).stdout.strip())
    doc = {"machine": {"python": platform.python_version(), "platform": platform.platform(), "cpus": os.cpu_count(),
                       "commit": commit.strip(), "dirty": dirty,
                       "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())},
           "args": {k: v for k, v in vars(a).items() if k != "out"}, **doc}
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps(doc, indent=2) + "\n")
    print(_table(doc))


if __name__ == "__main__":
    main()
