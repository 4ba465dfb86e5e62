"""OpenAICompatModel: `openai/MODEL` at an api_base, called without litellm (models/openai_compat.py)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from ladr_lab.errors import ModelError
from ladr_lab.models import CallInfo, OpenAICompatModel, get_model
from ladr_lab.models.openai_compat import price_of

ROOT = Path(__file__).resolve().parents[2]
MSGS = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hello?"}]


class _Server(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    seen: list = []
    fail_first = 0
    status = 200

    def do_POST(self):  # noqa: N802
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
        _Server.seen.append((self.path, dict(self.headers), body))
        if _Server.fail_first > 0:
            _Server.fail_first -= 1
            return self._reply(503, {"error": "busy"})
        if _Server.status != 200:
            return self._reply(_Server.status, {"error": {"message": "no such model"}})
        self._reply(200, {"choices": [{"index": 0, "message": {"role": "assistant", "content": "hi there"}}],
                          "usage": {"prompt_tokens": 1000, "completion_tokens": 100}})

    def _reply(self, status, doc):
        out = json.dumps(doc).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    def log_message(self, *a):
        pass


@pytest.fixture
def base():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Server)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    _Server.seen, _Server.fail_first, _Server.status = [], 0, 200
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()


def test_a_call_sends_the_options_in_the_body_and_the_key_as_a_bearer(base):
    model = get_model("openai/gpt-4o-mini", options={"api_base": base, "api_key": "sk-1", "temperature": 0,
                                                      "seed": 3, "extra_headers": {"X-Trace": "t"}})
    out = model.complete(MSGS, call=CallInfo(step="s"))
    path, headers, body = _Server.seen[-1]
    assert path == "/v1/chat/completions"
    assert headers["Authorization"] == "Bearer sk-1" and headers["X-Trace"] == "t"
    assert body == {"temperature": 0, "seed": 3, "model": "gpt-4o-mini", "messages": MSGS}
    assert out.text == "hi there" and (out.tokens_in, out.tokens_out) == (1000, 100) and out.model == model.name
    assert out.latency > 0
    assert out.cost == pytest.approx(price_of("openai/gpt-4o-mini", 1000, 100)) and out.cost > 0   # litellm's price
    model.complete(MSGS)
    assert len(_Server.seen) == 2     # the same kept-alive connection, a second request


def test_litellms_own_settings_never_reach_the_server(base):
    """`drop_params` and custom prices are litellm's settings (it never sends them): neither does the direct client;
    custom prices still price the call, as litellm does."""
    m = get_model("openai/fake", options={"api_base": base, "api_key": "x", "drop_params": True, "temperature": 0.1,
                                          "input_cost_per_token": 0.001, "output_cost_per_token": 0.002})
    comp = m.complete([{"role": "user", "content": "hi"}])
    body = _Server.seen[-1][2]
    assert body["temperature"] == 0.1 and not {"drop_params", "input_cost_per_token", "output_cost_per_token"} & set(body)
    assert comp.cost == pytest.approx(1000 * 0.001 + 100 * 0.002)


def test_a_grammar_goes_in_the_body(base):
    model = get_model("openai/m", options={"api_base": base, "api_key": "x", "grammar": "root ::= \"a\""})
    out = model.complete(MSGS)
    assert _Server.seen[-1][2]["grammar"] == 'root ::= "a"' and out.constrained == "grammar"
    assert "extra_body" not in _Server.seen[-1][2]


def test_an_unpriced_model_costs_nothing(base):
    assert get_model("openai/surely-not-priced", options={"api_base": base, "api_key": "x"}).complete(MSGS).cost == 0


def test_errors_are_model_errors_naming_the_model(base):
    _Server.status = 404
    model = get_model("openai/m", options={"api_base": base, "api_key": "x"})
    with pytest.raises(ModelError, match='model "openai/m" failed: HTTP 404 .*no such model'):
        model.complete(MSGS)
    dead = get_model("openai/m", options={"api_base": "http://127.0.0.1:9/v1", "api_key": "x", "max_retries": 0})
    with pytest.raises(ModelError, match='model "openai/m" failed: ConnectionRefusedError'):
        dead.complete(MSGS)


def test_a_busy_server_is_retried(base):
    _Server.fail_first = 1
    assert get_model("openai/m", options={"api_base": base, "api_key": "x"}).complete(MSGS).text == "hi there"
    assert len(_Server.seen) == 2
    _Server.fail_first = 1
    with pytest.raises(ModelError, match="HTTP 503"):
        get_model("openai/m", options={"api_base": base, "api_key": "x", "max_retries": 0}).complete(MSGS)


def test_the_key_comes_from_the_environment_too(base, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env")
    OpenAICompatModel("openai/m", api_base=base).complete(MSGS)
    assert _Server.seen[-1][1]["Authorization"] == "Bearer sk-env"


def test_a_call_imports_neither_litellm_nor_pandas(base):
    code = ("import sys\nfrom ladr_lab.models import get_model\n"
            f"m = get_model('openai/gpt-4o-mini', options={{'api_base': {base!r}, 'api_key': 'x'}})\n"
            "print(m.complete([{'role': 'user', 'content': 'hi'}]).text)\n"
            "print(sorted(k for k in ('litellm', 'pandas') if k in sys.modules))\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.stdout.split("\n")[:2] == ["hi there", "[]"], done.stderr[-2000:]
