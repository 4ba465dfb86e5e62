"""Stepper: Step, Run step, Run all (with breakpoints), Reset and Answer by hand, driven by clicking its buttons;
its round counter, pending prompt, TraceView and SlateView follow the run."""
from __future__ import annotations

import pytest

pytest.importorskip("ipywidgets")

from ladr_lab.models import ScriptedModel  # noqa: E402
from ladr_lab.widgets import Stepper  # noqa: E402
from tests.helpers_display import RETRIEVE_GATE_WRITE, SCRIPT, buttons, walk, with_class  # noqa: E402

TWO_STEPS = RETRIEVE_GATE_WRITE + """
- id: summarize
  fields:
    - { name: Notes, type: text, from: previous }
"""


def _stepper(ladder, slates, **kw) -> Stepper:
    script = {**SCRIPT, "summarize": ["summary"]}
    return Stepper(ladder(TWO_STEPS), input="How does dedup work?", model=ScriptedModel(script), slates=slates, **kw)


def test_the_contract_names_and_classes(ladder, slates):
    s = _stepper(ladder, slates)
    assert "ladr-stepper" in s.widget._dom_classes
    assert {"Step", "Run step", "Run all", "Reset", "Answer by hand"} <= set(buttons(s.widget))
    assert "not started" in with_class(s.widget, "ladr-round-count")[0].value
    assert with_class(s.widget, "ladr-pending") and with_class(s.widget, "ladr-fork")[0].__class__.__name__ == "Textarea"
    assert "ladr-trace-view" in s.trace_view.widget._dom_classes
    assert "ladr-slate-view" in s.slate_view.widget._dom_classes
    assert s.rounds == 0 and s.run.status == "running"
    data = s._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in data and "text/html" in data
    assert data["text/plain"] == "<Stepper (ladr-stepper)>"      # never ipywidgets' VBox(children=…) repr


def test_the_next_prompt_is_shown_before_it_is_sent(ladder, slates):
    s = _stepper(ladder, slates)
    text = "".join(w.value for w in walk(s.pending_box) if isinstance(getattr(w, "value", None), str))
    assert "research · node 1 · round 1" in text and "Question" in text and "requestMatch" in text
    assert s.run.llm_calls == 0                            # shown, not sent


def test_step_makes_one_call_and_everything_follows(ladder, slates):
    s = _stepper(ladder, slates)
    buttons(s.widget)["Step"].click()
    assert s.rounds == 1 and "1 round</b>" in s.counter.value
    assert s.slate_view.lit == {"core.md": "fetched", "missing.md": "not_found"}    # the round's files, lit
    assert s.trace_view.outline.totals()["rounds"] == 1
    assert "round 2" in "".join(w.value for w in walk(s.pending_box) if isinstance(getattr(w, "value", None), str))
    buttons(s.widget)["Step"].click()
    assert s.rounds == 2 and "2 rounds</b>" in s.counter.value


def test_run_step_finishes_the_step_and_the_write_shows_in_the_slate_view(ladder, slates):
    s = _stepper(ladder, slates)
    s.run_step_button.click()
    assert s.rounds == 3 and s.run.pending[0].step == "summarize"
    assert any("notes.md" in w.target for w in s.slate_view.writes)
    assert "written" in s.slate_view.message.value


def test_run_all_stops_at_a_breakpoint_then_goes_on(ladder, slates):
    s = _stepper(ladder, slates, breakpoints=["summarize"])
    assert s.breakpoints == ["summarize"]
    s.run_all_button.click()
    assert not s.run.done and s.run.pending[0].step == "summarize" and s.rounds == 3
    assert "breakpoint" in s.message.value
    s.run_all_button.click()
    assert s.run.done and s.run.status == "completed" and s.rounds == 4
    assert all(b.disabled for b in (s.step_button, s.run_all_button, s.fork_button))
    assert "summary" in "".join(w.value for w in walk(s.pending_box) if isinstance(getattr(w, "value", None), str))


