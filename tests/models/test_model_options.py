"""Model options (models/options.py): every model says which it takes and refuses the rest at once; litellm gets
them, its `grammar` travels in the request body, and its own stdout prints are silenced (issue 19)."""
from __future__ import annotations

import json
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from ladr_lab import Run
from ladr_lab.errors import ModelError
from ladr_lab.models import CallInfo, LiteLLMModel, get_model
from ladr_lab.models.options import parse_option

ROOT = Path(__file__).resolve().parents[2]
MSGS = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Question:\nhello?"}]


@pytest.mark.parametrize(("text", "expected"), [
    ("temperature=0.2", ("temperature", 0.2)), ("seed=7", ("seed", 7)), ("constrain=request", ("constrain", "request")),
    ("max-tokens=64", ("max_tokens", 64)), ("stop=[\"\\n\"]", ("stop", ["\n"])), ("note=a=b", ("note", "a=b")),
])
def test_an_option_is_key_equals_value_read_as_json_when_it_parses(text, expected):
    assert parse_option(text) == expected


def test_an_option_without_equals_is_refused():
    with pytest.raises(ModelError, match="KEY=VALUE"):
        parse_option("temperature")


@pytest.mark.parametrize(("name", "why"), [("offline", "deterministic"), (None, "deterministic")])
def test_a_deterministic_model_refuses_every_option_naming_it(name, why):
    with pytest.raises(ModelError, match=f'model "offline" takes no options \\(it is {why}\\); got "temperature"'):
        get_model(name, options={"temperature": 0})


def test_a_script_and_a_replay_refuse_options_but_a_replays_live_model_takes_them(tmp_path):
    script = tmp_path / "s.yaml"
    script.write_text("'*': [hello]\n")
    with pytest.raises(ModelError, match="takes no options \\(it answers from its script\\)"):
        get_model(f"script:{script}", options={"seed": 1})
    trace = tmp_path / "t.jsonl"
    Run(ROOT / "examples" / "single_shot.yaml", input="q", trace_out=trace).run()
    with pytest.raises(ModelError, match="options go to the live model of --then"):
        get_model(f"replay:{trace}", options={"seed": 1})
    model = get_model(f"replay:{trace}", then="openai/gpt-4o-mini", options={"temperature": 0.3})
    assert model.then.params == {"temperature": 0.3}


def test_a_model_instance_takes_no_options_from_the_run():
    with pytest.raises(ModelError, match="go with a model name"):
        get_model(LiteLLMModel("gpt-4o-mini", mock_response="x"), options={"seed": 1})


@pytest.mark.parametrize(("options", "message"), [
    ({"temperature": "hot"}, 'option "temperature" must be a number ≥ 0.0'),
    ({"temperature": -1}, 'option "temperature" must be a number'),
    ({"seed": 1.5}, 'option "seed" must be a whole number'),
    ({"max_tokens": 0}, 'option "max_tokens" must be a whole number ≥ 1'),
    ({"top_p": 2}, 'option "top_p" must be a number between 0.0 and 1.0'),
    ({"constrain": "json"}, 'option "constrain" takes "request"'),
    ({"grammar": ""}, 'option "grammar" must be the text of a GBNF grammar'),
])
def test_a_known_option_with_a_wrong_value_is_refused_for_litellm_too(options, message):
    with pytest.raises(ModelError, match=message.replace("(", "\\(")):
        get_model("openai/gpt-4o-mini", options=options)


def test_litellm_passes_options_through_and_a_grammar_in_the_body():
    model = get_model("gpt-4o-mini", options={"temperature": 0, "seed": 3, "grammar": 'root ::= "x"',
                                              "mock_response": "x"})
    assert model.params["temperature"] == 0 and model.params["seed"] == 3
    assert model.params["extra_body"] == {"grammar": 'root ::= "x"'}
    assert model.complete(MSGS).constrained == "grammar"


class _OpenAI(BaseHTTPRequestHandler):
    """An OpenAI-compatible server on 127.0.0.1 whose answers name a model litellm does not know."""

    bodies: list = []

    def do_POST(self):  # noqa: N802 (http.server's name)
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        _OpenAI.bodies.append(body)
        if self.path.endswith("/embeddings"):
            return self._reply({"object": "list", "model": "e", "usage": {"prompt_tokens": 1, "total_tokens": 1},
                                "data": [{"object": "embedding", "index": i, "embedding": [1.0, 0.0, 0.5]}
                                         for i, _ in enumerate(body["input"])]})
        self._reply({"id": "c1", "object": "chat.completion", "created": 1, "model": "qwen-on-a-laptop",
                             "choices": [{"index": 0, "finish_reason": "stop",
                                          "message": {"role": "assistant", "content": "prose answer"}}],
                             "usage": {"prompt_tokens": 11, "completion_tokens": 2, "total_tokens": 13}})

    def _reply(self, doc: dict) -> None:
        answer = json.dumps(doc).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, *a):
        pass


