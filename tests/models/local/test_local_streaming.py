"""The local model streamed (models/local/tokens.py): a watched run of the 0.5B, greedy, records the trace an unwatched
run records (each run cold, in a process of its own, so the prompt cache starts empty in both), its tokens reach the
watcher as they are generated, and a cancel stops the generation between two tokens.

Skips without the runtime and the default packaged model, unless LADR_REQUIRE_LOCAL_MODEL is set (as test_local.py)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ladr_lab import load_trace
from tests.helpers_local import needs_model

ROOT = Path(__file__).resolve().parents[3]


pytestmark = needs_model

# two short steps, so each run is two calls of a few seconds (the second reads the first's answer)
LADDER = """\
name: stream-check
model: local
steps:
  - id: greet
    fields:
      - { name: Question, type: text, from: input.context }
    systemPrompt: Answer in one short sentence, with one emoji.
  - id: translate
    fields:
      - { name: Text, type: text, from: previous }
    systemPrompt: Translate the Text into French and Japanese, one line each.
"""

SCRIPT = r"""
import json, sys
from ladr_lab import Run
from tests.helpers_local import MISSING, needs_model

class Watcher:
    def __init__(self):
        self.pieces, self.texts, self.stop_at = 0, [], None
    def started(self, stream):
        pass
    def wrote(self, stream, text):
        self.pieces += 1
        if self.stop_at is not None and stream.pieces == self.stop_at:
            stream.cancel()
    def ended(self, stream):
        self.texts.append([stream.text, stream.cancelled])

ladder, mode, out = sys.argv[1:4]
watch = Watcher() if mode != "plain" else None
if mode == "cancel":
    watch.stop_at = 3
run = Run(ladder, input="Say hello to a new student.", model_options={"max_tokens": 40}, trace_out=out,
          cache=False, watch=watch)
res = run.run()
print(json.dumps({"status": res.status, "pieces": watch.pieces if watch else 0, "texts": watch.texts if watch else []}))
"""

VOLATILE = {"t", "latency", "run_id", "started_at", "ttft", "prompt_tps", "gen_tps"}


@pytest.fixture(scope="module")
def plain(tmp_path_factory) -> tuple[dict, Path]:
    """The unwatched run, once for both tests."""
    return _run(tmp_path_factory.mktemp("plain"), "plain")


def _run(tmp_path: Path, mode: str) -> tuple[dict, Path]:
    ladder = tmp_path / "ladder.yaml"
    ladder.write_text(LADDER)
    out = tmp_path / f"{mode}.jsonl"
    done = subprocess.run([sys.executable, "-c", SCRIPT, str(ladder), mode, str(out)], capture_output=True, text=True,
                          timeout=900, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1]), out


def _stable(path: Path) -> list[dict]:
    return [{k: v for k, v in e.to_dict().items() if k not in VOLATILE} for e in load_trace(path).events]


def test_a_streamed_local_run_records_the_trace_of_an_unstreamed_one(tmp_path, plain):
    plain, plain_trace = plain
    streamed, streamed_trace = _run(tmp_path, "stream")
    assert plain["status"] == streamed["status"] == "completed"
    assert _stable(plain_trace) == _stable(streamed_trace)
    calls = load_trace(streamed_trace).calls()
    # the watcher saw each answer grow token by token, and each call's text is the answer recorded
    assert streamed["pieces"] >= sum(c.tokens_out for c in calls) - len(calls) > 0
    assert [t for t, _ in streamed["texts"]] == [c.output for c in calls]
    # llama.cpp's own speeds are recorded, streamed or not
    for c in (*calls, *load_trace(plain_trace).calls()):
        assert c.gen_tps and c.gen_tps > 0 and c.prompt_tps and c.prompt_tps > 0
    assert "generated" in calls[0].to_text() and "tok/s" in calls[0].to_text()


def test_a_cancelled_local_call_stops_between_tokens_and_the_run_goes_on(tmp_path, plain):
    _, plain_trace = plain
    stopped, stopped_trace = _run(tmp_path, "cancel")
    # run() returned at the cancel: the first call stopped after three pieces, a prefix of what it would have said
    assert stopped["status"] == "running"
    text, cancelled = stopped["texts"][0]
    first = load_trace(plain_trace).calls()[0].output
    assert cancelled and text and first.startswith(text) and len(text) < len(first)
    err = [e for e in load_trace(stopped_trace).events if e.type == "llm_error"]
    assert len(err) == 1 and err[0].cancelled and err[0].partial == text and err[0].step == "greet"
