"""The JSON-RPC layer: every error code, batches, notifications, progress; it never raises."""
from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ladr_lab.search import EmbeddedEngine
from ladr_lab.server import Dispatcher
from ladr_lab.server.protocol import to_json
from ladr_lab.slate import SlateStore


def call(d, method, params=None, id_=1, notify=None):
    msg = {"jsonrpc": "2.0", "id": id_, "method": method}
    if params is not None:
        msg["params"] = params
    return json.loads(d.handle_text(json.dumps(msg), notify))


def test_initialize_advertises_the_seed_capabilities(dispatcher):
    res = call(dispatcher, "initialize", {"protocolVersion": "2025-06-18"})["result"]
    assert res["serverInfo"]["name"] == "ladr-lab"
    caps = res["capabilities"]
    assert set(caps["retrieve"]) >= {"modes", "maxK", "rerankBuiltin", "confidence", "scoreScale", "deterministic",
                                     "snapshots", "units", "tokenBudget"}
    assert set(caps) >= {"retrieve", "session", "pagination", "filter", "transform"}
    assert "year" in caps["filter"]["fields"]


def test_retrieve_answers_with_hits(dispatcher):
    res = call(dispatcher, "retrieve", {"query": "transformer attention", "k": 2})["result"]
    assert res["hits"][0]["id"] == "Papers:papers/attention.md"
    assert set(res) >= {"hits", "usage", "indexVersion"}


@pytest.mark.parametrize("text,code", [
    ("{not json", -32700), ("\"\\ud800\"x", -32700), ("[]", -32600), ("42", -32600), ('"str"', -32600),
    ('{"jsonrpc":"1.0","id":1,"method":"ping"}', -32600), ('{"jsonrpc":"2.0","id":1}', -32600),
    ('{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}', -32600), ('{"jsonrpc":"2.0","id":1,"method":"ping","params":3}', -32600),
    ('{"jsonrpc":"2.0","id":1,"method":"nope"}', -32601),
    ('{"jsonrpc":"2.0","id":1,"method":"retrieve","params":{"k":3}}', -32602),
    ('{"jsonrpc":"2.0","id":1,"method":"retrieve","params":["x"]}', -32602),
    ('{"jsonrpc":"2.0","id":1,"method":"retrieve","params":{"query":"x","rerank":{"method":"cross-encoder"}}}', -32005),
    ('{"jsonrpc":"2.0","id":1,"method":"retrieve","params":{"query":"x","indexVersion":"gone"}}', -32010),
])
def test_error_codes(dispatcher, text, code):
    answer = json.loads(dispatcher.handle_text(text))
    assert answer["error"]["code"] == code
    assert answer["jsonrpc"] == "2.0" and "id" in answer


def test_invalid_utf8_is_a_parse_error(dispatcher):
    assert json.loads(dispatcher.handle_text(b'{"a":"\xff"}'))["error"]["code"] == -32700


def test_notifications_get_no_answer_and_batches_answer_each_request(dispatcher):
    assert dispatcher.handle_text('{"jsonrpc":"2.0","method":"notifications/initialized"}') is None
    assert dispatcher.handle_text('{"jsonrpc":"2.0","method":"retrieve","params":{"query":"x"}}') is None
    assert dispatcher.handle_text('[{"jsonrpc":"2.0","method":"ping"}]') is None
    batch = [{"jsonrpc": "2.0", "id": "a", "method": "ping"},
             {"jsonrpc": "2.0", "method": "notifications/initialized"},
             {"jsonrpc": "2.0", "id": 2, "method": "retrieve", "params": {"query": "residual", "k": 1}},
             {"jsonrpc": "2.0", "id": 3, "method": "nope"}, 5]
    answers = json.loads(dispatcher.handle_text(json.dumps(batch)))
    assert [a.get("id") for a in answers] == ["a", 2, 3, None]
    assert answers[0]["result"] == {}
    assert answers[1]["result"]["hits"][0]["id"] == "Papers:papers/resnet.md"
    assert answers[2]["error"]["code"] == -32601 and answers[3]["error"]["code"] == -32600


