"""Watching a call's text as it is generated, and stopping it (models/stream.py, `Run(watch=...)`, `Run.cancel()`):
the watchers see every piece, the trace records exactly what an unwatched run records, and a stopped call is a
cancelled `llm_error` that stays pending, so the run goes on from the same call."""
from __future__ import annotations

import json
import threading
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ladr_lab import CallCancelled, load_trace
from ladr_lab.engine import Run
from ladr_lab.models import CallInfo, Completion, ScriptedModel, TokenStream

ANSWERS = {"research": ['{"request": {"files": ["core.md"]}}', "Dedup is  per step,\nper node. "]}
STEPS = """
- id: research
  fields:
    - { name: Question, type: text, from: input.context }
  retrieve:
    to: { slate: Knowledge, folder: docs }
    as: Docs
    maxRounds: 2
    requestMatch: { type: object, required: [request], properties: { request: { type: object } } }
"""
# what differs between two runs whatever they do: clocks, ids, and the speeds only a watched call measures
VOLATILE = {"t", "latency", "run_id", "started_at", "ttft", "prompt_tps", "gen_tps"}


class Recorder:
    """A CallWatcher that keeps what it saw."""

    def __init__(self) -> None:
        self.seen: list[tuple] = []
        self.lock = threading.Lock()

    def started(self, stream: TokenStream) -> None:
        with self.lock:
            self.seen.append(("started", stream.info.step, stream.info.round))

    def wrote(self, stream: TokenStream, text: str) -> None:
        with self.lock:
            self.seen.append(("wrote", text))

    def ended(self, stream: TokenStream) -> None:
        with self.lock:
            self.seen.append(("ended", stream.text, stream.cancelled))

    def texts(self) -> list[str]:
        return [x[1] for x in self.seen if x[0] == "ended"]


def stable(path) -> list[dict]:
    """A trace's events without what differs between any two runs."""
    return [{k: v for k, v in e.to_dict().items() if k not in VOLATILE} for e in load_trace(path).events]


def test_a_watched_run_records_the_same_trace_as_an_unwatched_one(ladder, slates, tmp_path):
    plain = Run(ladder(STEPS), model=ScriptedModel(ANSWERS), input="q", slates=slates, trace_out=tmp_path / "a.jsonl")
    plain.run()
    watcher = Recorder()
    watched = Run(ladder(STEPS), model=ScriptedModel(ANSWERS, stream_delay=0.001), input="q", slates=slates,
                  trace_out=tmp_path / "b.jsonl", watch=watcher)
    watched.run()
    assert watched.result.status == plain.result.status == "completed"
    assert stable(tmp_path / "a.jsonl") == stable(tmp_path / "b.jsonl")
    # the watcher saw both calls grow a word at a time, and each ended with the answer the trace records
    assert watcher.texts() == [c.output for c in watched.trace.calls()] == ANSWERS["research"]
    pieces = [x[1] for x in watcher.seen if x[0] == "wrote"]
    assert "".join(pieces) == "".join(ANSWERS["research"]) and len(pieces) == 9
    assert [x[:3] for x in watcher.seen if x[0] == "started"] == [("started", "research", 1), ("started", "research", 2)]
    # a streamed call measures how fast it went
    second = watched.trace.calls()[1]
    assert second.ttft is not None and second.ttft > 0 and second.gen_tps is not None and second.gen_tps > 0
    assert plain.trace.calls()[1].ttft is None


def test_a_model_that_does_not_stream_is_shown_whole_when_it_returns(ladder, slates):
    watcher = Recorder()
    Run(ladder(STEPS), model=ScriptedModel(ANSWERS), input="q", slates=slates, watch=[watcher]).run()
    assert [x for x in watcher.seen if x[0] == "wrote"] == [("wrote", a) for a in ANSWERS["research"]]


