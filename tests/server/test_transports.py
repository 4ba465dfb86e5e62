"""The protocol through both transports, `ladr-lab serve --stdio` and `--http`, as real processes."""
from __future__ import annotations

import http.client
import json
import os
import re
import subprocess
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ladr_lab.server import RetrieveClient, RetrieveError

ENV = dict(os.environ, LITELLM_LOCAL_MODEL_COST_MAP="True")


def serve_cmd(slate_dir, *extra):
    return [sys.executable, "-m", "ladr_lab", "serve", "--slate", f"Papers={slate_dir}", *extra]


class HttpProcess:
    """`ladr-lab serve --http 127.0.0.1:0` in a subprocess; reads the bound URL from its standard error."""

    def __init__(self, cmd):
        self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE, env=ENV, text=True)
        self.url = None
        for line in self.proc.stderr:
            m = re.search(r"listening on (http://\S+)", line)
            if m:
                self.url = m.group(1)
                break
        assert self.url, "the server did not start"

    def close(self):
        self.proc.terminate()
        self.proc.wait(timeout=10)
        self.proc.stderr.close()


@pytest.fixture(scope="module", params=["stdio", "http"])
def client(request, slate_dir):
    if request.param == "stdio":
        c = RetrieveClient.stdio(serve_cmd(slate_dir, "--stdio"), env=ENV)
        yield c
        c.close()
    else:
        server = HttpProcess(serve_cmd(slate_dir, "--http", "127.0.0.1:0"))
        c = RetrieveClient.http(server.url)
        yield c
        c.close()
        server.close()


def test_initialize(client):
    caps = client.initialize()["capabilities"]
    assert caps["retrieve"]["modes"] == ["sparse", "dense", "hybrid"]
    assert caps["retrieve"]["units"] == ["document", "chunk"]


def test_every_parameter_in_one_call(client):
    res = client.retrieve(
        "transformer attention complexity", k=3, mode="hybrid", modality="text", candidate_k=50,
        fusion={"method": "rrf", "rrfK": 60}, rerank=False, mmr={"lambda": 0.7},
        filter={"and": [{"field": "lang", "op": "eq", "value": "en"}, {"field": "year", "op": "gte", "value": 2015}]},
        min_score=0.0, recency={"field": "modified", "halfLifeDays": 3650}, unit="document", level=0,
        token_budget=500, session="s-every", include_text=True, include_vector=True, seed=1, strict=True)
    assert res["hits"][0]["id"] == "Papers:papers/attention.md"
    assert all(h["meta"]["lang"] == "en" and len(h["vector"]) == 384 for h in res["hits"])
    assert res["usage"]["effective"]["candidateK"] == 50 and len(res["hits"]) <= 3
    again = client.retrieve("transformer attention complexity", k=3, index_version=res["indexVersion"],
                            session="s-every")
    assert not {h["id"] for h in again["hits"]} & {h["id"] for h in res["hits"]}


def test_chunks_cursor_and_pinned_version(client):
    first = client.retrieve("networks transformer", k=1, unit="chunk", mode="sparse")
    assert first["hits"][0]["unit"] == "chunk" and "chunk" in first["hits"][0]
    page = client.retrieve("", cursor=first["nextCursor"])
    assert page["hits"] and page["hits"][0]["id"] != first["hits"][0]["id"]
    assert page["indexVersion"] == first["indexVersion"]


@pytest.mark.parametrize("params,code", [
    ({"query": "x", "k": -1}, -32602), ({"query": "x", "unit": "community"}, -32005),
    ({"query": "x", "transform": "hyde"}, -32005), ({"query": "x", "indexVersion": "gone"}, -32010),
    ({"query": "x", "cursor": "gone"}, -32602),
])
def test_error_codes(client, params, code):
    with pytest.raises(RetrieveError) as info:
        client.call("retrieve", params)
    assert info.value.code == code
    with pytest.raises(RetrieveError) as info:
        client.call("no/such/method")
    assert info.value.code == -32601


def test_non_strict_degrades_with_notes(client):
    res = client.retrieve("attention", unit="community", transform="hyde", rerank={"method": "cross-encoder"},
                          strict=False)
    assert len(res["usage"]["notes"]) == 3 and res["hits"]


@pytest.mark.parametrize("text,code", [("{oops", -32700), ("[]", -32600), ('{"jsonrpc":"2.0","id":1}', -32600),
                                       ('"just a string"', -32600)])
def test_malformed_messages(client, text, code):
    assert client.send_raw(text)["error"]["code"] == code
    assert client.call("ping") == {}


def test_batch(client):
    got = client.batch([("ping", None), ("retrieve", {"query": "residual networks", "k": 1}), ("nope", None)])
    assert got[0] == {}
    assert got[1]["hits"][0]["id"] == "Papers:papers/resnet.md"
    assert isinstance(got[2], RetrieveError) and got[2].code == -32601


