"""The response cache (models/cache.py): its keys, the `cached` provenance in the trace and the `why:` line, the
models it never answers for, the CLI's --no-cache and --cache-dir, an eval re-run making no call, and concurrent
writers. Every test has its own cache folder (tests/conftest.py sets $LADR_LAB_RESPONSE_CACHE)."""
from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import textwrap
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from ladr_lab.engine import Run
from ladr_lab.models import CallInfo, Completion, LiteLLMModel, get_model
from ladr_lab.models.cache import (
    CACHE_FILE,
    KEY_VERSION,
    CachedModel,
    ResponseCache,
    cache_key,
    default_cache_dir,
    resolve_cache,
    with_cache,
)
from ladr_lab.trace import load_trace

ROOT = Path(__file__).resolve().parents[2]
MSGS = [{"role": "system", "content": "Answer."}, {"role": "user", "content": "Question:\nwhy?"}]
ENV = {**os.environ, "PYTHONPATH": str(ROOT), "LITELLM_LOCAL_MODEL_COST_MAP": "True"}

LADDER = """\
name: tiny
steps:
  - id: answer
    fields:
      - name: Question
        type: text
        from: input.context
    systemPrompt: "Answer the question."
"""


def _key(**params) -> str:
    name = params.pop("model", "openai/gpt-4o-mini")
    messages = params.pop("messages", MSGS)
    call = params.pop("call", None)
    return cache_key(LiteLLMModel(name, **params).cache_request(messages, call))


# ---- keys ------------------------------------------------------------------------------------------------------

def test_each_thing_that_decides_the_answer_changes_the_key():
    base = _key(temperature=0.2, seed=1)
    assert base.startswith(KEY_VERSION + ":") and base.endswith(":1")
    others = [
        _key(model="openai/gpt-4o", temperature=0.2, seed=1),
        _key(messages=[*MSGS[:1], {"role": "user", "content": "Question:\nwhy not?"}], temperature=0.2, seed=1),
        _key(messages=[{"role": "system", "content": "Answer!"}, MSGS[1]], temperature=0.2, seed=1),
        _key(temperature=0.3, seed=1),
        _key(temperature=0.2, seed=2),
        _key(temperature=0.2),
        _key(temperature=0.2, seed=1, max_tokens=5),
        _key(temperature=0.2, seed=1, top_p=0.5),
        _key(temperature=0.2, seed=1, grammar="root ::= [a-z]+\n"),
        _key(temperature=0.2, seed=1, api_base="http://127.0.0.1:1/v1"),
        _key(temperature=0.2, seed=1, extra_body={"top_k": 3}),
    ]
    assert len({base, *others}) == len(others) + 1


def test_the_option_order_secrets_and_transport_settings_leave_the_key_alone():
    a = cache_key({"model": "m", "messages": MSGS, "params": {"temperature": 0, "seed": 3, "max_tokens": 9}})
    b = cache_key({"params": {"max_tokens": 9, "seed": 3, "temperature": 0}, "messages": MSGS, "model": "m"})
    assert a == b
    base = _key(temperature=0)
    assert _key(temperature=0, api_key="sk-one") == _key(temperature=0, api_key="sk-two") == base
    assert _key(temperature=0, timeout=5, num_retries=2) == base
    assert _key(temperature=0, extra_headers={"Authorization": "Bearer x"}) == _key(
        temperature=0, extra_headers={"Authorization": "Bearer y"})
    assert _key(temperature=0, extra_headers={"X-Trace": "1"}) != base      # a header that is no secret is keyed


def test_the_occurrence_of_an_identical_request_is_in_the_key():
    req = {"model": "m", "messages": MSGS, "params": {}}
    assert cache_key(req, 1) != cache_key(req, 2)
    assert cache_key(req, 2).rsplit(":", 1) == [cache_key(req, 1).rsplit(":", 1)[0], "2"]