def _stop_when_writing(run: Run, *, after: int = 1) -> threading.Thread:
    """Cancel the run's call (from another thread, as a Stop button does) once `after` pieces have been written."""
    def stop():
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            flying = run.in_flight
            if flying and flying[0].pieces >= after:
                assert run.cancel() == 1
                return
            time.sleep(0.005)
    t = threading.Thread(target=stop)
    t.start()
    return t


class StopAfter(Recorder):
    """A watcher that stops the run's call once it has written `n` pieces of round 2 (deterministic: the model's next
    pause sees the cancel)."""

    def __init__(self, n: int) -> None:
        super().__init__()
        self.n, self.run = n, None

    def wrote(self, stream, text):
        super().wrote(stream, text)
        if stream.info.round == 2 and stream.pieces == self.n and self.run is not None:
            assert self.run.cancel() == 1


def test_a_stopped_call_is_recorded_as_cancelled_and_the_run_makes_it_again(ladder, slates, tmp_path):
    watcher = StopAfter(2)
    model = ScriptedModel(ANSWERS, stream_delay=0.01)
    run = Run(ladder(STEPS), model=model, input="q", slates=slates, watch=watcher, trace_out=tmp_path / "t.jsonl")
    watcher.run = run
    run.step()                                   # round 1: the request
    pending = run.pending[0]
    events = run.step()                          # round 2, stopped after two words
    watcher.run = None
    assert [e.type for e in events] == ["llm_error"]
    err = events[0]
    assert err.cancelled is True and err.partial == "Dedup is  " and err.round == 2 and err.latency > 0
    assert "CallCancelled" in err.error and "stopped after 10 characters" in err.error
    assert err.messages == pending.messages
    # nothing was counted or delivered: the same call waits, and stepping makes it again, answered in full
    assert not run.done and run.llm_calls == 1 and run.pending == [pending]
    assert watcher.seen[-1] == ("ended", "Dedup is  ", True)
    assert "stopped after" in err.to_text() and "stayed pending, to be made again" in err.to_text()
    again = run.step()
    assert [e.type for e in again if e.type == "llm_call"] == ["llm_call"]
    assert run.trace.calls()[-1].output == ANSWERS["research"][1]
    run.run()
    assert run.result.status == "completed" and run.llm_calls == 2
    # the trace file holds the cancelled call, and reads back as one
    back = [e for e in load_trace(tmp_path / "t.jsonl").events if e.type == "llm_error"]
    assert len(back) == 1 and back[0].cancelled and back[0].partial == "Dedup is  "
    line = next(json.loads(x) for x in (tmp_path / "t.jsonl").read_text().splitlines() if '"llm_error"' in x)
    assert line["cancelled"] is True and line["iteration"] == 1


def test_cancel_during_run_returns_with_the_run_still_going(ladder, slates):
    run = Run(ladder(STEPS), model=ScriptedModel(ANSWERS, stream_delay=0.05), input="q", slates=slates,
              watch=Recorder())
    stopper = _stop_when_writing(run, after=1)
    res = run.run()
    stopper.join()
    assert res.status == "running" and not run.done
    err = run.trace.events[-1]
    assert err.type == "llm_error" and err.cancelled and err.partial and ANSWERS["research"][0].startswith(err.partial)
    assert [e.type for e in run.trace.events if e.type in ("llm_call", "llm_error")][-1] == "llm_error"
    assert run.run().status == "completed"        # run() again goes on from the stopped call


def test_cancel_with_parallel_nodes_stops_every_call_in_flight(ladder, slates):
    steps = """
- id: fan
  nodes: 3
"""
    model = ScriptedModel(lambda messages, call: "a b c d e f g h", max_concurrency=3, stream_delay=0.05)
    run = Run(ladder(steps), model=model, input="q", slates=slates, watch=Recorder())

    def stop():
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not (len(run.in_flight) == 3
                                                     and all(s.pieces for s in run.in_flight)):
            time.sleep(0.005)
        run.cancel()
    t = threading.Thread(target=stop)
    t.start()
    res = run.run()
    t.join()
    errors = [e for e in run.trace.events if e.type == "llm_error"]
    assert res.status == "running" and len(errors) == 3 and all(e.cancelled for e in errors)
    assert sorted(e.node for e in errors) == [1, 2, 3] and len(run.pending) == 3
    assert run.run().status == "completed" and run.llm_calls == 3


