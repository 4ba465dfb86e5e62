"""The retry rule (docs/experiments.md, "Resume"): a cell that ended in an error is not finished — a re-run into the
same folder runs it again, and nothing else; a failed assertion is a result and is kept. Against a real
OpenAI-compatible server on 127.0.0.1 that is down (503) for some rows, then back up."""
from __future__ import annotations

import gc
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from ladr_lab.config import load_ladder_text
from ladr_lab.experiments import evaluate, experiment, load_results

LADDER = """name: ask
steps:
  - id: answer
    fields: [{ name: Q, type: text, from: input.context }]
"""
ROWS = [{"id": f"r{i}", "context": f"question {i}" + (" (down)" if i in (1, 3) else "")} for i in range(5)]
DOWN = {"r1", "r3"}
# litellm's OpenAI client leaves the socket of a 503 answer unclosed (a ResourceWarning when it is collected, in
# whichever test): not this package's socket, and not what these tests are about
pytestmark = pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning",
                                        "ignore:unclosed <socket:ResourceWarning")


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self):  # noqa: N802 (http.server's name)
        body = self.rfile.read(int(self.headers.get("Content-Length", 0))).decode()
        row = next(r["id"] for r in reversed(ROWS) if r["context"] in body)
        server = self.server
        with server.lock:                                     # type: ignore[attr-defined]
            server.hits.append(row)                           # type: ignore[attr-defined]
        if row in server.down:                                # type: ignore[attr-defined]
            data, code = b'{"error": {"message": "the server is down", "type": "server_error"}}', 503
        else:
            data, code = json.dumps({
                "id": "c", "object": "chat.completion", "created": 1, "model": "fake",
                "choices": [{"index": 0, "finish_reason": "stop",
                             "message": {"role": "assistant", "content": f"The answer to {row}."}}],
                "usage": {"prompt_tokens": 5, "completion_tokens": 4, "total_tokens": 9}}).encode(), 200
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *a):
        pass


@pytest.fixture(scope="module")
def _serving():
    """One server for the module: litellm keeps its HTTP client per base URL, so one URL is one client."""
    srv = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    srv.hits, srv.lock = [], threading.Lock()            # type: ignore[attr-defined]
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield srv
    srv.shutdown()
    srv.server_close()
    gc.collect()          # the unclosed sockets are collected here, not in another module's test


@pytest.fixture
def server(_serving):
    """The server, down for the rows in DOWN, its hits counted from now."""
    _serving.hits.clear()
    _serving.down = set(DOWN)                           # type: ignore[attr-defined]
    return _serving


def _options(srv) -> dict:
    # max_retries 0: the OpenAI client's own retries of a 503 would hide how many calls each run made
    return {"api_base": f"http://127.0.0.1:{srv.server_address[1]}/v1", "api_key": "none", "max_retries": 0}


def _run(kind, srv, out, **kw):
    lad = load_ladder_text(LADDER)
    if kind == "evaluate":
        return evaluate(lad, ROWS, model="openai/fake", model_options=_options(srv), out=out, progress=False,
                        concurrency=2, **kw)
    return experiment({"a": lad}, ROWS, model="openai/fake", model_options=_options(srv), out=out, progress=False,
                      concurrency=2, asserts=["contains: r0"], **kw)       # fails on every row but r0: kept


@pytest.mark.parametrize("kind", ["evaluate", "experiment"])
def test_a_rerun_with_the_server_back_completes_exactly_the_error_rows(kind, server, tmp_path):
    first = _run(kind, server, tmp_path / "out")
    status = {c.row: c.status for c in first.cells}
    assert {r for r, s in status.items() if s == "error"} == DOWN and first.retried == 0
    assert sorted(server.hits) == sorted(r["id"] for r in ROWS)
    assert all("ModelError" == c.error_type for c in first.cells if c.row in DOWN)

    server.hits.clear()
    server.down.clear()                          # the server is back up
    again = _run(kind, server, tmp_path / "out")
    assert sorted(server.hits) == sorted(DOWN)   # the error rows only: one call each, nothing else
    assert [c.status for c in again.cells] == ["completed"] * len(ROWS)
    assert {c.row for c in again.cells if c.retried} == DOWN and all(c.retried == 1 for c in again.cells
                                                                    if c.row in DOWN)
    assert again.retried == 2 and "2 error cell(s) of the last run retried" in again.format()
    if kind == "experiment":       # a failed assertion is a result: those cells were kept, not run
        assert [c.passed for c in again.cells] == [True] + [False] * (len(ROWS) - 1)
    back = load_results(tmp_path / "out")
    assert back.retried == 2 and [c.status for c in back.cells] == ["completed"] * len(ROWS)

    server.hits.clear()
    third = _run(kind, server, tmp_path / "out")            # nothing left to do
    assert server.hits == [] and third.retried == 0


def test_retry_errors_false_keeps_the_error_rows(server, tmp_path):
    _run("experiment", server, tmp_path / "out")
    server.hits.clear()
    server.down.clear()
    kept = _run("experiment", server, tmp_path / "out", retry_errors=False)
    assert server.hits == [] and kept.retried == 0
    assert {c.row for c in kept.cells if c.status == "error"} == DOWN
    assert "retried" not in kept.format()


def test_the_command_line_says_how_many_were_retried(server, tmp_path, capsys):
    from ladr_lab.cli import main
    inputs = tmp_path / "rows.jsonl"
    inputs.write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    lad = tmp_path / "ask.yaml"
    lad.write_text(LADDER)
    opts = [x for k, v in _options(server).items() for x in ("-O", f"{k}={json.dumps(v)}")]
    args = ["eval", str(lad), "--inputs", str(inputs), "--out", str(tmp_path / "out"), "--model", "openai/fake",
            "--assert", "contains: answer", "--json", *opts]
    assert main(args) == 1
    capsys.readouterr()
    server.down.clear()
    assert main([*args, "--no-retry-errors"]) == 1 and json.loads(capsys.readouterr().out)["retried"] == 0
    assert main(args) == 0
    assert json.loads(capsys.readouterr().out)["retried"] == 2
