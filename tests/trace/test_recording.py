"""The Trace: listeners never break the run they watch, attach and detach, and events are typed objects."""
from __future__ import annotations

import dataclasses
import io
import json

import pytest

from ladr_lab.engine import Run
from ladr_lab.models import ScriptedModel
from ladr_lab.trace import (
    EVENT_TYPES,
    Event,
    Fetched,
    ListenerWarning,
    LlmCall,
    RunEnd,
    StepStart,
    Trace,
    UnknownEvent,
    Write,
)

TWO_STEPS = """
- id: a
- id: b
"""


@pytest.mark.parametrize("fails_on", ["run_start", "llm_call", "step_end", "run_end"])
def test_a_listener_that_raises_never_fails_the_run(ladder, slates, fails_on):
    seen = []

    def broken(event):
        seen.append(event.type)
        if event.type == fails_on:
            raise RuntimeError("view exploded")

    run = Run(ladder(TWO_STEPS), model=ScriptedModel({"a": ["x"], "b": ["y"]}), slates=slates, tracer=broken)
    with pytest.warns(ListenerWarning, match="view exploded"):
        res = run.run()
    assert res.status == "completed" and res.output == "y" and res.error is None
    assert seen[-1] == "run_end"                       # it kept being called after it failed
    failures = run.trace.listener_errors
    assert failures and all(f.event.type == fails_on for f in failures) and failures[0].listener is broken
    assert isinstance(failures[0].exception, RuntimeError)


def test_a_failing_listener_is_warned_about_once(ladder, slates):
    def always(event):
        raise ValueError("nope")

    run = Run(ladder(TWO_STEPS), model=ScriptedModel({"a": ["x"], "b": ["y"]}), slates=slates, tracer=always)
    with pytest.warns(ListenerWarning) as caught:
        run.run()
    assert len([w for w in caught if issubclass(w.category, ListenerWarning)]) == 1
    assert len(run.trace.listener_errors) == len(run.trace.events)


def test_listening_attaches_for_a_block_only(ladder, slates):
    run = Run(ladder(TWO_STEPS), model=ScriptedModel({"a": ["x"], "b": ["y"]}), slates=slates)
    got = []
    with run.trace.listening(got.append):
        run.step()
    n = len(got)
    run.run()
    assert n > 0 and len(got) == n and got == run.trace.events[:n]
    run.trace.remove_listener(got.append)  # removing one that is gone is not an error


def test_emit_takes_typed_events_and_stamps_seq_and_t():
    t = Trace()
    with pytest.raises(TypeError):
        t.emit({"type": "run_start"})  # type: ignore[arg-type]
    e = t.emit(StepStart(step="s", step_type="normal", nodes=1))
    assert (e.seq, e.type) == (0, "step_start") and e.t >= 0
    assert t.emit(StepStart(step="s", step_type="normal", nodes=1)).seq == 1


def test_the_sink_gets_one_json_line_per_event():
    buf = io.StringIO()
    t = Trace(buf)
    t.emit(RunEnd(status="completed", output="o", error=None, llm_calls=0, steps=0))
    (line,) = buf.getvalue().splitlines()
    assert list(json.loads(line)) == ["type", "seq", "t", "status", "output", "error", "llm_calls", "steps"]


def test_optional_fields_are_written_only_when_set_and_required_ones_always():
    base = dict(step="s", node=1, round=1, iteration=1, messages=[], output="o", forced_final=False, model="m")
    plain = LlmCall(**base, request_match=None).to_dict()
    assert "reason" not in plain and "top_k" not in plain and plain["request_match"] is None
    retrieval = LlmCall(**base, request_match="retrieval", reason="r", request={}, fetched=()).to_dict()
    assert retrieval["top_k"] is None and retrieval["fetched"] == []        # top_k is written for retrievals
    w = Write(step="s", node=1, mechanism="slateWrite", target="T", policy="append", status="skipped",
              reason="no JSON").to_dict()
    assert list(w) == ["type", "step", "node", "mechanism", "target", "policy", "status", "reason"]


def test_child_run_events_carry_depth_and_callers_last():
    e = dataclasses.replace(StepStart(step="s", step_type="normal", nodes=1), depth=2, caller=("c/1", "c/2"))
    d = e.to_dict()
    assert list(d)[-2:] == ["depth", "caller"] and d["caller"] == ["c/1", "c/2"]
    assert Event.from_dict(d) == e


def test_unknown_types_and_keys_are_kept_whole():
    d = {"type": "from_the_future", "seq": 3, "t": 0.5, "anything": [1, 2]}
    e = Event.from_dict(d)
    assert isinstance(e, UnknownEvent) and e.type == "from_the_future" and e.to_dict() == d
    newer = {"type": "step_end", "seq": 1, "t": 0.1, "step": "s", "survivors": 1, "nodes": 1, "jump": None,
             "iteration": 1, "added_later": True}
    assert Event.from_dict(newer).to_dict() == newer and Event.from_dict(newer).get("added_later") is True


def test_an_older_trace_missing_a_field_still_reads():
    e = Event.from_dict({"type": "gate", "step": "s", "node": 1})
    assert e.type == "gate" and e.condition == "" and e.jump is None and e.verdict is None


