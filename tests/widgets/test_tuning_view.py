"""TuningView: the scores per requestMatch variant, the outputs with a Request / Answer / — toggle each; a label
recounts the scores at once and is saved to the labels CSV; the filters show what disagrees or is unlabelled."""
from __future__ import annotations

import json

import pytest

pytest.importorskip("ipywidgets")

from ladr_lab import evaluate, load_labels, tune_request_match  # noqa: E402
from ladr_lab.models import ScriptedModel  # noqa: E402
from ladr_lab.widgets import TuningView  # noqa: E402

STRICT = {"type": "object", "required": ["files"]}
LOOSE = {"type": "object"}
STEP = """
- id: research
  fields:
    - { name: Question, type: text, from: input.context }
  retrieve:
    to: { slate: Knowledge, folder: docs }
    as: Docs
    maxRounds: 2
    requestMatch: %s
  systemPrompt: Research.
"""
SCRIPT = {"r1": ['{"files": ["core.md"]}', "Prose answer."], "r2": ['{"answer": "42"}']}


@pytest.fixture
def ev(ladder, slates, tmp_path):
    def answer(messages, call):
        row = next(r for r in SCRIPT if f"<<{r}>>" in messages[-1]["content"])
        return SCRIPT[row][call.round - 1]
    return evaluate(ladder(STEP % json.dumps(STRICT)), [{"id": r, "context": f"<<{r}>>"} for r in SCRIPT],
                    model=ScriptedModel(answer), slates=slates, out=tmp_path / "ev", progress=False)


def scores(view, variant):
    return next(s for s in view.tuning.score_rows() if s["variant"] == variant)


def test_a_toggle_labels_recounts_and_saves(ev, tmp_path):
    path = tmp_path / "labels.csv"
    v = TuningView(ev, {"strict": STRICT, "loose": LOOSE}, labels_path=path)
    assert "ladr-tuning-view" in v.widget._dom_classes and "ladr-tuning-outputs" in v.pager.widget._dom_classes
    assert "3 outputs" in v.header.value and "ladr-tuning-scores" in v.scores.value
    assert list(v.toggles) == [("r1", "research", 1, 1, 1), ("r1", "research", 1, 2, 1), ("r2", "research", 1, 1, 1)]
    assert all(t.value == "" for t in v.toggles.values()) and not path.exists()
    v.toggles[("r2", "research", 1, 1, 1)].value = "answer"       # loose takes this JSON answer as a request
    assert (scores(v, "loose")["fp"], scores(v, "strict")["tn"]) == (1, 1)
    assert "✗" in v.lines[("r2", "research", 1, 1, 1)].value
    assert load_labels(path) == {("r2", "research", 1, 1, 1): "answer"}
    v.toggles[("r1", "research", 1, 1, 1)].value = "request"
    assert scores(v, "loose")["precision"] == 0.5 and scores(v, "strict")["precision"] == 1.0
    assert ">0.50<" in v.scores.value
    v.toggles[("r2", "research", 1, 1, 1)].value = ""             # — clears the label
    assert scores(v, "loose")["fp"] == 0 and load_labels(path) == {("r1", "research", 1, 1, 1): "request"}
    assert not list(tmp_path.glob(".labels.csv.*"))                 # no temporary file left behind


def test_saved_labels_come_back_and_the_filters_narrow_the_list(ev, tmp_path):
    path = tmp_path / "labels.csv"
    path.write_text("row,step,node,round,iteration,label\nr1,research,1,1,1,request\n")
    t = tune_request_match(ev, {"strict": STRICT, "loose": LOOSE})
    v = TuningView(t, labels_path=path)
    assert v.toggles[("r1", "research", 1, 1, 1)].value == "request" and scores(v, "strict")["tp"] == 1
    v.only_unlabelled.value = True
    assert list(v.toggles) == [("r1", "research", 1, 2, 1), ("r2", "research", 1, 1, 1)]
    v.only_disagree.value = True                                     # strict and loose split only r2's JSON answer
    assert list(v.toggles) == [("r2", "research", 1, 1, 1)]
    v.only_unlabelled.value = False
    v.only_disagree.value = False
    v.label("r1", 2, "answer")                                       # by name, as the toggle would
    assert v.toggles[("r1", "research", 1, 2, 1)].value == "answer" and len(load_labels(path)) == 2
    with pytest.raises(KeyError, match="no such output"):
        v.label("r9", 1, "answer")
    assert "ladr-tuning" in v._repr_mimebundle_()["text/html"]


def test_no_labels_path_means_nothing_is_written(ev, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    before = sorted(tmp_path.rglob("*"))
    v = TuningView(ev.out, {"loose": LOOSE}, labels={("r1", "research", 1): "request"})
    assert v.toggles[("r1", "research", 1, 1, 1)].value == "request"
    v.toggles[("r1", "research", 1, 2, 1)].value = "answer"
    assert v.save() is None and sorted(tmp_path.rglob("*")) == before
    assert scores(v, "loose")["tn"] == 1


def test_suggest_fits_the_labels_draws_the_frontier_and_lists_the_next_to_label(ev):
    v = TuningView(ev, {"loose": LOOSE}, labels={("r1", "research", 1): "request", ("r2", "research", 1): "answer"})
    sug = v.suggest(folds=0)
    assert sug.schema == {"type": "object", "required": ["files"], "properties": {"files": {}}}
    assert "suggested" in v.tuning.variants and scores(v, "suggested")["f1"] == 1.0
    box = v.suggestion_html.value
    assert "<svg" in box and "ladr-frontier-table" in box and "rejects the 1 answer(s) that lack `files`" in box
    # a point per variant, its figures in its tooltip, the chosen one marked, a link to its flips
    assert "suggested: precision 1.00, recall 1.00" in box and "loose: precision 0.50" in box
    assert f'href="#ladr-tv-{id(v)}-suggested"' in box and f'id="ladr-tv-{id(v)}-suggested"' in box
    assert v.flips_of.value == "suggested" and "judges every output as recorded does" in v.flips.value
    v.flips_of.value = "loose"
    assert "answer ✗" in v.flips.value.replace("</span>", "").replace('<span style="color:#cf222e">', "")
    (nxt,) = v.show_next(1)
    assert (nxt.row, nxt.round) == ("r1", 2) and v.items() == [1]      # the one output left unlabelled
    v.show_all()
    assert v.items() == [0, 1, 2]
    v.label("r1", 1, "")                                                # a label changes: the frontier is redrawn
    assert "suggestion" in v.static_html()


def test_suggest_says_why_when_the_labels_collide(ev):
    v = TuningView(ev, {}, labels={("r1", "research", 1): "request", ("r1", "research", 2): "answer"})
    assert v.suggest(step="nope") is None and "no retrieve rounds" in v.message.value
    sug = v.suggest(folds=0)
    assert sug.schema == {"type": "object", "required": ["files"], "properties": {"files": {}}} and not sug.collisions
