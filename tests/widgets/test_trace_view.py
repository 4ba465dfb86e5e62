"""TraceView: steps, iterations, nodes and rounds opened on demand, prompts a chunk at a time, live updates
from the trace's listeners, and paging for long runs."""
from __future__ import annotations

import pytest

pytest.importorskip("ipywidgets")

from ladr_lab.widgets import TraceView  # noqa: E402
from ladr_lab.widgets.parts import CHUNK  # noqa: E402
from tests.helpers_display import big_trace, scripted_run, walk, with_class  # noqa: E402


def _html(widget) -> str:
    return "".join(getattr(w, "value", "") for w in walk(widget) if isinstance(getattr(w, "value", None), str))


def test_a_finished_run_shows_its_steps_and_opens_a_round(ladder, slates):
    run = scripted_run(ladder, slates)
    run.run()
    tv = TraceView(run.trace)
    assert "ladr-trace-view" in tv.widget._dom_classes
    assert "completed" in tv.header.value and "3 rounds" in tv.header.value
    assert "<svg" in tv.chart.value                        # prompt size per round
    step = tv.step_fold("research")
    assert not step.built                                  # nothing below a closed fold exists yet
    fold = tv.open_round("research", 1, 2)
    assert step.built and fold.is_open
    body = _html(fold.widget)
    assert "already_in_context" in body and "faq.md" in body and "why" in body
    heads = [s.children[0].children[1].value for s in with_class(fold.widget, "ladr-section")]
    assert len(heads) == 3 and "systemPrompt" in heads[0] and "Question" in heads[1] and "Docs 1" in heads[2]
    gates = _html(step.widget)
    assert "gate" in gates and "Memory/facts/notes.md" in gates and "written" in gates


def test_a_huge_prompt_section_is_sent_a_chunk_at_a_time():
    t = big_trace(rounds=20, nodes=1, per_node=20, huge_every=3, huge_chars=400_000)
    tv = TraceView(t)
    fold = tv.open_round("research", 1, 3)
    section = with_class(fold.widget, "ladr-section")[-1]
    section.children[0].children[0].click()                # open the 400,000-character retrieved block
    text = section.children[1].children[0]
    shown = text.children[0].value
    assert len(shown) < CHUNK + 2000 and "lorem ipsum" in shown
    more = text.children[1]
    assert more.description.startswith(f"Show {CHUNK:,} more of")
    more.click()
    assert len(text.children[0].value) > len(shown) + CHUNK - 100


def test_long_runs_are_paged():
    t = big_trace(rounds=1000, nodes=1, per_node=120)
    tv = TraceView(t)
    assert len(tv.steps.items) == 9 and len(tv.steps.content.children) == 9
    fold = tv.open_round("research", 1, 110)               # round 110 is on the third page of 50
    row = tv._rows[((), "research", 1)]
    pager = row.bodies[1].rounds
    assert pager.page == 2 and len(pager.content.children) == 20 and fold.is_open
    assert "101–120 of 120 rounds" in pager.label.value
    pager.prev.click()
    assert pager.page == 1 and len(pager.content.children) == 50


def test_it_follows_a_run_live_and_detaches_on_close(ladder, slates):
    run = scripted_run(ladder, slates)
    tv = TraceView(run, follow=True)
    assert tv._on_event in run.trace._listeners
    run.step()
    assert tv.outline.totals()["rounds"] == 1
    step = tv.step_fold("research")
    assert step.is_open                                    # follow opens the step now running
    run.step()
    pager = tv._rows[((), "research", 1)].bodies[1].rounds
    assert len(pager.items) == 2 and len(pager.content.children) == 2
    run.run()
    assert "completed" in tv.header.value and len(pager.content.children) == 3
    tv.close()
    assert tv._on_event not in run.trace._listeners


def test_opening_a_round_tells_its_listeners(ladder, slates):
    run = scripted_run(ladder, slates)
    run.run()
    tv = TraceView(run)
    seen = []
    tv.on_round(seen.append)
    tv.open_round("research", 1, 1)
    assert [(r.step, r.round) for r in seen] == [("research", 1)]


def test_it_displays_as_a_widget_with_a_static_fallback(ladder, slates):
    run = scripted_run(ladder, slates)
    run.run()
    data = TraceView(run)._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in data and "ladr-trace" in data["text/html"]


def test_set_source_shows_another_run(ladder, slates):
    a = scripted_run(ladder, slates)
    a.run()
    tv = TraceView(a)
    b = scripted_run(ladder, slates)
    tv.set_source(b)
    assert tv._on_event not in a.trace._listeners and tv._on_event in b.trace._listeners
    assert tv.outline.totals()["rounds"] == 0 and tv.steps.items == []
    b.step()
    assert tv.outline.totals()["rounds"] == 1


def test_a_step_left_unfinished_by_the_runs_error_says_so_live(ladder, slates):
    from tests.trace.test_story import _failing_run
    run = _failing_run(ladder, slates)
    tv = TraceView(run, follow=True)
    run.run()
    head = tv.step_fold("research").head.value
    assert "ended by the run&#x27;s error" in head or "ended by the run's error" in head
    assert "running" not in head and "1 round," in tv.header.value       # "1 round", not "1 rounds"
    assert "ended by the run" in TraceView(run.trace).step_fold("research").head.value


def test_a_malformed_trace_file_is_a_clear_error(tmp_path):
    from ladr_lab.errors import TraceError
    bad = tmp_path / "garbage.jsonl"
    bad.write_text("not json\n")
    with pytest.raises(TraceError, match="garbage.jsonl, line 1"):
        TraceView(bad)