def test_progress_notifications_carry_partial_hits(dispatcher):
    notes = []
    res = call(dispatcher, "retrieve", {"query": "transformer", "k": 2, "_meta": {"progressToken": "t2"}},
               notify=notes.append)["result"]
    assert notes and all(n["method"] == "notifications/progress" and n["params"]["progressToken"] == "t2"
                         for n in notes)
    assert notes[0]["params"]["hits"] and notes[-1]["params"]["progress"] == notes[-1]["params"]["total"]
    assert [h["id"] for h in notes[0]["params"]["hits"]] == [h["id"] for h in res["hits"]]


def test_fast_json_equals_the_plain_result(dispatcher):
    for params in ({"query": "transformer", "k": 3}, {"query": "network", "unit": "chunk", "includeVector": True},
                   {"query": "x y", "includeText": False}, {"query": "transformer", "mode": "sparse", "k": 1}):
        fast = call(dispatcher, "retrieve", params)["result"]
        plain = json.loads(to_json(dispatcher.engine.retrieve(params)))
        for r in (fast, plain):
            r["usage"].pop("latencyMs")
            r.pop("nextCursor", None)
        assert fast == plain


def test_an_engine_bug_is_an_internal_error_not_a_crash(dispatcher, monkeypatch):
    monkeypatch.setattr(dispatcher.engine, "retrieve_json", lambda *a: 1 / 0)
    answer = call(dispatcher, "retrieve", {"query": "x"})
    assert answer["error"]["code"] == -32603 and "ZeroDivisionError" in answer["error"]["message"]
    assert call(dispatcher, "ping")["result"] == {}


# Surrogate-heavy text: a lone surrogate is valid JSON (as an escape) and is echoed back in ids, methods,
# parameter names, enum values, filter fields, cursors and indexVersions.
surrogates = st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF)
texts = st.text(max_size=20) | st.text(alphabet=surrogates | st.characters(), max_size=20)
odd_numbers = st.sampled_from([float("nan"), float("inf"), float("-inf"), 1e400])
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | odd_numbers | texts,
    lambda kids: st.lists(kids, max_size=4) | st.dictionaries(texts, kids, max_size=4), max_leaves=20)

PARAM_NAMES = ["query", "k", "mode", "modality", "candidateK", "fusion", "rerank", "mmr", "transform", "filter",
               "minScore", "recency", "unit", "level", "tokenBudget", "session", "includeText", "includeVector",
               "seed", "indexVersion", "strict", "cursor", "_meta"]
requests = st.fixed_dictionaries(
    {"jsonrpc": st.sampled_from(["2.0", "2.0", "1.0", 2]),
     "method": st.sampled_from(["retrieve", "initialize", "x"]) | texts | json_values},
    optional={"id": st.integers() | texts | odd_numbers | json_values,
              "params": st.dictionaries(st.sampled_from(PARAM_NAMES) | texts, json_values, max_size=6) | json_values})


def _valid_answer(text):
    if text is None:
        return
    text.encode("utf-8")  # writable on the wire: no lone surrogate left raw
    answer = json.loads(text)
    for a in answer if isinstance(answer, list) else [answer]:
        assert a["jsonrpc"] == "2.0" and "id" in a
        assert ("result" in a) != ("error" in a)
        if "error" in a:
            assert a["error"]["code"] in (-32700, -32600, -32601, -32602, -32603, -32005, -32010)
            assert a["error"]["code"] != -32603, a  # malformed input is never our internal error


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(msg=requests | st.lists(requests, max_size=4) | json_values)
def test_property_malformed_requests_get_json_rpc_answers(dispatcher, msg):
    _valid_answer(dispatcher.handle_text(json.dumps(msg)))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.text(max_size=200) | st.binary(max_size=200))
def test_property_any_text_gets_an_answer(dispatcher, text):
    _valid_answer(dispatcher.handle_text(text))


