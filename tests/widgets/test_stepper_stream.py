"""The Stepper watching the model write: the call's text grows under the prompt with its speed, and Stop, clicked
while the call runs on its thread (`background`, as in a notebook kernel), cancels it; the run records the call as
cancelled and keeps it pending, and Step sends it again."""
from __future__ import annotations

import threading
import time

import pytest

pytest.importorskip("ipywidgets")

from ladr_lab.models import ScriptedModel  # noqa: E402
from ladr_lab.widgets import ReplayView, Stepper  # noqa: E402
from tests.helpers_display import RETRIEVE_GATE_WRITE, SCRIPT, buttons  # noqa: E402

LONG = "Dedup is per step and per node: " + " ".join(f"word{i}" for i in range(60))


def _stepper(ladder, slates, delay: float = 0.02, **kw) -> Stepper:
    script = {"research": [SCRIPT["research"][0], LONG, SCRIPT["research"][2]]}
    return Stepper(ladder(RETRIEVE_GATE_WRITE), input="How does dedup work?",
                   model=ScriptedModel(script, stream_delay=delay), slates=slates, **kw)


def _until(cond, seconds: float = 30.0) -> None:
    deadline = time.monotonic() + seconds
    while not cond():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def test_stop_cancels_the_running_call_and_step_sends_it_again(ladder, slates):
    s = _stepper(ladder, slates, background=True)
    assert buttons(s.widget)["Stop"].disabled                # nothing runs yet
    s.step()                                                # round 1 (a request), from code: on this thread
    assert s.rounds == 1 and not s.busy
    buttons(s.widget)["Step"].click()                       # round 2, on its own thread: the click returns at once
    assert s.busy and s.step_button.disabled and s.reset_button.disabled and not s.stop_button.disabled
    # the text grows under the prompt, with its speed
    _until(lambda: "word3 " in s.live.view.value)
    value = s.live.view.value
    assert "writing" in value and "research · node 1 · round 2" in value and "tok/s" in value
    assert s.live.widget.layout.display is None
    assert list(s.widget.children).index(s.live.widget) == list(s.widget.children).index(s.pending_box) + 1
    buttons(s.widget)["Stop"].click()
    assert s.wait(30)
    # recorded as cancelled, still pending; the panel keeps what was written, marked stopped
    errors = [e for e in s.run.trace.events if e.type == "llm_error"]
    assert len(errors) == 1 and errors[0].cancelled and LONG.startswith(errors[0].partial) and errors[0].partial
    assert not s.run.done and s.run.pending[0].round == 2 and s.rounds == 1
    assert "Stopped: research · node 1 · round 2 was cancelled" in s.message.value
    assert "Step sends it again" in s.message.value
    assert "stopped" in s.live.view.value and not s.step_button.disabled and s.stop_button.disabled
    # Step again: the same call, now answered in full; the panel hides when it ends
    buttons(s.widget)["Step"].click()
    assert s.wait(30)
    assert s.rounds == 2 and s.run.trace.calls()[-1].output == LONG
    assert s.live.widget.layout.display == "none" and "Stopped" not in s.message.value
    assert "generated" in s.last.value and "tok/s" in s.last.value        # the round's speeds, in "just made"


def test_run_all_in_the_background_stops_and_goes_on(ladder, slates):
    s = _stepper(ladder, slates, background=True)
    s.run_all_button.click()
    _until(lambda: any(x.pieces >= 2 for x in s.run.in_flight))
    s.stop_button.click()
    assert s.wait(30) and not s.run.done and s.run.status == "running"
    assert [e.type for e in s.run.trace.events if e.type in ("llm_call", "llm_error")][-1] == "llm_error"
    s.run_all_button.click()
    assert s.wait(60) and s.run.done and s.run.status == "completed"


def test_reset_while_a_call_runs_stops_it_first(ladder, slates):
    s = _stepper(ladder, slates, delay=0.05, background=True)
    s.run_all_button.click()
    _until(lambda: bool(s.run.in_flight))
    first = s.run
    s.reset()
    assert not s.busy and s.run is not first and s.rounds == 0 and s.live.widget.layout.display == "none"


def test_outside_a_kernel_the_buttons_run_on_the_callers_thread(ladder, slates):
    s = _stepper(ladder, slates, delay=0.0)
    assert s.background is False                  # pytest is no kernel
    buttons(s.widget)["Step"].click()
    assert s.rounds == 1 and s._thread is None


def test_a_fast_model_never_flashes_the_panel(ladder, slates):
    seen = []
    s = _stepper(ladder, slates, delay=0.0)
    s.live.view.observe(lambda c: seen.append(c["new"]), names="value")
    s.run_all()
    assert s.run.done and not any(seen)


def test_the_replay_views_live_continuation_streams(tmp_path, ladder, slates):
    """A replay whose `then` model answers live shows that model writing, and Stop stops it."""
    lad = ladder(RETRIEVE_GATE_WRITE)
    from ladr_lab.engine import Run

    rec = Run(lad, model=ScriptedModel(SCRIPT), input="How does dedup work?", slates=slates,
              trace_out=tmp_path / "rec.jsonl")
    rec.run()
    edited = ladder(RETRIEVE_GATE_WRITE.replace("maxRounds: 2", "maxRounds: 3"))
    live_model = ScriptedModel(lambda messages, call: LONG, stream_delay=0.03)
    view = ReplayView(edited, tmp_path / "rec.jsonl", then=live_model, slates=slates, background=True)
    view.replay_button.click()
    _until(lambda: "word2 " in view.live.view.value)
    assert "writing" in view.live.view.value and not view.stop_button.disabled and view.replay_button.disabled
    view.stop_button.click()
    assert view.wait(30)
    assert view.run is not None and not view.run.done
    assert "stopped" in view.status.value and not view.replay_button.disabled
    # and from code it replays to the end, the live calls streamed to the panel as they come
    events = []
    view.live.view.observe(lambda c: events.append(c["new"]), names="value")
    run = view.replay()
    assert run is not None and run.done and any("writing" in v for v in events)


def test_a_stop_from_another_thread_reaches_a_step_made_from_code(ladder, slates):
    s = _stepper(ladder, slates, delay=0.05)
    s.step()
    t = threading.Thread(target=lambda: (_until(lambda: bool(s.run.in_flight)), s.stop()))
    t.start()
    s.step()
    t.join()
    assert [e.type for e in s.run.trace.events][-1] == "llm_error" and "Stopped" in s.message.value