def test_answer_by_hand_forks_the_run(ladder, slates):
    s = _stepper(ladder, slates)
    s.fork.value = '{"fact": "typed by hand"}'
    buttons(s.widget)["Answer by hand"].click()
    call = s.run.trace.calls()[-1]
    assert call.provenance == "edited" and call.request_match == "final" and s.fork.value == ""
    assert s.rounds == 1


def test_reset_starts_again_and_detaches_the_old_run(ladder, slates):
    s = _stepper(ladder, slates)
    old = s.run
    s.run_all_button.click()
    assert old.done
    s.reset_button.click()
    assert s.run is not old and s.rounds == 0 and s.run.status == "running"
    assert s._on_event not in old.trace._listeners and s.trace_view._on_event not in old.trace._listeners
    assert s.trace_view.outline.totals()["rounds"] == 0 and s.slate_view.lit == {}
    s.step_button.click()                                  # the scripted model was reset with the run
    assert s.rounds == 1 and s.run.trace.calls()[0].output == SCRIPT["research"][0]


def test_a_model_factory_makes_a_fresh_model_per_run(ladder, slates):
    made = []

    def factory():
        made.append(ScriptedModel(lambda m, **h: "answer"))
        return made[-1]

    s = Stepper(ladder("- id: a\n"), model=factory, slates=slates)
    s.reset()
    assert len(made) == 2


def test_an_unknown_breakpoint_is_refused_with_a_suggestion(ladder, slates):
    with pytest.raises(ValueError, match='did you mean "summarize"'):
        _stepper(ladder, slates, breakpoints=["sumarize"])


def test_a_step_after_the_end_says_so(ladder, slates):
    s = _stepper(ladder, slates)
    s.run_all()
    assert s.step() == [] and "ended" in s.message.value


def test_the_slate_tab_reads_its_listing_when_first_opened(ladder, slates):
    s = _stepper(ladder, slates)
    s.step()
    assert not s.slate_view.loaded and s.slate_view.table.value == ""     # nothing read for the first paint
    assert s.slate_view.lit["core.md"] == "fetched"                        # but the round's files are known
    s.tabs.selected_index = 1
    assert s.slate_view.loaded and "core.md" in s.slate_view.table.value and "fetched" in s.slate_view.table.value


def test_a_callable_that_answers_prompts_is_not_called_as_a_factory(ladder, slates):
    # `lambda messages, **h: ...` needs an argument: it goes to Run as given, which says what it accepts
    from ladr_lab.errors import LadrError
    with pytest.raises(LadrError, match="not a model name or Model"):
        Stepper(ladder("- id: a\n"), input="q", model=lambda messages, **h: "hi", slates=slates)
    made = []
    s = Stepper(ladder("- id: a\n"), input="q", slates=slates,
                model=lambda seed=0: made.append(seed) or ScriptedModel(lambda m, **h: "hi"))
    assert made == [0] and s.run.model is not None


def test_the_end_text_separates_the_count_from_the_output(ladder, slates):
    s = _stepper(ladder, slates)
    s.run_all()
    value = s.pending_box.children[0].value
    assert "model calls<div><b>output</b></div>" in value      # the label on its own line, not "callsoutput"


def _verifiers(tmp_path) -> Stepper:
    import shutil
    from pathlib import Path
    root = Path(__file__).resolve().parents[2]
    shutil.copytree(root / "sample_slates" / "memory", tmp_path / "memory")
    return Stepper(root / "examples" / "gated_verifiers.yaml", input="Dedup is per step execution.",
                   slates={"Memory": tmp_path / "memory"},
                   model=ScriptedModel.from_file(root / "examples" / "scripts" / "gated_verifiers.yaml"))


def test_run_all_makes_one_call_at_a_time_in_step_order(tmp_path):
    import threading
    s = _verifiers(tmp_path)
    model = s.run.model
    model.max_concurrency = 4                   # a model that would allow calls in flight at once
    threads = []
    complete = model.complete

    def spy(messages, **kw):
        threads.append(threading.current_thread())
        return complete(messages, **kw)

    model.complete = spy
    s.run_all()
    assert s.run.done and threads and set(threads) == {threading.main_thread()}
    stepped = _verifiers(tmp_path / "again")
    while not stepped.run.done:
        stepped.run.step()
    order = [(c.step, c.node, c.round) for c in s.run.trace.calls()]
    assert order == [(c.step, c.node, c.round) for c in stepped.run.trace.calls()]


