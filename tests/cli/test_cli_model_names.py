"""`ladr-lab run --model`: a mistyped name or a provider without its API key is refused at once, before any call."""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LADDER = """\
name: hi
model: offline
steps:
  - id: s
    fields:
      - { name: Topic, type: text, from: input.context }
"""


def _run(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    (tmp_path / "l.yaml").write_text(LADDER, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
    return subprocess.run([sys.executable, "-m", "ladr_lab", "run", str(tmp_path / "l.yaml"), "--input", "x", *args],
                          cwd=ROOT, capture_output=True, text=True, timeout=120, env=env)


def test_a_mistyped_offline_says_did_you_mean(tmp_path):
    p = _run(tmp_path, "--model", "offlne")
    assert p.returncode == 1
    assert 'did you mean "offline"?' in p.stderr and "Traceback" not in p.stderr + p.stdout


def test_a_provider_without_its_key_fails_fast_naming_the_variable(tmp_path):
    start = time.perf_counter()
    p = _run(tmp_path, "--model", "openai/gpt-4o-mini")
    took = time.perf_counter() - start
    assert p.returncode == 1, p.stdout
    assert "openai/gpt-4o-mini needs OPENAI_API_KEY, which is not set" in p.stderr
    assert "Traceback" not in p.stderr + p.stdout and "Provider List" not in p.stdout
    assert took < 30  # litellm's import only; the retries of a real call took 37 s


def test_mixed_replay_checks_its_then_model(tmp_path):
    trace = tmp_path / "t.jsonl"
    trace.write_text('{"type": "llm_call", "step": "s", "node": 1, "round": 1, "messages": [], "output": "x"}\n',
                     encoding="utf-8")
    p = _run(tmp_path, "--model", f"replay:{trace}", "--then", "openai/gpt-4o-mini")
    assert p.returncode == 1 and "needs OPENAI_API_KEY" in p.stderr
