"""`Trace.of`: the one coercion of anything that holds a run's events (a Trace, a Run, a JSONL path, events)."""
from __future__ import annotations

import json

import pytest

from ladr_lab.engine import Run
from ladr_lab.errors import TraceError
from ladr_lab.models import ScriptedModel
from ladr_lab.trace import StepStart, Trace

TWO_STEPS = """
- id: a
- id: b
"""

HAND_WRITTEN = [{"type": "run_start", "ladder": "x", "model": "m", "inputs": {}, "budget": {}},
                {"type": "step_start", "step": "a", "step_type": "normal", "nodes": 1},
                {"type": "run_end", "status": "completed"}]


def test_a_recorded_trace_and_a_runs_trace_are_returned_themselves(ladder, slates):
    run = Run(ladder(TWO_STEPS), model=ScriptedModel({"a": ["x"], "b": ["y"]}), slates=slates)
    assert Trace.of(run) is run.trace                      # not started: no events yet, still the live trace
    run.run()
    assert Trace.of(run) is run.trace and Trace.of(run.trace) is run.trace
    assert [e.seq for e in Trace.of(run).events] == list(range(len(run.trace.events)))


class _HasTrace:
    """Anything with a `.trace` Trace counts as a run (trace never imports the engine)."""

    def __init__(self, trace: Trace) -> None:
        self.trace = trace


def test_anything_with_a_trace_attribute_is_read_as_a_run():
    t = Trace()
    t.emit(StepStart(step="s", step_type="normal", nodes=1))
    assert Trace.of(_HasTrace(t)) is t


def test_a_path_is_loaded_and_a_bad_one_names_the_file(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_text("".join(json.dumps(d) + "\n" for d in HAND_WRITTEN))
    for given in (path, str(path)):
        t = Trace.of(given)
        assert [e.type for e in t.events] == ["run_start", "step_start", "run_end"]
        assert [e.seq for e in t.events] == [0, 1, 2]
    with pytest.raises(TraceError, match="missing.jsonl"):
        Trace.of(tmp_path / "missing.jsonl")


def test_events_as_dicts_or_typed_are_numbered_by_position():
    t = Trace.of(HAND_WRITTEN)
    assert [e.type for e in t.events] == ["run_start", "step_start", "run_end"]
    assert [e.seq for e in t.events] == [0, 1, 2]
    typed = [StepStart(step="a", step_type="normal", nodes=1), StepStart(step="b", step_type="normal", nodes=1)]
    assert all(e.seq is None for e in typed)
    again = Trace.of(typed)
    assert [e.seq for e in again.events] == [0, 1] and [e.step for e in again.events] == ["a", "b"]
    assert Trace.of(e for e in typed).events == again.events        # any iterable, a generator too


def test_a_trace_with_events_lacking_seq_is_copied_numbered_and_kept_whole():
    t = Trace()
    t.events.append(StepStart(step="a", step_type="normal", nodes=1, seq=7))
    t.events.append(StepStart(step="b", step_type="normal", nodes=1))
    t.torn_line = 3
    got = Trace.of(t)
    assert got is not t and [e.seq for e in got.events] == [7, 1] and got.torn_line == 3
    assert t.events[1].seq is None                                   # the given trace is left as it was


@pytest.mark.parametrize("bad", [42, None, b"{}", {"type": "run_start"}])
def test_what_holds_no_events_is_refused(bad):
    with pytest.raises(TypeError, match="Trace.of takes"):
        Trace.of(bad)