def test_under_constrain_request_each_calls_grammar_is_in_the_key():
    pytest.importorskip("llama_cpp")
    model = LiteLLMModel("openai/x", constrain="request")
    files = {"type": "object", "required": ["files"], "properties": {"files": {"type": "array",
                                                                                "items": {"type": "string"}}}}
    globs = {"type": "object", "required": ["glob"], "properties": {"glob": {"type": "string"}}}
    k1 = cache_key(model.cache_request(MSGS, CallInfo(step="s", request_match=files)))
    k2 = cache_key(model.cache_request(MSGS, CallInfo(step="s", request_match=globs)))
    k3 = cache_key(model.cache_request(MSGS, CallInfo(step="s", request_match=files, forced_final=True)))
    assert len({k1, k2, k3}) == 3
    assert k1 == cache_key(model.cache_request(MSGS, CallInfo(step="other", node=2, request_match=files)))


def test_no_secret_reaches_the_cache_file(tmp_path):
    run = Run(_ladder(tmp_path), model="openai/gpt-4o-mini", input="why?", cache=tmp_path / "rc",
              model_options={"mock_response": "hello", "api_key": "sk-VERY-SECRET-1234"})
    assert run.run().status == "completed"
    run.close()
    raw = b"".join(p.read_bytes() for p in (tmp_path / "rc").iterdir())
    assert b"hello" in raw and b"sk-VERY-SECRET-1234" not in raw


# ---- provenance ------------------------------------------------------------------------------------------------

def _ladder(tmp_path: Path) -> Path:
    path = tmp_path / "tiny.yaml"
    path.write_text(LADDER)
    return path


def test_a_second_run_is_answered_from_the_cache_and_its_trace_says_cached(tmp_path):
    ladder = _ladder(tmp_path)
    opts = {"mock_response": "the answer", "temperature": 0}
    first = Run(ladder, model="openai/gpt-4o-mini", input="why?", model_options=opts, trace_out=tmp_path / "1.jsonl")
    r1 = first.run()
    first.trace.close()
    second = Run(ladder, model="openai/gpt-4o-mini", input="why?", model_options=opts, trace_out=tmp_path / "2.jsonl")
    r2 = second.run()
    second.trace.close()
    assert (r1.output, r2.output) == ("the answer", "the answer")
    assert (r1.cached_calls, r2.cached_calls) == (0, 1) and r2.llm_calls == 1
    assert r1.cost > 0 and r2.cost == 0.0                  # what the user pays now
    calls = [json.loads(line) for line in (tmp_path / "2.jsonl").read_text().splitlines()]
    call = next(e for e in calls if e["type"] == "llm_call")
    live = next(json.loads(line) for line in (tmp_path / "1.jsonl").read_text().splitlines()
                if json.loads(line)["type"] == "llm_call")
    assert live["provenance"] == "live" and call["provenance"] == "cached"
    assert (call["tokens_in"], call["tokens_out"]) == (live["tokens_in"], live["tokens_out"])   # recorded tokens
    text = second.to_text()
    assert "why: (answer from the response cache, not a fresh call)" in text
    assert "(cached)" in text and "why:" not in first.to_text()
    assert "1 from the response cache" in r2.to_text()
    html = load_trace(tmp_path / "2.jsonl").to_html()
    assert "answer from the response cache, not a fresh call" in html and ">cached<" in html


def test_a_run_replays_its_own_sequence_of_identical_requests():
    calls = []

    class Sampler:                         # a live model that samples: each call a new answer
        name = "sampler"
        max_concurrency = 1

        def cache_request(self, messages, call=None):
            return {"model": self.name, "messages": messages}

        def complete(self, messages, call=None):
            calls.append(1)
            return Completion(text=f"sample {len(calls)}", model=self.name)

        def close(self):
            pass

    store = resolve_cache(True)
    run1 = CachedModel(Sampler(), store)
    assert [run1.complete(MSGS).text for _ in range(3)] == ["sample 1", "sample 2", "sample 3"]
    run2 = CachedModel(Sampler(), store)            # a new run: the same three answers, in order, none called
    answers = [run2.complete(MSGS) for _ in range(3)]
    assert [a.text for a in answers] == ["sample 1", "sample 2", "sample 3"] and len(calls) == 3
    assert {a.provenance for a in answers} == {"cached"} and run2.cache_stats.hits == 3
    assert run2.complete(MSGS).text == "sample 4" and len(calls) == 4   # a fourth repeat is a fresh call