ECHOED = ['{"jsonrpc":"2.0","id":"\\ud800","method":"ping"}',
          '{"jsonrpc":"2.0","id":1,"method":"\\udfff"}',
          '{"jsonrpc":"2.0","id":1,"method":"retrieve","params":{"query":"x","\\ud800":1,"strict":false}}',
          '{"jsonrpc":"2.0","id":1,"method":"retrieve","params":{"query":"x","mode":"\\ud800"}}',
          '{"jsonrpc":"2.0","id":1,"method":"retrieve","params":{"query":"x","cursor":"a\\udc00b"}}',
          '{"jsonrpc":"2.0","id":1,"method":"retrieve","params":{"query":"x","filter":{"field":"\\ud800","op":"eq","value":1}}}',
          '{"jsonrpc":"2.0","id":1,"method":"retrieve","params":{"query":"x","indexVersion":"\\ud800"}}']


@pytest.mark.parametrize("text", ECHOED)
def test_an_echoed_lone_surrogate_is_escaped_on_the_wire(dispatcher, text):
    answer = dispatcher.handle_text(text)
    _valid_answer(answer)
    assert answer.isascii() or "\ud800" not in answer  # escaped, never raw
    assert "\\ud800" in answer or "\\udfff" in answer or "\\udc00" in answer


@pytest.mark.parametrize("id_text", ["NaN", "Infinity", "-Infinity", "1e400", "-1e400"])
def test_a_non_finite_id_is_an_invalid_request_with_id_null(dispatcher, id_text):
    one = '{"jsonrpc":"2.0","id":' + id_text + ',"method":"ping"}'
    answer = json.loads(dispatcher.handle_text(one))
    assert answer["id"] is None and answer["error"]["code"] == -32600
    batch = json.loads(dispatcher.handle_text("[" + one + ',{"jsonrpc":"2.0","id":2,"method":"ping"}]'))
    assert batch[0]["error"]["code"] == -32600 and batch[1] == {"jsonrpc": "2.0", "id": 2, "result": {}}


def test_a_message_over_the_size_limit_is_an_invalid_request(dispatcher):
    small = Dispatcher(dispatcher.engine, max_request_bytes=200)
    caps = json.loads(small.handle_text('{"jsonrpc":"2.0","id":1,"method":"initialize"}'))["result"]["capabilities"]
    assert caps["limits"]["maxRequestBytes"] == 200 and caps["filter"]["maxInValues"] == 1024
    big = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "retrieve", "params": {"query": "x" * 300}})
    for text in (big, big.encode()):
        answer = json.loads(small.handle_text(text))
        assert answer["id"] is None and answer["error"]["code"] == -32600
        assert "over the server's limit of 200 bytes" in answer["error"]["message"]
    assert "result" in json.loads(small.handle_text('{"jsonrpc":"2.0","id":1,"method":"ping"}'))
    assert dispatcher.max_request_bytes == 1024 * 1024


@pytest.fixture(scope="module")
def big_slate(tmp_path_factory):
    folder = tmp_path_factory.mktemp("big") / "Big" / "docs"
    folder.mkdir(parents=True)
    tags = {}
    for i in range(3000):
        (folder / f"d{i:04d}.md").write_text(f"# Doc {i}\n\nresidual attention network number {i}", encoding="utf-8")
        tags[f"d{i:04d}.md"] = {"owner": f"u{i % 1500}"}
    (folder / ".metatags.json").write_text(json.dumps(tags))
    store = SlateStore()
    store.bind("Big", folder.parent)
    return Dispatcher(EmbeddedEngine.from_store(store, dense=False, chunks=False))