def test_a_model_that_ignores_the_stream_is_stopped_when_it_returns(ladder, slates):
    started = threading.Event()

    def slow(messages, call):
        started.set()
        time.sleep(0.3)
        return "late answer"
    run = Run(ladder(STEPS), model=ScriptedModel(slow), input="q", slates=slates)   # nobody watches
    t = threading.Thread(target=lambda: (started.wait(10), run.cancel()))
    t.start()
    events = run.step()
    t.join()
    assert [e.type for e in events] == ["run_start", "step_start", "llm_error"]
    assert events[-1].cancelled and events[-1].partial == "" and "late answer" not in events[-1].to_text()
    assert not run.done and run.llm_calls == 0


def test_a_broken_watcher_is_dropped_with_a_warning_and_the_call_goes_on(ladder, slates):
    class Broken:
        def started(self, stream):
            raise RuntimeError("boom")

    run = Run(ladder(STEPS), model=ScriptedModel(ANSWERS), input="q", slates=slates, watch=[Broken()])
    with pytest.warns(RuntimeWarning, match="call watcher .* failed and was dropped: RuntimeError: boom"):
        run.run()
    assert run.result.status == "completed"


def test_stream_cancel_runs_hooks_and_check_raises():
    s = TokenStream(CallInfo(step="s", node=2, round=3))
    hits = []
    forget = s.on_cancel(lambda: hits.append(1))
    s.on_cancel(lambda: hits.append(2))
    forget()
    s.write("abc")
    s.check()              # not cancelled: nothing happens
    s.cancel()
    s.cancel()             # once only
    assert hits == [2] and s.cancelled
    with pytest.raises(CallCancelled, match="s/2 round 3 was stopped after 3 characters"):
        s.check()
    s.on_cancel(lambda: hits.append(3))    # registered after the cancel: runs at once
    assert hits == [2, 3]


@settings(max_examples=60, deadline=None)
@given(st.text(min_size=0, max_size=60))
def test_a_scripted_answer_streams_in_pieces_that_add_up_to_it(text):
    stream = TokenStream(CallInfo(step="s"))
    out = ScriptedModel([text], stream_delay=1e-6).complete([], call=CallInfo(step="s", stream=stream))
    assert out.text == text and stream.text == text


def test_stream_delay_is_checked():
    from ladr_lab.errors import ModelError

    for bad in (-1, "fast", True):
        with pytest.raises(ModelError, match="stream_delay must be a number of seconds"):
            ScriptedModel(["x"], stream_delay=bad)


def test_completion_speeds_default_to_unknown():
    c = Completion("x")
    assert (c.ttft, c.prompt_tps, c.gen_tps) == (None, None, None)


def test_a_call_waiting_for_its_rate_limit_stops_waiting_when_cancelled():
    """A watched call held by the rate limiter (models/limited.py) is cancelled while it waits, without waiting out
    its turn (the limiter here grants one call an hour: a wait that did not stop would hang the test)."""
    from ladr_lab.models.limited import LimitedModel, RateLimiter

    model = LimitedModel(ScriptedModel(["a", "b"]), RateLimiter("1/h"), "openai")
    assert model.complete([], call=CallInfo(step="s")).text == "a"        # the hour's one token
    stream = TokenStream(CallInfo(step="s"))
    threading.Timer(0.2, stream.cancel).start()
    with pytest.raises(CallCancelled):
        model.complete([], call=CallInfo(step="s", stream=stream))
