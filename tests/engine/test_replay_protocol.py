"""The engine's replay knowledge goes through the optional `Recording` protocol, not through ReplayModel."""
from __future__ import annotations

import ast
from pathlib import Path

import ladr_lab.engine as engine
from ladr_lab.engine import Run
from ladr_lab.models import Completion, OfflineModel, Recording, ReplayModel, ScriptedModel


class Tape:
    """A hand-written recording (no ReplayModel): answers "taped", diverges at its second call."""

    name = "tape"
    max_concurrency = 1
    answers_every_step = True

    def __init__(self) -> None:
        self.recorded_inputs: dict | None = {"context": "taped question"}
        self.divergence: dict | None = None
        self.asked: list[str] = []

    def complete(self, messages, call=None) -> Completion:
        self.asked.append(call.step)
        if len(self.asked) == 2:
            self.divergence = {"step": call.step, "node": call.node, "round": call.round, "diff": "changed"}
            return Completion("live", provenance="live")
        return Completion("taped", provenance="recorded")

    def unserved_divergence(self) -> dict | None:
        return None if self.divergence else {"step": "never", "unserved": 1, "diff": "1 recorded call unasked"}

    def close(self) -> None:
        pass


def test_a_hand_written_recording_is_treated_as_one(ladder, slates):
    lad = ladder("""
        - id: one
          fields: [{ name: Q, type: text, from: input.context }]
        - id: two
          model: script:does-not-exist.yaml
        """)
    tape = Tape()
    assert isinstance(tape, Recording)
    run = Run(lad, model=tape, slates=slates)
    assert run.inputs == {"context": "taped question"}          # the recorded inputs, none being given
    res = run.run()
    assert res.status == "completed" and tape.asked == ["one", "two"]   # it answers the step with its own model:
    assert "taped question" in run.trace.calls("one")[0].messages[-1]["content"]
    assert res.divergence == {"step": "two", "node": 1, "round": 1, "diff": "changed"} and res.live_calls == 1


def test_a_recording_that_ended_without_diverging_reports_what_it_was_not_asked(ladder, slates):
    tape = Tape()
    res = Run(ladder("- id: one\n"), model=tape, slates=slates, input="given").run()
    assert tape.asked == ["one"] and res.divergence == {"step": "never", "unserved": 1, "diff": "1 recorded call unasked"}
    assert res.live_calls == 0


def test_a_model_that_is_no_recording_reports_no_divergence_and_no_live_calls(ladder, slates):
    class Plain(ScriptedModel):
        divergence = {"step": "x"}      # look-alike members of a model that is no Recording are not read
        live_calls = 7

    assert not isinstance(Plain(["a"]), Recording) and not isinstance(OfflineModel(), Recording)
    res = Run(ladder("- id: one\n"), model=Plain(["a"]), slates=slates).run()
    assert res.status == "completed" and res.divergence is None and res.live_calls is None


def test_replay_model_is_a_recording(tmp_path):
    (tmp_path / "t.jsonl").write_text("", encoding="utf-8")
    assert isinstance(ReplayModel(tmp_path / "t.jsonl"), Recording)
    assert ReplayModel.answers_every_step is True


def test_the_engine_does_not_name_replay_model():
    for path in Path(engine.__file__).parent.glob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
        names |= {a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) for a in n.names}
        assert "ReplayModel" not in names, path.name