def test_the_client_passes_a_field_selection(client):
    assert "score" in client.initialize()["capabilities"]["retrieve"]["fields"]
    res = client.retrieve("transformer attention", k=3, fields=["score"])
    assert res["hits"] and all(set(h) == {"id", "score"} for h in res["hits"])
    with pytest.raises(RetrieveError) as err:
        client.retrieve("transformer", fields=["scroe"])
    assert err.value.code == -32602 and "scroe" in err.value.message


def test_a_batch_past_a_pipe_buffer_is_answered(client):
    # one line of over 64 KiB out, and more than 64 KiB back: the server reads the whole line before it answers
    calls = [("retrieve", {"query": "transformer attention " + "q" * 300, "k": 5}) for _ in range(300)]
    out = client.batch(calls)
    assert len(out) == 300 and all(isinstance(r, dict) and r["hits"] for r in out)


def test_progress_notifications(client):
    notes = []
    res = client.retrieve("transformer", k=2, on_progress=notes.append)
    assert notes and notes[0]["hits"] and notes[-1]["progress"] == notes[-1]["total"]
    assert [h["id"] for h in notes[0]["hits"]] == [h["id"] for h in res["hits"]]


_junk = st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\n\r"), max_size=60)
# Lone surrogates travel as JSON escapes (json.dumps keeps ensure_ascii) and come back echoed in answers.
_surrogate_text = st.text(alphabet=st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF) | st.characters(),
                          max_size=20)
_odd_ids = st.sampled_from([float("nan"), float("inf"), float("-inf"), 1e400])
_names = st.sampled_from(["query", "k", "filter", "mode", "unit", "cursor", "indexVersion", "fusion"]) | _surrogate_text
_objs = st.dictionaries(st.sampled_from(["jsonrpc", "id", "method", "params"]),
                        st.none() | st.integers() | _junk | _surrogate_text | _odd_ids | st.lists(st.integers(), max_size=2)
                        | st.dictionaries(_names, st.integers() | _junk | _surrogate_text
                                          | st.fixed_dictionaries({"field": _surrogate_text, "op": st.just("eq"),
                                                                   "value": st.integers()})),
                        max_size=4).map(json.dumps)
_requests = st.fixed_dictionaries(
    {"jsonrpc": st.just("2.0"), "method": st.sampled_from(["retrieve", "ping"]) | _surrogate_text},
    optional={"id": st.integers() | _surrogate_text | _odd_ids,
              "params": st.dictionaries(_names, _surrogate_text | st.integers(), max_size=4)
              .map(lambda p: {"query": "attention", **p})})
_messages = _objs | _requests.map(json.dumps) | st.lists(_requests, min_size=1, max_size=4).map(json.dumps)


def _check_answer(answer):
    for a in answer if isinstance(answer, list) else [answer]:
        assert a.get("jsonrpc") == "2.0"
        assert ("result" in a) != ("error" in a)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=_junk | _messages)
def test_property_the_server_survives_malformed_input(client, text):
    if not text.strip():
        return
    try:
        answer = client.send_raw(text)   # parsed as JSON by the client: each answer is valid JSON
    except RetrieveError as exc:  # HTTP may refuse a body outright; the server must still be up
        assert "HTTP" in str(exc)
        answer = None
    if answer is not None:
        _check_answer(answer)
    assert client.call("ping") == {}


@pytest.mark.parametrize("text", [
    '{"jsonrpc":"2.0","id":"\\ud800","method":"ping"}',
    '{"jsonrpc":"2.0","id":1,"method":"\\ud800"}',
    '{"jsonrpc":"2.0","id":1,"method":"retrieve","params":{"query":"x","\\ud800":1,"strict":false}}',
    '{"jsonrpc":"2.0","id":1,"method":"retrieve","params":{"query":"x","unit":"\\udfff"}}',
    '{"jsonrpc":"2.0","id":1,"method":"retrieve","params":{"query":"x","cursor":"\\ud800"}}',
    '{"jsonrpc":"2.0","id":1,"method":"retrieve","params":{"query":"x","filter":{"field":"\\ud800","op":"eq","value":1}}}',
    '{"jsonrpc":"2.0","id":1,"method":"retrieve","params":{"query":"x","indexVersion":"\\ud800"}}',
    '[{"jsonrpc":"2.0","id":"\\ud800","method":"ping"},{"jsonrpc":"2.0","id":2,"method":"ping"}]',
    '{"jsonrpc":"2.0","id":NaN,"method":"ping"}',
    '{"jsonrpc":"2.0","id":1e400,"method":"ping"}',
])
def test_echoed_surrogates_and_non_finite_ids_keep_the_server_serving(client, text):
    answer = client.send_raw(text)
    _check_answer(answer)
    if isinstance(answer, list):
        assert len(answer) == 2 and answer[1]["result"] == {}
    if "NaN" in text or "1e400" in text:
        assert answer["id"] is None and answer["error"]["code"] == -32600
    assert client.call("ping") == {}


