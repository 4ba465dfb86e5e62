"""Streaming remote models (models/stream.py): `OpenAICompatModel` reads the server's events as they come, and
litellm models call with `stream=True`; a streamed call answers exactly what the unstreamed one does (text, tokens,
cost), the run's trace is the same, and a cancel stops a call waiting on the server at once. A fake
OpenAI-compatible server on 127.0.0.1 answers both ways."""
from __future__ import annotations

import json
import threading

import pytest

from ladr_lab import CallCancelled, load_trace
from ladr_lab.engine import Run
from ladr_lab.errors import ModelError
from ladr_lab.models import CallInfo, TokenStream, get_model
from tests.helpers_openai import ANSWER, MSGS, PIECES, Fake, serve


@pytest.fixture
def base():
    with serve() as url:
        yield url


def _watched(**kw) -> tuple[CallInfo, TokenStream]:
    info = CallInfo(step="s", **kw)
    stream = TokenStream(info)
    return CallInfo(step="s", stream=stream, **kw), stream


def test_a_streamed_call_answers_what_the_unstreamed_one_does(base):
    model = get_model("openai/gpt-4o-mini", options={"api_base": base, "api_key": "x", "temperature": 0})
    plain = model.complete(MSGS, call=CallInfo(step="s"))
    info, stream = _watched()
    streamed = model.complete(MSGS, call=info)
    assert streamed.text == plain.text == ANSWER and stream.text == ANSWER and stream.pieces == len(PIECES)
    assert (streamed.tokens_in, streamed.tokens_out, streamed.cost) == (plain.tokens_in, plain.tokens_out, plain.cost)
    assert streamed.cost > 0
    assert "stream" not in Fake.bodies[0]
    assert Fake.bodies[1]["stream"] is True and Fake.bodies[1]["stream_options"] == {"include_usage": True}
    assert {k: v for k, v in Fake.bodies[1].items() if not k.startswith("stream")} == Fake.bodies[0]
    # the streamed answer was read to its end: the kept-alive connection serves the next call
    model.complete(MSGS, call=_watched()[0])
    assert len(set(Fake.ports)) == 1 and len(model._conns) == 1


def test_server_sent_events_are_read_as_the_format_says(base):
    """Comments, other fields and a `data:` without its space are read as the SSE format says."""
    Fake.extra_lines = [": keep-alive", "event: message", "id: 7", ""]
    model = get_model("openai/m", options={"api_base": base, "api_key": "x"})
    info, stream = _watched()
    assert model.complete(MSGS, call=info).text == ANSWER == stream.text


def test_an_error_sent_mid_stream_is_the_calls_error(base, monkeypatch):
    def errored(self, text):
        data = text.replace('"delta": {"content": " is per"}', '"delta": {}').encode()
        if b'" step' in data:
            data = b'data: {"error": {"message": "the model crashed"}}\n\n'
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()
    monkeypatch.setattr(Fake, "_send", errored)
    model = get_model("openai/m", options={"api_base": base, "api_key": "x"})
    with pytest.raises(ModelError, match='model "openai/m" failed: the model crashed'):
        model.complete(MSGS, call=_watched()[0])


def test_a_cancel_stops_a_call_that_waits_on_the_server(base):
    """The server sends one piece and then nothing: a cancel shuts the socket, so the read returns at once (the
    call's timeout, 60 s, is not what ends it), and the model's next call opens a new connection."""
    Fake.stall.set()
    model = get_model("openai/m", options={"api_base": base, "api_key": "x", "timeout": 60, "max_retries": 0})
    info, stream = _watched()
    got = []
    threading.Thread(target=lambda: (_wait_for(lambda: stream.pieces == 1), stream.cancel())).start()
    with pytest.raises(CallCancelled, match="stopped after 5 characters"):
        try:
            model.complete(MSGS, call=info)
        except BaseException as exc:
            got.append(exc)
            raise
    assert stream.text == "Dedup" and not model._conns
    Fake.stall.clear()
    assert model.complete(MSGS, call=_watched()[0]).text == ANSWER


def _wait_for(cond, seconds: float = 30.0) -> None:
    import time

    deadline = time.monotonic() + seconds
    while not cond() and time.monotonic() < deadline:
        time.sleep(0.005)


