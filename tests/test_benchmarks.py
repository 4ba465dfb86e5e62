"""The benchmarks still run against the code they measure (a tiny size, results to a temporary file): a
refactoring that moves what a benchmark reaches into fails here, not on the next person to measure."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

CASES = {
    "assertions_bench": ["--sizes", "100", "--repeat", "1"],
    "rejudge": ["--n", "40", "--repeat", "1"],
    "engine": ["--sizes", "100", "--reps", "1"],
    "experiments": ["--quick", "--no-ray", "--latency", "0.05"],
    "retrieval": ["--sparse-only", "--queries", "8", "--max-docs", "150", "--rounds", "1"],
    "server_bounds": ["--docs", "200", "--clients", "2", "--pings", "2", "--reps", "1"],
    "tuning": ["--rows", "20", "--repeat", "1"],
    "suggest": ["--outputs", "60", "--repeat", "1", "--limit", "3"],
    "reports": ["--rows", "20", "--reps", "1"],
    "streaming": ["--quick", "--no-local"],
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_benchmark_runs_at_a_tiny_size(name, tmp_path):
    out = tmp_path / f"{name}.json"
    env = dict(os.environ, LITELLM_LOCAL_MODEL_COST_MAP="True", PYTHONPATH=str(ROOT))
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / f"{name}.py"), *CASES[name], "--out", str(out)],
                          capture_output=True, text=True, env=env, timeout=300, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    data = json.loads(out.read_text())
    assert data, f"{name} wrote an empty result"


def test_the_pipelined_stdio_client_finishes_past_a_pipe_buffer_of_requests(tmp_path):
    """benchmarks/retrieval.py's pipelined client writes while it reads: written first and read after, more than
    64 KiB of requests (and of answers) deadlocked it against the server."""
    import importlib.util
    import threading

    spec = importlib.util.spec_from_file_location("bench_retrieval", ROOT / "benchmarks" / "retrieval.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    from ladr_lab.server import RetrieveClient

    folder = tmp_path / "S" / "docs"
    folder.mkdir(parents=True)
    for i in range(30):
        (folder / f"d{i}.md").write_text(f"alpha beta gamma {i} " * 20, encoding="utf-8")
    env = dict(os.environ, LITELLM_LOCAL_MODEL_COST_MAP="True", PYTHONPATH=str(ROOT))
    client = RetrieveClient.stdio([sys.executable, "-m", "ladr_lab", "serve", "--slate", f"S={tmp_path / 'S'}",
                                   "--stdio", "--no-dense", "--no-chunks"], env=env)
    try:
        client.initialize()
        queries = [(str(i), "alpha beta gamma " + "x" * 150) for i in range(600)]   # ~130 KiB of requests
        done: list = []
        t = threading.Thread(target=lambda: done.append(bench.pipelined_qps(client, queries, {"k": 10})), daemon=True)
        t.start()
        t.join(120)   # a liveness bound with a wide margin (it takes well under a second), not a speed test
        assert done, "the pipelined client did not finish (deadlocked?)"
        qps, got = done[0]
        assert len(got) == 600 and all(len(got[i]["result"]["hits"]) == 10 for i in range(600))
    finally:
        if t.is_alive():
            client._transport._proc.kill()
        client.close()
