"""Experiment benchmark: 200 input rows × 2 variants against an OpenAI-compatible server on 127.0.0.1 that answers
every chat completion after 0.5 s, on the local thread pool and on Ray, beside the ideal
`cells × calls × latency / concurrency`; then a schema-only variant re-judged from the same recorded rows.

    python benchmarks/experiments.py [--rows 200] [--latency 0.5] [--quick] [--no-ray] [--ray-address ADDRESS]
                                     [--out FILE.json]

The ladder is one retrieve step over a two-file slate; the server always answers in prose, so every cell is one
model call (`openai/fake` through litellm, `api_base` as a model option). The two variants differ in their system
prompt, so both call the model. Measured, each in a fresh output folder:
- local, concurrency 8 (the thread pool);
- Ray, 8 workers and 32 workers (a local Ray started first; its start is timed apart, as a notebook pays it once),
  each twice: `cold`, on worker processes Ray has yet to start (each imports ladr_lab and litellm), then `warm`,
  the same run again in a new folder on the workers now running;
- schema-only: a third variant, the first with a stricter requestMatch, added to the local run's folder: the
  first variant's 200 cells are kept (resumed) and the new one's are re-judged from their traces, with no model
  call (the server's hits are counted) — target under 1 s.
Targets: each run but the cold ones within 1.3× of its ideal. `--quick` runs 16 rows and skips Ray with 32 workers.

Writes benchmarks/results/experiments.json.

    python benchmarks/experiments.py --vs-promptfoo [--reps 3] [--promptfoo CMD]

Side by side with promptfoo (0.121, from npm), each cold (a new process) `--reps` times, median: one matrix both
express, 2 prompt variants × 30 inputs × 3 assertions (contains, a JSON-schema check, a code check: `python:` for
ladr_lab, `javascript` for promptfoo), against a fake OpenAI-compatible server on 127.0.0.1 answering after
`--latency` s, concurrency 10 in both (ideal 60 × 0.5 / 10 = 3.0 s). ladr_lab is `python -m ladr_lab eval` in a
subprocess, importing ladr_lab from `LADR_BENCH_PACKAGE` (a folder; default this checkout), so the same script
measures an older tree: `LADR_BENCH_PACKAGE=/work/wt-old python benchmarks/experiments.py --vs-promptfoo`.
promptfoo is `$PROMPTFOO_CMD` or `npx --no-install promptfoo` (skipped, with a line saying so, when its
`--version` fails), with telemetry, update checks and sharing off, `--no-cache`, `-j 10`. Both must agree on
every cell's pass/fail. Writes benchmarks/results/experiments-vs-promptfoo.json.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = Path(os.environ.get("LADR_BENCH_PACKAGE") or ROOT)    # the tree whose ladr_lab is measured
sys.path.insert(0, str(PACKAGE))
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

LADDER = """\
name: bench
slates:
  - title: Docs
    path: {slate}
    folders:
      - name: docs
steps:
  - id: answer
    fields:
      - {{ name: Question, type: text, from: input.context }}
    retrieve:
      to: {{ slate: Docs, folder: docs }}
      as: Retrieved
      maxRounds: 1
      requestMatch: {match}
    systemPrompt: {prompt}