def test_filter_in_work_is_bounded(big_slate, monkeypatch):
    import ladr_lab.search.filters as filters

    calls = [0]
    real = filters._eq
    monkeypatch.setattr(filters, "_eq", lambda a, b: (calls.__setitem__(0, calls[0] + 1), real(a, b))[1])

    def ask(values):
        return json.loads(big_slate.handle_text(json.dumps(
            {"jsonrpc": "2.0", "id": 1, "method": "retrieve",
             "params": {"query": "residual attention", "k": 5, "filter": {"field": "owner", "op": "in", "value": values}}})))

    refused = ask([f"u{i}" for i in range(100_000)])       # 0.8 MB: under the size limit, over the cap
    assert refused["error"]["code"] == -32602
    assert 'field "owner"' in refused["error"]["message"] and "1024" in refused["error"]["message"]
    answered = ask([f"u{i}" for i in range(1000)])
    assert len(answered["result"]["hits"]) == 5
    assert all(h["meta"]["owner"] in {f"u{i}" for i in range(1000)} for h in answered["result"]["hits"])
    # 3,000 documents against 1,000 values: a set lookup each, not 3 million comparisons
    assert calls[0] == 0


def test_stdio_writes_an_unencodable_answer_escaped_and_keeps_serving(dispatcher, monkeypatch):
    import io

    from ladr_lab.server import serve_stdio

    real = dispatcher.handle_text
    raw = '{"jsonrpc":"2.0","id":1,"result":"\ud800"}'   # as if an engine bypassed the escaping
    monkeypatch.setattr(dispatcher, "handle_text",
                        lambda text, notify=None: raw if b'"bug"' in text else real(text, notify))
    stdin = io.BytesIO(b'{"jsonrpc":"2.0","id":1,"method":"bug"}\n{"jsonrpc":"2.0","id":"\\ud800","method":"ping"}\n'
                       b'{"jsonrpc":"2.0","id":3,"method":"ping"}\n')
    stdout = io.BytesIO()
    serve_stdio(dispatcher, stdin, stdout)
    lines = stdout.getvalue().decode("utf-8").splitlines()
    assert [json.loads(x)["id"] for x in lines] == [1, "\ud800", 3]
    assert lines[0] == '{"jsonrpc":"2.0","id":1,"result":"\\ud800"}'


# --- one table of error codes, read by both faces ----------------------------------------------------------------
class _Raising:
    """A SearchEngine whose every retrieve raises `exc` (and which has no `retrieve_json`)."""

    def __init__(self, exc):
        self.exc = exc

    def capabilities(self):
        return {}

    def retrieve(self, params, progress=None):
        raise self.exc


def _answered(exc):
    """The error object the JSON-RPC face answers and the one the MCP face's tool result carries, for `exc`
    (`call_retrieve` is the MCP tool's body; it needs no SDK)."""
    from ladr_lab.server.mcp_server import call_retrieve

    answer = call(Dispatcher(_Raising(exc)), "retrieve", {"query": "x"})["error"]
    result, failed = call_retrieve(_Raising(exc), {"query": "x"})
    assert failed
    return answer, result["error"]


def test_every_error_either_face_answers_has_one_entry_with_its_wire_code():
    """The codes on the wire, and the words the MCP face's text names them by, are those of before the table."""
    from ladr_lab.search.errors import InvalidRequestParams, OptionUnsupported, RequestTimeout, SnapshotGone
    from ladr_lab.server import protocol
    from ladr_lab.server.resources import ResourceMissing, ResourceRefused

    assert protocol.ERROR_CODES == {
        InvalidRequestParams: (-32602, "invalid params"), OptionUnsupported: (-32005, "option unsupported"),
        SnapshotGone: (-32010, "index version gone"), RequestTimeout: (-32001, "request timed out"),
        protocol._NoSuchMethod: (-32601, "method not found"),
        ResourceRefused: (-32602, "invalid params"), ResourceMissing: (-32002, "resource not found"),
        Exception: (-32603, "internal error")}
    words: dict[int, str] = {}
    for code, name in protocol.ERROR_CODES.values():   # a code is named by one set of words
        assert words.setdefault(code, name) == name
        assert protocol.words_of(code) == name
    assert protocol.words_of(-1) == "error"


@pytest.mark.parametrize("exc,code", [
    ("InvalidRequestParams", -32602), ("OptionUnsupported", -32005), ("SnapshotGone", -32010),
    ("RequestTimeout", -32001), ("SearchError", -32603), ("LadrError", -32603), ("ZeroDivisionError", -32603)])
