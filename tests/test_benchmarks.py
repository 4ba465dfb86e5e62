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
    "rejudge": ["--n", "40", "--repeat", "1"],
    "engine": ["--sizes", "100", "--reps", "1"],
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
