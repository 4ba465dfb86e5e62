"""What notebooks/07_real_model.ipynb says about the recorded real-model runs stays true.

nbval only checks that the notebook's cells do not raise. These tests check the claims its prose makes: each
recording replays on its ladder with no divergence, round by round the verdicts are the ones described, and the
schema fixes flip exactly the rounds the notebook says. If a recording is made again (notebooks/recorded/record.py)
or a ladder changes and a test here fails, the notebook's text needs the same change.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

import ladr_lab
from ladr_lab.widgets import RequestMatchEditor

ROOT = Path(__file__).resolve().parents[1]
RECORDED = ROOT / "notebooks" / "recorded"
EXAMPLES = ROOT / "examples"
NOTEBOOK = ROOT / "notebooks" / "07_real_model.ipynb"
LADDERS = {"reask": "research.yaml", "tight": "pitfall_tight.yaml", "loose": "pitfall_loose.yaml",
           "good": "research_small.yaml", "copied": "research_small.yaml", "browse": "research_browse.yaml"}
KNOBS = {"copied": {"example": "gates/gate-actions.md"}}


def _verdicts(name: str) -> list[tuple[str, bool]]:
    return [(c.request_match, c.forced_final) for c in ladr_lab.load_trace(RECORDED / f"{name}.jsonl").calls()]


@pytest.mark.parametrize("name", sorted(LADDERS))
def test_recording_replays_without_divergence(name):
    ladder = ladr_lab.load_ladder(EXAMPLES / LADDERS[name], knobs=KNOBS.get(name))
    run = ladr_lab.Run(ladder, model=ladr_lab.ReplayModel(RECORDED / f"{name}.jsonl"))
    result = run.run()
    assert result.divergence is None, result.divergence
    assert [c.provenance for c in run.trace.calls()] == ["recorded"] * len(run.trace.calls())
    diff = ladr_lab.diff_runs(ladr_lab.load_trace(RECORDED / f"{name}.jsonl"), run.trace)
    assert "no divergence" in diff.format()


def test_reask_asks_again_until_the_forced_final():
    calls = ladr_lab.load_trace(RECORDED / "reask.jsonl").calls()
    assert _verdicts("reask") == [("retrieval", False)] * 3 + [("final", True)]
    assert [[f.status for f in c.fetched or ()] for c in calls[:3]] == \
        [["fetched"], ["already_in_context"], ["already_in_context"]]
    assert all('"retrieve/dedup.md"' in c.output for c in calls)   # the forced final too: a request, not an answer


def test_tight_never_retrieves_and_the_bare_schema_flips_round_1():
    assert _verdicts("tight") == [("final", False)]
    editor = RequestMatchEditor(ladr_lab.load_ladder(EXAMPLES / "pitfall_tight.yaml"), "research",
                                trace=RECORDED / "tight.jsonl")
    editor.set_text("type: object\nrequired: [files]\nadditionalProperties: false\nproperties:\n"
                    "  files: { type: array, items: { type: string }, minItems: 1, maxItems: 3 }\n")
    assert [(f["round"], f["old"], f["new"]) for f in editor.flips] == [(1, False, True)]
    editor.close()


def test_loose_takes_the_json_answer_as_a_request_and_required_files_makes_it_final():
    calls = ladr_lab.load_trace(RECORDED / "loose.jsonl").calls()
    assert _verdicts("loose") == [("retrieval", False), ("retrieval", False), ("final", True)]
    assert [f.path for f in calls[0].fetched] == ["retrieve/dedup.md"]
    assert '"answer"' in calls[1].output and "(already in context)" in calls[1].output
    assert [f.status for f in calls[1].fetched] == ["no_match"]
    ladder = ladr_lab.load_ladder(EXAMPLES / "pitfall_loose.yaml")
    editor = RequestMatchEditor(ladder, "research", trace=RECORDED / "loose.jsonl")
    editor.set_text(editor.text.value.replace("type: object\n", "type: object\nrequired: [files]\n", 1))
    assert [(f["round"], f["old"], f["new"]) for f in editor.flips] == [(2, True, False)]
    editor.close()


def test_good_is_constrained_and_answers_in_prose_from_the_file():
    calls = ladr_lab.load_trace(RECORDED / "good.jsonl").calls()
    assert _verdicts("good") == [("retrieval", False), ("final", False)]
    assert [c.constrained for c in calls] == ["request", "request"]
    answer = calls[1].output
    assert "retrieve/dedup.md" in answer and "(already in context)" in answer
    # what the notebook says of it: a list restating the file, a sentence twice, the file's block name
    assert "\n6. " in answer and answer.count("Dedup keeps each round focused on what is new.") == 2
    assert "RetrievedDocuments 1" in answer


def test_notebook_never_runs_a_model_unless_asked():
    nb = json.loads(NOTEBOOK.read_text(encoding="utf-8"))
    code = ["".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code"]
    live = [src for src in code if "model_options" in src]
    assert len(live) == 1 and 'os.environ.get("LADR_LIVE")' in live[0]
    assert all(c.get("id") for c in nb["cells"])
    cells = [c for c in nb["cells"] if c["cell_type"] == "code"]
    assert all(c["execution_count"] for c in cells) and sum(bool(c["outputs"]) for c in cells) == len(cells) - 1
    assert "widgets" in nb["metadata"]   # saved with its outputs and widget state (the setup cell prints nothing)


def test_copied_asks_for_the_file_the_prompts_example_names():
    """The good run's right path is the prompt's own example: with the example naming another file (the ladder's
    `example` knob), the same model asks for that file and answers the dedup question without having read it."""
    good, copied = (ladr_lab.load_trace(RECORDED / f"{n}.jsonl").calls() for n in ("good", "copied"))
    assert [f.path for f in good[0].fetched] == ["retrieve/dedup.md"]
    assert '{"files": ["retrieve/dedup.md"]}' in good[0].messages[0]["content"]
    assert [f.path for f in copied[0].fetched] == ["gates/gate-actions.md"]
    assert '{"files": ["gates/gate-actions.md"]}' in copied[0].messages[0]["content"]
    assert _verdicts("copied") == [("retrieval", False), ("final", False)]
    assert "dedup" in copied[1].output.lower() and "gate" not in copied[1].output.lower()


def test_browse_lists_a_subfolder_then_reads_a_file_it_was_shown_then_answers_from_it():
    """Seed 001's browse → read → continue: round 1 lists concepts/ (its files come back as [{name, size}]), round 2
    reads a file named in that listing, round 3 answers in prose, quoting the file."""
    calls = ladr_lab.load_trace(RECORDED / "browse.jsonl").calls()
    assert _verdicts("browse") == [("retrieval", False), ("retrieval", False), ("final", False)]
    assert [c.constrained for c in calls] == ["request"] * 3
    assert [(f.mode, f.path, f.status) for f in calls[0].fetched] == [("subfolders", "concepts/", "listed")]
    assert [(f.mode, f.path, f.status) for f in calls[1].fetched] == [("files", "concepts/metatags.md", "fetched")]
    assert not calls[2].fetched
    # the model chose from what it was shown: round 2's prompt holds the listing, as JSON, with metatags.md in it
    prompt = calls[1].messages[-1]["content"]
    listing = prompt[prompt.index("--- concepts/ [subfolders] ---"):].split("\n")[1]
    names = [entry["name"] for entry in json.loads(listing)]
    assert "metatags.md" in names and "system-metatags.md" in names
    assert "metatags.md" not in calls[0].messages[-1]["content"]   # not named before the listing
    # the answer quotes the file: its opening paragraph, twice (once while narrating the steps), and last
    metatags = (ROOT / "sample_slates" / "knowledge" / "docs" / "concepts" / "metatags.md").read_text(encoding="utf-8")
    opening = metatags.split("\n\n")[1]
    assert opening.startswith("Metatags are typed metadata attached to files.")
    answer = calls[2].output
    assert answer.count(opening) == 2 and answer.rstrip().endswith(opening)
    # what the notebook says of it: it narrates the prompt's three steps first
    assert "I will follow the steps provided" in answer and "3. **Once Retrieved shows" in answer
