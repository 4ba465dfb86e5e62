"""ReplayView: replaying a recorded run against a ladder, and where an edited ladder diverges."""
from __future__ import annotations

import pytest

pytest.importorskip("ipywidgets")

from ladr_lab.config import load_ladder_text  # noqa: E402
from ladr_lab.widgets import ReplayView  # noqa: E402
from tests.helpers_display import scripted_run  # noqa: E402


def test_a_replay_of_the_same_ladder_does_not_diverge(ladder, slates):
    a = scripted_run(ladder, slates)
    a.run()
    rv = ReplayView(a.ladder, a, slates=slates)
    assert "ladr-replay-view" in rv.widget._dom_classes and rv.run is None
    rv.replay_button.click()
    assert rv.run is not None and rv.run.status == "completed" and rv.divergence is None
    assert "no divergence" in rv.status.value and rv.diff_view is not None and rv.diff_view.diff.identical


def test_an_edited_ladder_diverges_and_the_view_says_where(ladder, slates, tmp_path):
    a = scripted_run(ladder, slates, trace_out=tmp_path / "a.jsonl")
    a.run()
    edited = load_ladder_text(a.ladder.text.replace("{ name: Question, type: text, from: input.context }",
                                                    "{ name: Query, type: text, from: input.context }"))
    rv = ReplayView(edited, tmp_path / "a.jsonl", slates=slates)
    run = rv.replay()
    assert run is not None and run.status == "error" and rv.divergence["step"] == "research"
    assert "diverged at step research node 1 round 1" in rv.status.value and "Query" in rv.status.value
    assert rv.status.value.count("+Query") == 1                # the diff is shown once, not in the error too
    assert "ReplayDivergence" in rv.status.value
    rv.then.value = "offline"                   # mixed replay: go on live from the divergence
    run = rv.replay()
    assert run.status == "completed" and run.result.live_calls >= 1 and "answered live" in rv.status.value


def _diverging(ladder, slates, tmp_path):
    a = scripted_run(ladder, slates, trace_out=tmp_path / "a.jsonl")
    a.run()
    return load_ladder_text(a.ladder.text.replace("{ name: Question, type: text, from: input.context }",
                                                  "{ name: Query, type: text, from: input.context }"))


@pytest.mark.parametrize(("then", "says"), [("offlne", 'did you mean "offline"?'),
                                            ("openai/gpt-4o-mini", "needs OPENAI_API_KEY, which is not set")])
def test_a_bad_then_is_said_at_once_in_the_view(ladder, slates, tmp_path, monkeypatch, then, says):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    rv = ReplayView(_diverging(ladder, slates, tmp_path), tmp_path / "a.jsonl", slates=slates)
    rv.then.value = then
    assert rv.replay() is None and rv.run is None
    import html
    assert says in html.unescape(rv.status.value) and "cannot replay" in rv.status.value


def test_the_view_shows_it_is_working_while_a_live_call_waits(ladder, slates, tmp_path):
    from ladr_lab.models import OfflineModel
    seen: list[tuple[str, bool]] = []

    class Watching(OfflineModel):
        def complete(self, messages, call=None):
            seen.append((rv.status.value, rv.replay_button.disabled))
            return super().complete(messages, call=call)

    rv = ReplayView(_diverging(ladder, slates, tmp_path), tmp_path / "a.jsonl", slates=slates, then=Watching())
    run = rv.replay()
    assert run is not None and run.status == "completed" and seen
    assert all("working…" in status and disabled for status, disabled in seen)
    assert "working…" not in rv.status.value and not rv.replay_button.disabled