@pytest.fixture
def openai_server():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _OpenAI)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    _OpenAI.bodies = []
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()


def test_litellm_prints_nothing_of_its_own_around_a_call_to_an_openai_compatible_server(openai_server, capfd):
    model = get_model("openai/qwen-on-a-laptop", options={"api_base": openai_server, "api_key": "none",
                                                          "temperature": 0, "seed": 5})
    out = model.complete(MSGS, call=CallInfo(step="s"))
    assert out.text == "prose answer" and out.tokens_in == 11 and out.tokens_out == 2
    assert _OpenAI.bodies[-1]["temperature"] == 0 and _OpenAI.bodies[-1]["seed"] == 5
    printed = capfd.readouterr()
    assert "Provider List" not in printed.out and "Provider List" not in printed.err
    assert printed.out == ""


def test_the_cli_refuses_an_option_the_model_does_not_take_before_the_run(tmp_path):
    done = subprocess.run([sys.executable, "-m", "ladr_lab", "run", str(ROOT / "examples" / "single_shot.yaml"),
                           "--input", "q", "--temperature", "0", "--trace-out", str(tmp_path / "t.jsonl")],
                          capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 1
    assert 'model "offline" takes no options (it is deterministic); got "temperature"' in done.stderr
    assert "Traceback" not in done.stderr and not (tmp_path / "t.jsonl").exists()


def test_the_cli_reads_a_grammar_file_and_model_options_for_a_litellm_model(tmp_path, openai_server):
    grammar = tmp_path / "g.gbnf"
    grammar.write_text('root ::= [a-z ]+\n')
    done = subprocess.run([sys.executable, "-m", "ladr_lab", "run", str(ROOT / "examples" / "single_shot.yaml"),
                           "--input", "q", "--model", "openai/qwen-on-a-laptop", "--temperature", "0.5", "--seed", "9",
                           "--grammar", str(grammar), "-O", f"api_base={openai_server}", "-O", "api_key=none",
                           "--json"], capture_output=True, text=True, cwd=ROOT,
                          env={**__import__("os").environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"})
    assert done.returncode == 0, done.stdout + done.stderr
    assert json.loads(done.stdout.splitlines()[-1])["output"] == "prose answer"
    body = _OpenAI.bodies[-1]
    assert body["temperature"] == 0.5 and body["seed"] == 9 and body["grammar"] == 'root ::= [a-z ]+\n'
    assert "Provider List" not in done.stdout


def test_the_cli_says_an_unreadable_grammar_file():
    done = subprocess.run([sys.executable, "-m", "ladr_lab", "run", str(ROOT / "examples" / "single_shot.yaml"),
                           "--input", "q", "--model", "gpt-4o-mini", "--grammar", "/nonexistent/g.gbnf"],
                          capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 1 and "--grammar /nonexistent/g.gbnf: cannot read it" in done.stderr


@pytest.mark.parametrize("call", [
    "get_model('openai/qwen-on-a-laptop', options={'api_base': BASE, 'api_key': 'none'})"
    ".complete([{'role': 'user', 'content': 'hi'}]).text",
    "LiteLLMEmbedder('openai/e').embed(['hi'])",
], ids=["model", "embedder"])
def test_a_litellm_call_leaves_no_open_event_loop_and_prints_nothing(openai_server, call):
    """litellm's service logger makes an event loop on the calling (main) thread and never closes it; the model and
    the embedder close it, so no 'unclosed event loop' ResourceWarning is left for whoever collects it."""
    code = ("import gc, os, sys, warnings\nwarnings.simplefilter('always')\n"
            f"BASE = {openai_server!r}\nos.environ.update(OPENAI_API_BASE=BASE, OPENAI_API_KEY='none')\n"
            "from ladr_lab.models import LiteLLMEmbedder, get_model\n"
            f"print({call})\n"
            "gc.collect()\n")
    done = subprocess.run([sys.executable, "-X", "dev", "-c", code], capture_output=True, text=True, cwd=ROOT,
                          env={**__import__("os").environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() in ("prose answer", "[[0.8944271909999159, 0.0, 0.4472135954999579]]"), \
        done.stdout + done.stderr[-2000:]
    assert "unclosed event loop" not in done.stderr and "unclosed <socket" not in done.stderr
    assert "Provider List" not in done.stdout
