"""`Run.run(stop_before=...)`: breakpoints in the run loop (LangGraph's interrupt_before)."""
from __future__ import annotations

import pytest

from ladr_lab.engine import Run
from ladr_lab.models import ScriptedModel
from ladr_lab.trace import StepStart

STEPS = """
    - id: a
      nodes: 2
    - id: b
    - id: c
      nodes: 2
    """
SCRIPT = {"a": ["a1", "a2"], "b": ["b1"], "c": ["c1", "c2"]}


def _run(ladder, slates, steps=STEPS, script=SCRIPT, **kw) -> Run:
    return Run(ladder(steps), model=ScriptedModel(dict(script)), slates=slates, input="q", **kw)


def _called(run: Run) -> list[str]:
    return [c.step for c in run.trace.calls()]


def _events(run: Run) -> list[dict]:
    """The trace without what differs from run to run (times, the run id)."""
    drop = ("t", "run_id", "latency", "started_at")
    return [{k: v for k, v in e.to_dict().items() if k not in drop} for e in run.trace.events]


def test_the_run_stops_before_the_first_call_of_the_named_step(ladder, slates):
    run = _run(ladder, slates)
    res = run.run(stop_before=["b"])
    assert run.stopped_before == "b" and not run.done and res.status == "running"
    assert _called(run) == ["a", "a"] and res.llm_calls == 2 and run.llm_calls == 2
    assert [r.step for r in run.pending] == ["b"]              # b has started: its first call waits
    assert isinstance(run.trace.events[-1], StepStart) and run.trace.events[-1].step == "b"


def test_running_again_goes_on_past_the_step_it_stopped_at_and_ends_as_an_uninterrupted_run(ladder, slates):
    run = _run(ladder, slates)
    run.run(stop_before="b")
    assert run.stopped_before == "b" and run.llm_calls == 2
    res = run.run(stop_before="b")                 # already at b: b does not stop it again
    assert run.done and res.status == "completed" and run.stopped_before is None and res.llm_calls == 5
    whole = _run(ladder, slates)
    assert whole.run().llm_calls == 5
    assert _events(run) == _events(whole)


def test_several_breakpoints_stop_at_each_in_turn(ladder, slates):
    run = _run(ladder, slates)
    seen = []
    while not run.done:
        run.run(stop_before=("b", "c"))
        seen.append((run.stopped_before, run.llm_calls))
    assert seen == [("b", 2), ("c", 3), (None, 5)]
    whole = _run(ladder, slates)
    whole.run()
    assert _events(run) == _events(whole)


def test_a_fresh_run_whose_first_step_is_a_breakpoint_stops_before_any_call(ladder, slates):
    run = _run(ladder, slates)
    run.run(stop_before="a")
    assert run.stopped_before == "a" and run.llm_calls == 0 and [r.step for r in run.pending] == ["a", "a"]
    run.run(stop_before="a")
    assert run.done and run.llm_calls == 5


def test_a_breakpoint_never_reached_or_unknown_runs_to_the_end(ladder, slates):
    run = _run(ladder, slates)
    res = run.run(stop_before=["nope"])
    assert run.done and res.status == "completed" and run.stopped_before is None and res.llm_calls == 5


def test_step_clears_stopped_before(ladder, slates):
    run = _run(ladder, slates)
    run.run(stop_before="c")
    assert run.stopped_before == "c" and run.llm_calls == 3
    run.step()
    assert run.stopped_before is None and run.llm_calls == 4


@pytest.mark.parametrize("workers", [1, 4])
def test_parallel_calls_stop_at_the_same_place(ladder, slates, workers):
    run = _run(ladder, slates, max_workers=workers)
    run.run(stop_before="c")
    assert run.stopped_before == "c" and _called(run) == ["a", "a", "b"]
    run.run()
    assert run.done and run.llm_calls == 5


def test_a_step_of_a_child_run_is_no_breakpoint(ladder, slates):
    steps = """
        - id: a
        - id: b
          type: call
          call: { ladder: self, maxDepth: 1 }
        """
    run = _run(ladder, slates, steps=steps, script={"a": ["x", "y"]})
    res = run.run(stop_before="a")         # the child's own step "a" (depth 1) does not stop the run
    assert run.stopped_before == "a" and run.llm_calls == 0
    res = run.run(stop_before="a")
    assert run.done and res.status == "completed" and run.stopped_before is None and res.llm_calls == 2
    assert [(e.step, e.depth) for e in run.trace.events if isinstance(e, StepStart)] == [("a", 0), ("b", 0), ("a", 1), ("b", 1)]


def _stepper_loop(run: Run, stops: set[str]) -> str | None:
    """What `Stepper.run_all` did before `Run.run(stop_before=...)`: step and scan the new events."""
    events = run.trace.events
    while not run.done:
        seen = len(events)
        run.step()
        hit = [e.step for e in events[seen:] if isinstance(e, StepStart) and e.step in stops and not e.depth]
        if hit and not run.done:
            return hit[-1]
    return None


GROUP = """
    - id: a
    - id: g
      type: group
      steps:
        - id: g1
        - id: g2
    - id: c
    """


@pytest.mark.parametrize("steps, script, stops", [
    (STEPS, SCRIPT, {"b"}),
    (STEPS, SCRIPT, {"a", "c"}),
    (STEPS, SCRIPT, {"c", "nope"}),
    (GROUP, {"a": ["x"], "g1": ["y"], "g2": ["z"], "c": ["w"]}, {"g2", "c"}),
    (GROUP, {"a": ["x"], "g1": ["y"], "g2": ["z"], "c": ["w"]}, {"g"}),
])
def test_the_stops_are_those_the_stepper_made_by_stepping(ladder, slates, steps, script, stops):
    old, new = (_run(ladder, slates, steps=steps, script=script, max_workers=4) for _ in range(2))
    old.pending, new.pending        # noqa: B018  (started, as the Stepper's run is when Run all is pressed)
    while not old.done:
        hit = _stepper_loop(old, stops)
        new.run(stop_before=stops)
        assert new.stopped_before == hit and new.llm_calls == old.llm_calls and new.done == old.done
    assert _events(new) == _events(old)