def test_both_faces_answer_an_error_with_the_same_code(exc, code):
    import builtins

    import ladr_lab
    import ladr_lab.search.errors as search_errors
    from ladr_lab.server.protocol import code_of

    error = (getattr(ladr_lab, exc, None) or getattr(search_errors, exc, None) or getattr(builtins, exc))("went wrong")
    rpc, mcp = _answered(error)
    assert rpc["code"] == mcp["code"] == code_of(error) == code


def test_an_engine_that_writes_json_is_a_json_search_engine(dispatcher):
    from ladr_lab.search.pipeline import JsonSearchEngine, SearchEngine

    assert isinstance(dispatcher.engine, JsonSearchEngine)
    plain = _Raising(ValueError("x"))
    assert isinstance(plain, SearchEngine) and not isinstance(plain, JsonSearchEngine)


def test_an_over_long_session_id_is_invalid_params_naming_the_field_and_the_limit(dispatcher):
    from ladr_lab.search.request import MAX_SESSION_CHARS

    ok = call(dispatcher, "retrieve", {"query": "attention", "k": 1, "session": "s" * MAX_SESSION_CHARS})
    assert "result" in ok
    for sid in ("s" * (MAX_SESSION_CHARS + 1), "s" * (900 * 1024)):
        err = call(dispatcher, "retrieve", {"query": "attention", "k": 1, "session": sid})["error"]
        assert err["code"] == -32602
        assert err["message"] == (f"session must be at most {MAX_SESSION_CHARS} characters "
                                  f"(limits.maxSessionChars; got {len(sid)})")
    cursor = call(dispatcher, "retrieve", {"query": "attention", "k": 1})["result"]["nextCursor"]
    err = call(dispatcher, "retrieve", {"query": "attention", "cursor": cursor, "session": "s" * 1000})["error"]
    assert err["code"] == -32602 and err["message"].startswith("session ")


def test_initialize_reports_the_session_limits(dispatcher):
    from ladr_lab.search.cursors import MAX_SESSION_IDS, MAX_SESSIONS
    from ladr_lab.search.request import MAX_SESSION_CHARS, PARAMS_SCHEMA

    limits = call(dispatcher, "initialize")["result"]["capabilities"]["limits"]
    assert limits == {"maxRequestBytes": 1024 * 1024, "maxBatch": 1000, "maxSessionChars": MAX_SESSION_CHARS,
                      "maxSessions": MAX_SESSIONS, "maxSessionHits": MAX_SESSION_IDS, "requestTimeoutMs": 5000}
    assert (MAX_SESSION_CHARS, MAX_SESSIONS, MAX_SESSION_IDS) == (256, 1024, 100_000)
    assert PARAMS_SCHEMA["properties"]["session"]["maxLength"] == MAX_SESSION_CHARS


def test_sessions_past_the_cap_evict_the_least_recently_used_and_a_cursor_still_pages(dispatcher):
    from ladr_lab.search.cursors import MAX_SESSIONS

    sessions = dispatcher.engine.sessions
    first = call(dispatcher, "retrieve", {"query": "attention", "k": 1, "session": "old"})["result"]
    seen_id = first["hits"][0]["id"]
    for i in range(MAX_SESSIONS + 50):
        sessions.add(f"n{i}", [str(i)])
        assert len(sessions._seen) <= MAX_SESSIONS
    assert len(sessions._seen) == MAX_SESSIONS and "old" not in sessions._seen
    # the cursor of an evicted session still pages on (never repeating its own pages); the session starts anew
    second = call(dispatcher, "retrieve", {"query": "attention", "cursor": first["nextCursor"]})["result"]
    assert second["hits"] and seen_id not in [h["id"] for h in second["hits"]]
    again = call(dispatcher, "retrieve", {"query": "attention", "k": 1, "session": "old"})["result"]
    assert again["hits"][0]["id"] == seen_id   # forgotten: the evicted session's first hit may come again