def test_content_named_like_a_secret_is_keyed_and_only_credentials_are_left_out(monkeypatch):
    """`key` or `password` inside a response_format schema, a tool's parameters or extra_body is what is asked: it
    changes the key; an api_key, an Authorization header and a timeout do not."""
    def schema(kind: str) -> dict:
        return {"type": "json_schema", "json_schema": {"name": "a", "schema": {
            "type": "object", "properties": {"key": {"type": kind}}}}}
    assert _key(response_format=schema("string")) != _key(response_format=schema("integer"))
    tool = {"type": "function", "function": {"name": "login", "parameters": {"properties": {"password": {}}}}}
    assert _key(tools=[tool]) != _key(tools=[{**tool, "function": {**tool["function"], "parameters": {}}}])
    assert _key(extra_body={"token": 1}) != _key(extra_body={"token": 2})
    assert _key(api_key="a", extra_headers={"Authorization": "x", "X-Team": "t"}, timeout=3) == \
        _key(api_key="b", extra_headers={"Authorization": "y", "X-Team": "t"})
    assert _key(extra_headers={"X-Team": "t"}) != _key(extra_headers={"X-Team": "u"})
    plain = _key()
    monkeypatch.setenv("OPENAI_API_BASE", "http://127.0.0.1:9/v1")     # another server answers
    assert _key() != plain


def test_an_empty_answer_is_not_stored(tmp_path):
    model = with_cache(LiteLLMModel("openai/gpt-4o-mini", mock_response=" "), tmp_path / "rc")
    assert model.complete(MSGS).provenance == "live"
    assert len(ResponseCache.at(tmp_path / "rc")) == 0 and model.complete(MSGS).provenance == "live"


def test_a_failed_call_is_not_stored(tmp_path):
    model = with_cache(LiteLLMModel("openai/gpt-4o-mini", mock_response=Exception("boom")), tmp_path / "rc")
    for _ in range(2):
        with pytest.raises(Exception, match="boom"):
            model.complete(MSGS)
    assert len(ResponseCache.at(tmp_path / "rc")) == 0


# ---- which models -----------------------------------------------------------------------------------------------

def test_deterministic_recorded_and_users_models_are_never_cached(tmp_path):
    ladder = _ladder(tmp_path)
    script = tmp_path / "s.yaml"
    script.write_text('answer: ["scripted answer"]\n')

    class Mine:
        name = "mine"
        max_concurrency = 1

        def complete(self, messages, call=None):
            return Completion(text="mine")

    for model in ("offline", f"script:{script}", Mine()):
        run = Run(ladder, model=model, input="why?", trace_out=tmp_path / "t.jsonl", cache=tmp_path / "rc")
        assert not isinstance(run.model, CachedModel)
        assert run.run().status == "completed"
        run.trace.close()
    replayed = Run(ladder, model=f"replay:{tmp_path / 't.jsonl'}", input="why?", cache=tmp_path / "rc")
    assert not isinstance(replayed.model, CachedModel) and replayed.run().status == "completed"
    assert len(ResponseCache.at(tmp_path / "rc")) == 0
    assert isinstance(get_model("openai/x", cache=tmp_path / "rc"), CachedModel)
    assert not isinstance(get_model("openai/x", cache=False), CachedModel)


def test_an_answer_typed_by_hand_is_not_stored(tmp_path):
    run = Run(_ladder(tmp_path), model="openai/gpt-4o-mini", input="why?", cache=tmp_path / "rc",
              model_options={"mock_response": "the model's"})
    run.step(output="mine")
    assert run.done and run.output == "mine" and len(ResponseCache.at(tmp_path / "rc")) == 0