def test_a_run_streamed_records_the_trace_of_the_run_unstreamed(base, ladder, slates, tmp_path):
    """The same ladder against the same server: once unwatched, once watched (streamed); the traces are the same
    event for event, but for clocks and the speeds only a streamed call measures."""
    steps = """
- id: research
  fields:
    - { name: Question, type: text, from: input.context }
  retrieve:
    to: { slate: Knowledge, folder: docs }
    as: Docs
    maxRounds: 2
    requestMatch: { type: object, required: [files], properties: { files: { type: array } } }
"""
    request = '{"files": ["core.md"]}'
    final = "Per step — “per node”, 😀\nfrom core.md."
    opts = {"api_base": base, "api_key": "x", "temperature": 0}
    traces = []
    for name, watch in (("plain", None), ("streamed", _Pieces())):
        Fake.answers = [request, final]
        out = tmp_path / f"{name}.jsonl"
        run = Run(ladder(steps), model="openai/fake", model_options=opts, input="q", slates=slates, trace_out=out,
                  cache=False, watch=watch)
        assert run.run().status == "completed"
        traces.append(out)
    volatile = {"t", "latency", "run_id", "started_at", "ttft", "prompt_tps", "gen_tps"}
    plain, streamed = ([{k: v for k, v in e.to_dict().items() if k not in volatile} for e in load_trace(p).events]
                       for p in traces)
    assert plain == streamed
    assert [c.output for c in load_trace(traces[1]).calls()] == [request, final]
    assert [b.get("stream") for b in Fake.bodies] == [None, None, True, True]
    last = load_trace(traces[1]).calls()[-1]
    assert last.ttft is not None and last.gen_tps and last.prompt_tps is None    # measured from the stream
    assert load_trace(traces[0]).calls()[-1].gen_tps is None


class _Pieces:
    def __init__(self) -> None:
        self.pieces: list[str] = []

    def started(self, stream):
        pass

    def wrote(self, stream, text):
        self.pieces.append(text)

    def ended(self, stream):
        pass


def test_llama_cpp_server_timings_are_the_calls_speeds(base, monkeypatch):
    real = json.dumps

    def with_timings(doc, *a, **kw):
        if isinstance(doc, dict) and "usage" in doc:
            doc = {**doc, "timings": {"prompt_per_second": 812.5, "predicted_per_second": 14.25}}
        return real(doc, *a, **kw)
    monkeypatch.setattr(json, "dumps", with_timings)
    model = get_model("openai/m", options={"api_base": base, "api_key": "x"})
    for call in (CallInfo(step="s"), _watched()[0]):
        out = model.complete(MSGS, call=call)
        assert (out.prompt_tps, out.gen_tps) == (812.5, 14.25)


def test_litellm_streams_too_and_answers_the_same(base):
    """`litellm:openai/...` goes through litellm (stream=True): the same text, tokens and cost as unstreamed."""
    model = get_model("litellm:openai/gpt-4o-mini", options={"api_base": base, "api_key": "x"})
    plain = model.complete(MSGS, call=CallInfo(step="s"))
    info, stream = _watched()
    streamed = model.complete(MSGS, call=info)
    assert streamed.text == plain.text == ANSWER == stream.text and stream.pieces == len(PIECES)
    assert (streamed.tokens_in, streamed.tokens_out) == (plain.tokens_in, plain.tokens_out) == (321, 23)
    assert streamed.cost == pytest.approx(plain.cost) and plain.cost > 0
    assert Fake.bodies[-1]["stream"] is True and Fake.bodies[-1]["stream_options"] == {"include_usage": True}


def test_litellm_stops_between_chunks_when_cancelled(base):
    model = get_model("litellm:openai/m", options={"api_base": base, "api_key": "x"})
    info, stream = _watched()

    class Stop:
        def started(self, s):
            pass

        def wrote(self, s, text):
            if s.pieces == 2:
                s.cancel()

        def ended(self, s):
            pass
    stream.watchers.append(Stop())
    with pytest.raises(CallCancelled):
        model.complete(MSGS, call=info)
    assert stream.text == "".join(PIECES[:2])


def test_a_mock_response_streams_with_litellm():
    model = get_model("openai/gpt-4o-mini", options={"mock_response": ANSWER})
    info, stream = _watched()
    assert model.complete(MSGS, call=info).text == ANSWER == stream.text and stream.pieces > 1


def test_a_cancelled_call_made_again_is_cached_as_the_first_occurrence(base, tmp_path):
    """The response cache counts identical requests of a run (occurrence 1, 2, ...): a call stopped and made again is
    still occurrence 1, so the next run's same request is answered from the cache."""
    opts = {"api_base": base, "api_key": "x"}
    model = get_model("openai/m", options=opts, cache=tmp_path / "cache")
    info, stream = _watched()

    class Stop:
        def started(self, s):
            pass

        def wrote(self, s, text):
            s.cancel()

        def ended(self, s):
            pass
    stream.watchers.append(Stop())
    with pytest.raises(CallCancelled):
        model.complete(MSGS, call=info)
    assert model.complete(MSGS, call=_watched()[0]).text == ANSWER          # made again, in full: stored
    asked = len(Fake.bodies)
    again = get_model("openai/m", options=opts, cache=tmp_path / "cache")   # the next run
    out = again.complete(MSGS, call=CallInfo(step="s"))
    assert out.provenance == "cached" and out.text == ANSWER and len(Fake.bodies) == asked