def test_http_bearer_token_and_health(slate_dir):
    server = HttpProcess(serve_cmd(slate_dir, "--http", "127.0.0.1:0", "--token", "s3cret", "--no-chunks"))
    try:
        for token in (None, "wrong"):
            with RetrieveClient.http(server.url, token=token) as c, pytest.raises(RetrieveError, match="401"):
                c.call("ping")
        with RetrieveClient.http(server.url, token="s3cret") as c:
            assert c.call("ping") == {}
        host, port = server.url.split("//")[1].rstrip("/").split(":")
        conn = http.client.HTTPConnection(host, int(port), timeout=10)
        conn.request("GET", "/health")
        assert conn.getresponse().read() == b'{"ok":true}'
        conn.request("GET", "/")
        resp = conn.getresponse()
        resp.read()
        assert resp.status == 405
        conn.close()
        assert server.url.startswith("http://127.0.0.1:")
    finally:
        server.close()


def test_serve_usage_errors(slate_dir, tmp_path):
    run = lambda *a: subprocess.run(serve_cmd(slate_dir, *a), capture_output=True, text=True, env=ENV, timeout=60)  # noqa: E731
    assert run().returncode == 2                              # neither --stdio nor --http
    assert run("--stdio", "--http", "1").returncode == 2      # both
    bad = run("--http", "x:y")
    assert bad.returncode != 0 and "HOST:]PORT" in bad.stderr
    missing = subprocess.run([sys.executable, "-m", "ladr_lab", "serve", "--slate", f"X={tmp_path / 'nope'}", "--stdio"],
                             capture_output=True, text=True, env=ENV, timeout=60)
    assert missing.returncode != 0 and "no such directory" in missing.stderr


def test_a_bad_http_address_fails_before_any_indexing(slate_dir):
    p = subprocess.run(serve_cmd(slate_dir, "--http", "abc"), capture_output=True, text=True, timeout=60)
    assert p.returncode != 0 and "Traceback" not in p.stderr
    assert "--http takes [HOST:]PORT (got 'abc')" in p.stderr and "indexed" not in p.stderr


def test_a_message_over_the_size_limit_is_refused_and_the_server_keeps_serving(client):
    assert client.initialize()["capabilities"]["limits"]["maxRequestBytes"] == 1024 * 1024
    big = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "retrieve", "params": {"query": "x" * (1024 * 1024)}})
    try:
        answer = client.send_raw(big)                      # stdio: the line is skipped and answered
    except RetrieveError as exc:                           # HTTP: 413 carrying the JSON-RPC error
        assert "413" in str(exc) and exc.code == -32600 and "limit of 1048576 bytes" in str(exc)
    else:
        assert answer["error"]["code"] == -32600 and "limit of 1048576 bytes" in answer["error"]["message"]
    assert client.call("ping") == {}
    assert client.retrieve("residual networks", k=1)["hits"][0]["id"] == "Papers:papers/resnet.md"


def test_the_served_index_sees_edits_in_place_at_the_next_request(tmp_path):
    folder = tmp_path / "Live" / "notes"
    folder.mkdir(parents=True)
    (folder / "a.md").write_text("# A\n\nplain words here", encoding="utf-8")
    (folder / ".metatags.json").write_text(json.dumps({"a.md": {"owner": "ann"}}))
    cmd = [sys.executable, "-m", "ladr_lab", "serve", "--slate", f"Live={tmp_path / 'Live'}", "--stdio", "--no-chunks"]
    with RetrieveClient.stdio(cmd, env=ENV) as c:
        for _ in range(3):
            assert c.retrieve("plain words", k=1, mode="sparse")["hits"]
        with open(folder / "a.md", "a", encoding="utf-8") as fh:        # `>>`
            fh.write("\n\nwombatish")
        assert [h["id"] for h in c.retrieve("wombatish", k=1, mode="sparse")["hits"]] == ["Live:notes/a.md"]
        with open(folder / ".metatags.json", "w", encoding="utf-8") as fh:   # a hand edit in place
            fh.write(json.dumps({"a.md": {"owner": "bob"}}))
        res = c.retrieve("wombatish", k=1, mode="sparse", filter={"field": "owner", "op": "eq", "value": "bob"})
        assert [h["meta"]["owner"] for h in res["hits"]] == ["bob"]


def test_the_session_limits_are_the_same_on_both_transports(client):
    limits = client.initialize()["capabilities"]["limits"]
    assert (limits["maxSessionChars"], limits["maxSessions"], limits["maxSessionHits"]) == (256, 1024, 100_000)
    with pytest.raises(RetrieveError) as info:
        client.retrieve("attention", k=1, session="s" * 257)
    assert info.value.code == -32602 and "session must be at most 256 characters" in str(info.value)
    assert client.retrieve("attention", k=1, session="s" * 256)["hits"]