def test_no_cache_and_where_the_default_cache_lives(tmp_path, monkeypatch):
    run = Run(_ladder(tmp_path), model="openai/gpt-4o-mini", input="why?", cache=False,
              model_options={"mock_response": "x"})
    assert not isinstance(run.model, CachedModel) and run.cache is None
    monkeypatch.setenv("LADR_LAB_RESPONSE_CACHE", "off")
    assert default_cache_dir() is None and resolve_cache(True) is None
    monkeypatch.delenv("LADR_LAB_RESPONSE_CACHE")
    monkeypatch.setenv("LADR_LAB_CACHE_DIR", str(tmp_path / "root"))
    assert default_cache_dir() == tmp_path / "root" / "responses"
    assert resolve_cache(True).path == (tmp_path / "root" / "responses" / CACHE_FILE).resolve()


# ---- the command line -------------------------------------------------------------------------------------------

def _cli(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ladr_lab", *args], capture_output=True, text=True, cwd=ROOT,
                          env=env or ENV, timeout=180)


def test_run_no_cache_and_cache_dir_from_the_cli(tmp_path):
    ladder = str(_ladder(tmp_path))
    base = ["run", ladder, "--input", "why?", "--model", "openai/gpt-4o-mini", "-O", "mock_response=hello"]
    env = {**ENV, "LADR_LAB_RESPONSE_CACHE": str(tmp_path / "default")}
    first = _cli(*base, "--cache-dir", str(tmp_path / "mine"), "--json", env=env)
    second = _cli(*base, "--cache-dir", str(tmp_path / "mine"), env=env)
    assert first.returncode == 0 and second.returncode == 0, first.stderr + second.stderr
    assert json.loads(first.stdout.splitlines()[-1])["cached_calls"] == 0
    assert "why: (answer from the response cache, not a fresh call)" in second.stdout
    assert (tmp_path / "mine" / CACHE_FILE).is_file() and not (tmp_path / "default").exists()
    fresh = _cli(*base, "--cache-dir", str(tmp_path / "mine"), "--no-cache", env=env)
    assert fresh.returncode == 2 and "not allowed with" in fresh.stderr
    fresh = _cli(*base, "--no-cache", "--json", env=env)
    assert json.loads(fresh.stdout.splitlines()[-1])["cached_calls"] == 0 and not (tmp_path / "default").exists()