def _pending_text(s: Stepper) -> str:
    return "".join(w.value for w in walk(s.pending_box) if isinstance(getattr(w, "value", None), str))


def test_the_call_shown_is_the_call_step_makes(tmp_path):
    s = _verifiers(tmp_path)
    buttons(s.widget)["Step"].click()
    assert "verify · node 2 · round 1" in _pending_text(s)                 # the oldest call, as run.pending[0]
    assert [label for label, _ in s.pick.options] == ["verify · node 2 · round 1", "verify · node 3 · round 1",
                                                       "verify · node 1 · round 2"]
    buttons(s.widget)["Step"].click()
    assert s.run.trace.calls()[-1].node == 2


def test_the_picker_chooses_the_node_whose_prompt_is_shown_and_answered(tmp_path):
    s = _verifiers(tmp_path)
    buttons(s.widget)["Step"].click()
    s.pick.value = next(v for label, v in s.pick.options if label.startswith("verify · node 1"))
    assert "verify · node 1 · round 2" in _pending_text(s)
    s.fork.value = '{"score": 5, "verdict": "accept", "claim": "c", "reason": "typed under node 1"}'
    buttons(s.widget)["Answer by hand"].click()
    last = s.run.trace.calls()[-1]
    assert (last.node, last.round, last.provenance) == (1, 2, "edited") and "typed under node 1" in last.output
    assert "verify · node 2 · round 1" in _pending_text(s)       # node 1 is done: back to the oldest call


def test_after_a_step_the_round_just_made_is_shown(ladder, slates):
    s = _stepper(ladder, slates)
    assert s.last.value == ""
    buttons(s.widget)["Step"].click()
    shown = s.last.value
    assert "just made" in shown and "research · node 1 · round 1" in shown and "retrieval" in shown
    assert "core.md" in shown and "not_found" in shown and "missing.md" in shown          # what was fetched
    assert "match" in shown and "why" in shown                                             # verdict and why
    s.run_step_button.click()
    assert "round 3" in s.last.value and "✎ write" in s.last.value and "gate" in s.last.value


def test_before_the_first_call_it_says_not_started(ladder, slates):
    s = _stepper(ladder, slates)
    assert "not started" in s.counter.value and "nothing sent yet" in s.counter.value
    assert "running" not in s.counter.value and "0 rounds" not in s.counter.value
    assert "running" not in s.trace_view.header.value and "not started" in s.trace_view.header.value
    static = s._repr_mimebundle_()["text/html"]
    assert "not started" in static and ">running<" not in static
    s.step_button.click()
    assert "1 round</b>" in s.counter.value and "running" in s.counter.value


def test_the_slate_tab_lists_a_slates_own_files_under_its_header_and_writes_carry_their_node(tmp_path):
    s = _verifiers(tmp_path)
    s.run_all()
    s.tabs.selected_index = 1
    sv = s.slate_view
    assert "Knowledge / docs" in sv.header.value and "retrieve/mode-glob.md" in sv.lit_html.value
    sv.show("Memory", "trace")
    assert "Memory / trace" in sv.header.value
    assert "retrieve/" not in sv.lit_html.value and "from Knowledge / docs" in sv.lit_html.value
    assert sv.lit == {} and "retrieve/" not in sv.static_html()
    writes = sv.message.value
    assert "verify#1" in writes and "verify#2" in writes and "verify#3" in writes
    assert writes.index("verify#2") < writes.index("Memory/lessons/failures.md") < writes.index("verify#3")
    sv.show("Knowledge", "docs")                           # back where the round fetched: lit again
    assert sv.lit and "retrieve/mode-glob.md" in sv.lit_html.value