def test_a_line_with_only_some_fields_gets_usable_defaults():
    call = Event.from_dict({"type": "llm_call"}, 4)
    assert isinstance(call, LlmCall) and call.seq == 4
    assert (call.step, call.node, call.round, call.iteration, call.messages, call.output) == ("", 1, 1, 1, [], "")
    assert call.forced_final is None and call.request_match is None and call.prompt_sections()[0].text == ""
    # SPEC §9's required llm_call fields only: no seq, no iteration; Trace.call finds it
    spec = {"type": "llm_call", "step": "s", "node": 2, "round": 1, "messages": [], "output": "x",
            "forced_final": False, "request_match": None}
    t = Trace()
    t.events.append(Event.from_dict(spec))
    assert t.call("s", 2, 1).output == "x" and t.events[0].seq is None
    assert Event.from_dict({**spec, "iteration": None}).iteration == 1
    assert Event.from_dict({"type": "step_start", "step": "s"}).to_dict()["nodes"] is None   # a count: unknown


def test_every_event_type_has_a_class_and_round_trips():
    assert set(EVENT_TYPES) == {"run_start", "step_start", "llm_call", "llm_error", "gate", "write", "call",
                                "step_end", "run_end", "internal_error"}
    f = Fetched(path="a.md", mode="files", status="fetched", chars=3, asked="./a.md", truncated=True, total_bytes=9)
    assert Fetched.from_dict(f.to_dict()) == f


@pytest.mark.parametrize("output", ["final \udc80 answer", '{"request": {"files": ["\ud800.md"]}}'])
def test_a_lone_surrogate_in_a_model_output_reaches_the_trace_file_and_ends_no_run(tmp_path, output) -> None:
    from ladr_lab import load_ladder_text
    ladder = load_ladder_text("name: s\nsteps:\n  - id: a\n    systemPrompt: answer\n")
    outputs = iter([output, "done"])
    run = Run(ladder, model=ScriptedModel(lambda messages, **_: next(outputs)), input="q",
              trace_out=tmp_path / "t.jsonl")
    assert run.run().status == "completed"
    calls = [json.loads(line) for line in (tmp_path / "t.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [c["output"] for c in calls if c["type"] == "llm_call"][0] == output   # the same text, read back


def test_a_trace_file_that_is_not_jsonl_is_a_trace_error_naming_file_and_line(tmp_path):
    import pytest

    from ladr_lab.errors import LadrError, TraceError
    from ladr_lab.trace import load_trace
    bad = tmp_path / "garbage.jsonl"
    bad.write_text('{"type": "run_start", "seq": 0}\n\nnot json\n')
    with pytest.raises(TraceError, match=r"garbage\.jsonl, line 3: not a JSON line"):
        load_trace(bad)
    bad.write_text('[1, 2]\n')
    with pytest.raises(TraceError, match="line 1: a trace line is a JSON object"):
        load_trace(bad)
    bad.write_bytes(b'{"type": "run_start"}\n\xff\xfe\n')
    with pytest.raises(TraceError, match="not UTF-8"):
        load_trace(bad)
    with pytest.raises(LadrError, match="cannot read trace .*nothing-here.jsonl"):
        load_trace(tmp_path / "nothing-here.jsonl")


def test_a_last_line_cut_mid_write_is_skipped_and_said_the_rest_is_read(tmp_path) -> None:
    from ladr_lab import load_ladder_text
    from ladr_lab.errors import TraceError
    from ladr_lab.trace import load_trace
    ladder = load_ladder_text("name: s\nsteps:\n  - id: a\n    systemPrompt: answer\n")
    whole = tmp_path / "whole.jsonl"
    Run(ladder, model=ScriptedModel({"a": ["done"]}), input="q", trace_out=whole).run()
    lines = whole.read_text(encoding="utf-8").splitlines(keepends=True)
    cut = tmp_path / "cut.jsonl"
    cut.write_text("".join(lines[:3]) + lines[3][:40], encoding="utf-8")     # killed while writing line 4
    t = load_trace(cut)
    assert len(t.events) == 3 and t.torn_line == 4
    assert load_trace(whole).torn_line is None
    # a bad line anywhere else, or a last line that ends with its newline, is still an error
    cut.write_text("".join(lines[:3]) + lines[3][:40] + "\n", encoding="utf-8")
    with pytest.raises(TraceError, match="line 4"):
        load_trace(cut)
    from ladr_lab.cli import main
    cut.write_text("".join(lines[:3]) + lines[3][:40], encoding="utf-8")
    import contextlib
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["show", str(cut)]) == 0
    assert "(line 4, the last, was cut mid-write and is skipped)" in out.getvalue()
    assert "the run was cut short" in out.getvalue()

_LADDER_FOR_SHOW = """\
name: show-live
steps:
  - id: answer
    fields:
      - { name: Question, type: text, from: input.context }
"""


def test_show_tells_a_run_still_going_from_one_cut_short(tmp_path):
    """A trace whose writer still holds it open (a run in progress, here in this process) is "still going"; once its
    writer closed it (or died) without a run_end, it was "cut short"."""
    import contextlib

    from ladr_lab.cli import main
    from ladr_lab.config import load_ladder_text
    from ladr_lab.trace import is_being_written

    path = tmp_path / "live.jsonl"
    run = Run(load_ladder_text(_LADDER_FOR_SHOW), model=ScriptedModel({"*": ["done"]}), input="q", trace_out=path)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["show", str(path)]) == 0
    assert is_being_written(path)
    assert "the run is still going" in out.getvalue() and "cut short" not in out.getvalue()
    run.run()
    run.trace.close()
    assert not is_being_written(path)
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    path.write_text("".join(lines[:-1]), encoding="utf-8")   # the run_end gone, nobody writing: cut short
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["show", str(path)]) == 0
    assert "the run was cut short" in out.getvalue() and "still going" not in out.getvalue()