class _Counting(BaseHTTPRequestHandler):
    calls = 0
    lock = threading.Lock()

    def do_POST(self):  # noqa: N802 (http.server's name)
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        with _Counting.lock:
            _Counting.calls += 1
        text = "answer to " + body["messages"][-1]["content"].splitlines()[-1]
        doc = json.dumps({"id": "c1", "object": "chat.completion", "created": 1, "model": "m",
                          "choices": [{"index": 0, "finish_reason": "stop",
                                       "message": {"role": "assistant", "content": text}}],
                          "usage": {"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(doc)))
        self.end_headers()
        self.wfile.write(doc)

    def log_message(self, *a):
        pass


@pytest.fixture
def counting_server():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Counting)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    _Counting.calls = 0
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()


def test_an_eval_rerun_into_a_new_folder_makes_no_model_call(tmp_path, counting_server):
    ladder = str(_ladder(tmp_path))
    inputs = tmp_path / "rows.jsonl"
    inputs.write_text("".join(json.dumps({"context": f"question {i}"}) + "\n" for i in range(4)))
    args = ["eval", ladder, "--inputs", str(inputs), "--model", "openai/m", "-O", f"api_base={counting_server}",
            "-O", "api_key=none", "--temperature", "0.7", "--no-progress", "--json"]
    first = _cli(*args, "--out", str(tmp_path / "one"))
    assert first.returncode == 0, first.stdout + first.stderr
    assert _Counting.calls == 4
    second = _cli(*args, "--out", str(tmp_path / "two"))
    assert second.returncode == 0, second.stdout + second.stderr
    assert _Counting.calls == 4                                        # all four rows answered from the cache
    for trace in (tmp_path / "two" / "traces").glob("*.jsonl"):
        events = [json.loads(line) for line in trace.read_text().splitlines()]
        assert [e["provenance"] for e in events if e["type"] == "llm_call"] == ["cached"]
    third = _cli(*args, "--out", str(tmp_path / "three"), "--no-cache")
    assert third.returncode == 0 and _Counting.calls == 8


def test_evaluate_takes_cache_false_and_a_folder(tmp_path, counting_server):
    from ladr_lab.experiments import evaluate
    rows = [{"context": "q1"}, {"context": "q2"}]
    opts = {"api_base": counting_server, "api_key": "none"}
    for out in ("a", "b"):
        evaluate(_ladder(tmp_path), rows, model="openai/m", out=tmp_path / out, progress=False, model_options=opts,
                 cache=tmp_path / "rc")
    assert _Counting.calls == 2
    evaluate(_ladder(tmp_path), rows, model="openai/m", out=tmp_path / "c", progress=False, model_options=opts,
             cache=False)
    assert _Counting.calls == 4


# ---- concurrent writers -----------------------------------------------------------------------------------------

WRITER = textwrap.dedent("""
    import sys, threading
    from ladr_lab.models.base import Completion
    from ladr_lab.models.cache import ResponseCache
    folder, who = sys.argv[1], int(sys.argv[2])
    cache = ResponseCache.at(folder)
    def write(t):
        for i in range(40):
            text = ("shared %d " % i) * 200          # a long value: torn, it would not read back whole
            cache.put("shared-%d" % i, Completion(text=text, tokens_in=i, model="m"))
            cache.put("own-%d-%d-%d" % (who, t, i), Completion(text=("own %d %d %d " % (who, t, i)) * 50, model="m"))
            assert cache.get("shared-%d" % i).text == text
    threads = [threading.Thread(target=write, args=(t,)) for t in range(3)]
    [t.start() for t in threads]
    [t.join() for t in threads]
    print("ok", cache.broken)
""")


def test_concurrent_processes_and_threads_write_the_same_and_different_keys(tmp_path):
    folder = tmp_path / "rc"
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, str(folder), str(who)], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env=ENV, cwd=ROOT) for who in range(4)]
    for p in procs:
        out, err = p.communicate(timeout=180)
        assert p.returncode == 0 and out.strip() == "ok None", out + err
    cache = ResponseCache(folder)
    for i in range(40):
        got = cache.get(f"shared-{i}")
        assert got is not None and got.text == f"shared {i} " * 200 and got.tokens_in == i
    for who in range(4):
        for t in range(3):
            for i in range(40):
                assert cache.get(f"own-{who}-{t}-{i}").text == f"own {who} {t} {i} " * 50
    assert len(cache) == 40 + 4 * 3 * 40
    db = sqlite3.connect(folder / CACHE_FILE)
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    db.close()


def test_the_stepper_shares_the_cache_and_takes_cache_false(tmp_path):
    pytest.importorskip("ipywidgets")
    from ladr_lab.widgets import Stepper
    ladder = _ladder(tmp_path)

    def make():                                    # a fresh live model for every run (the Stepper's factory)
        return LiteLLMModel("openai/gpt-4o-mini", mock_response="stepped")

    s = Stepper(ladder, input="why?", model=make)
    assert isinstance(s.run.model, CachedModel)
    s.run_all()
    assert s.run.output == "stepped" and s.run.result.cached_calls == 0
    s.reset()                                      # a new run: its answer comes from the cache, marked so
    s.run_all()
    assert s.run.output == "stepped" and s.run.result.cached_calls == 1
    assert "answer from the response cache" in s.run.to_text()
    off = Stepper(ladder, input="why?", model=make, cache=False)
    assert off.run.cache is None and not isinstance(off.run.model, CachedModel)
