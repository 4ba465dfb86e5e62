"""The outline: a run's stories grouped as steps → loop iterations → nodes → rounds, at once or event by event."""
from __future__ import annotations

import ladr_lab.trace.story as story
from ladr_lab.trace.outline import Outline
from tests.helpers_display import big_trace, scripted_run
from tests.trace.test_story import _failing_run


def test_the_outline_groups_iterations_nodes_and_rounds():
    t = big_trace(rounds=120, nodes=3, per_node=4, huge_every=1000)
    o = Outline.of(t.events)
    assert len(o.rounds) == 120 and len(o.steps) == 10            # 12 rounds an iteration
    s = o.steps[1]
    assert s.iteration == 2 and sorted(s.nodes) == [1, 2, 3] and [r.round for r in s.nodes[2].rounds] == [1, 2, 3, 4]
    assert len(s.nodes[1].gates) == 1 and len(s.nodes[1].writes) == 1 and s.end is not None
    assert "iteration 2" in s.label and "3 of 3 survived" in s.headline()
    assert o.totals()["rounds"] == 120 and o.end is not None and o.start is not None


def test_the_outline_grows_event_by_event(ladder, slates):
    run = scripted_run(ladder, slates)
    o = Outline()
    changed = []
    run.trace.add_listener(lambda e: changed.append(o.add(e)))
    run.run()
    blocks = [b for b, _ in changed if b is not None]
    assert blocks and all(b is blocks[0] for b in blocks)           # one step execution
    assert [r.tag for r in o.rounds] == ["retrieval", "retrieval", "forced final"]
    assert o.end is not None and o.end.event.status == "completed"


def test_a_step_the_run_ended_by_its_error_does_not_say_running(ladder, slates):
    run = _failing_run(ladder, slates)
    assert run.run().status == "error"
    (block,) = Outline.of(run.trace.events).steps
    assert block.end is None and "running" not in block.headline()
    assert block.headline().endswith("ended by the run's error")
    live = Outline()
    for e in run.trace.events[:-1]:                     # before the run's end, the step is running
        live.add(e)
    assert live.steps[0].headline().endswith("; running")


def test_the_outline_is_its_own_module_and_the_stories_know_nothing_of_it():
    assert not {"Outline", "StepOutline", "NodeOutline"} & (set(vars(story)) | set(story.__all__))
    assert Outline.__module__ == "ladr_lab.trace.outline"