"""
MATCH = ('{ type: object, required: [request], properties: { request: { type: object, properties: '
         '{ files: { type: array, items: { type: string } } } } } }')
STRICT = ('{ type: object, required: [request], additionalProperties: false, properties: { request: { type: object, '
          'minProperties: 1, additionalProperties: false, properties: { files: { type: array, maxItems: 2, '
          'items: { type: string } } } } } }')


class _Server(BaseHTTPRequestHandler):
    """Chat completions after a fixed latency, always a prose final answer; counts its hits."""

    latency = 0.5
    hits = 0
    lock = threading.Lock()
    protocol_version = "HTTP/1.1"

    def do_POST(self):  # noqa: N802 (http.server's name)
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        with _Server.lock:
            _Server.hits += 1
        time.sleep(_Server.latency)
        body = json.dumps({"id": "c", "object": "chat.completion", "created": 1, "model": "fake",
                           "choices": [{"index": 0, "finish_reason": "stop",
                                        "message": {"role": "assistant",
                                                    "content": "The answer is in docs/a.md: it says so."}}],
                           "usage": {"prompt_tokens": 20, "completion_tokens": 9, "total_tokens": 29}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *a):
        pass


class _ThreadingServer(ThreadingHTTPServer):
    request_queue_size = 256     # 32 workers' connections at once, and their reconnects
    daemon_threads = True


def serve(latency: float) -> tuple[str, ThreadingHTTPServer]:
    """Start the fake server; its base URL and the server."""
    _Server.latency = latency
    server = _ThreadingServer(("127.0.0.1", 0), _Server)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{server.server_address[1]}/v1", server


def ladders(slate: Path) -> dict:
    """The two model-calling variants and the schema-only one (the first with a stricter requestMatch)."""
    from ladr_lab.config.loader import load_ladder_text

    make = lambda match, prompt: load_ladder_text(LADDER.format(slate=slate, match=match, prompt=prompt))  # noqa: E731
    return {"plain": make(MATCH, "Answer the Question."),
            "cite": make(MATCH, "Answer the Question, citing the file."),
            "strict": make(STRICT, "Answer the Question.")}


def measure(name: str, variants: dict, rows: list, url: str, out: Path, **kw) -> dict:
    """One experiment run: wall time, cells, server hits, per-cell seconds and model latency."""
    from ladr_lab.experiments import experiment

    hits0 = _Server.hits
    t0 = time.perf_counter()
    exp = experiment(variants, rows, model="openai/fake", model_options={"api_base": url, "api_key": "none"},
                     out=out, progress=False, cache=False, **kw)
    wall = time.perf_counter() - t0
    df = exp.results
    statuses = df["status"].value_counts().to_dict()
    calls = int(df["llm_calls"].sum())
    seconds = [float(s) for s in df["seconds"]]
    latencies = [float(x) for x in (r.get("latency", 0.0) or 0.0 for r in exp.rows)]
    return {"run": name, "cells": len(df), "statuses": statuses, "calls": calls, "server_hits": _Server.hits - hits0,
            "wall_s": round(wall, 3), "cell_seconds_median": round(statistics.median(seconds), 3) if seconds else None,
            "model_latency_median": round(statistics.median(latencies), 3) if latencies else None}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=200)
    ap.add_argument("--latency", type=float, default=0.5, help="the server's seconds per answer")
    ap.add_argument("--quick", action="store_true", help="16 rows, no Ray with 32 workers")
    ap.add_argument("--no-ray", action="store_true", help="the local pool and the schema-only variant only")
    ap.add_argument("--ray-address", metavar="ADDRESS", help="use the Ray already running there (`ray start --head`, "
                                                             "then e.g. auto) instead of starting a local one")
    ap.add_argument("--out", type=Path, help="results JSON (default benchmarks/results/experiments.json)")
    ap.add_argument("--vs-promptfoo", action="store_true", help="the same matrix, cold, beside promptfoo")
    ap.add_argument("--reps", type=int, default=3, help="--vs-promptfoo: cold runs of each tool (median)")
    ap.add_argument("--promptfoo", default=os.environ.get("PROMPTFOO_CMD") or "npx --no-install promptfoo",
                    help="--vs-promptfoo: the promptfoo command (default $PROMPTFOO_CMD or npx)")
    a = ap.parse_args()
    if a.vs_promptfoo:
        from vs_promptfoo import vs_promptfoo  # benchmarks/vs_promptfoo.py

        vs_promptfoo(a)
        return
    n = 16 if a.quick else a.rows
    os.environ.setdefault("OPENAI_API_KEY", "none")
    url, server = serve(a.latency)
    work = Path(tempfile.mkdtemp(prefix="ladr-bench-exp-"))
    slate = work / "slate"
    (slate / "docs").mkdir(parents=True)
    (slate / "docs" / "a.md").write_text("Alpha: the answer is here.\n")
    (slate / "docs" / "b.md").write_text("Beta: nothing here.\n")
    lads = ladders(slate)
    rows = [{"context": f"question {i}?"} for i in range(n)]
    two = {"plain": lads["plain"], "cite": lads["cite"]}
    runs = []
    runs.append({**measure("local, concurrency 8", two, rows, url, work / "local", concurrency=8), "concurrency": 8})
    ray_start = None
    ray_note = None
    if not a.no_ray:
        try:
            import ray
        except ImportError:
            ray_note = 'Ray is not installed (pip install "ladr_lab[ray]"): its runs were skipped'
        else:
            import logging
            t0 = time.perf_counter()
            if a.ray_address:      # a Ray already running: connecting to it is timed as the start
                ray.init(address=a.ray_address, log_to_driver=False, logging_level=logging.WARNING)
            else:
                ray.init(include_dashboard=False, log_to_driver=False, logging_level=logging.WARNING)
            ray_start = round(time.perf_counter() - t0, 3)
            for workers in (8,) if a.quick else (8, 32):
                # first on workers Ray has yet to start (each imports ladr_lab and litellm), then again on them
                for phase in ("cold", "warm"):
                    runs.append({**measure(f"ray, {workers} workers, {phase}", two, rows, url,
                                           work / f"ray{workers}-{phase}", backend="ray", concurrency=workers),
                                 "concurrency": workers, "phase": phase})
    for r in runs:
        r["ideal_s"] = round(r["cells"] * 1 * a.latency / r["concurrency"], 3)
        r["ratio_to_ideal"] = round(r["wall_s"] / r["ideal_s"], 2)
    # the schema-only variant, added to the local run's folder: resumes plain and cite, re-judges strict
    schema = measure("schema-only variant (re-judged)", {**two, "strict": lads["strict"]}, rows, url, work / "local",
                     concurrency=8)
    server.shutdown()
    server.server_close()

    print(f"{n} rows × 2 variants, one model call per cell, server latency {a.latency} s; "
          f"{os.cpu_count()} CPUs" + (f"; Ray {'reached' if a.ray_address else 'started'} in {ray_start:.1f} s"
                                      if ray_start is not None else ""))
    print(f"{'run':<28} {'cells':>6} {'calls':>6} {'wall s':>8} {'ideal s':>8} {'× ideal':>8} {'cell s':>7} {'model s':>8}")
    for r in runs:
        print(f"{r['run']:<28} {r['cells']:>6} {r['calls']:>6} {r['wall_s']:>8.2f} {r['ideal_s']:>8.2f} "
              f"{r['ratio_to_ideal']:>8.2f} {r['cell_seconds_median']:>7.3f} {r['model_latency_median']:>8.3f}")
    print(f"{'schema-only variant':<28} {n:>6} {schema['server_hits']:>6} {schema['wall_s']:>8.2f}   "
          f"(the whole call: {schema['cells']} cells, {n} of them re-judged)")
    if ray_note:
        print(ray_note)
    targets = {"runs_within_1.3x_of_ideal": all(r["ratio_to_ideal"] <= 1.3 for r in runs if r.get("phase") != "cold"),
               "schema_only_no_calls": schema["server_hits"] == 0,
               "schema_only_under_1s": schema["wall_s"] < 1.0}
    print("targets: " + ", ".join(f"{k} {'met' if v else 'NOT met'}" for k, v in targets.items()))
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                                text=True).stdout.strip()
    except OSError:
        commit = None
    out = {"rows": n, "variants": 2, "latency_s": a.latency, "ray_start_s": ray_start, "ray_note": ray_note,
           "ray_address": a.ray_address,
           "runs": runs, "schema_only": schema, "targets": targets, "python": platform.python_version(),
           "platform": platform.platform(), "cpus": os.cpu_count(),
           "load_average": list(os.getloadavg()) if hasattr(os, "getloadavg") else None, "commit": commit,
           "timestamp": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    dest = a.out or ROOT / "benchmarks" / "results" / "experiments.json"
    dest.write_text(json.dumps(out, indent=2) + "\n")
    print(f"wrote {dest}")


if __name__ == "__main__":
    main()
