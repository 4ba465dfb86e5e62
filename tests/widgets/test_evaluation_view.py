"""EvaluationView: counts by status, the paged results table, the status filter and a row's trace."""
from __future__ import annotations

import pytest

pytest.importorskip("ipywidgets")

import ladr_lab  # noqa: E402
from ladr_lab.models import ScriptedModel  # noqa: E402
from ladr_lab.widgets import EvaluationView  # noqa: E402


def test_rows_filter_pages_and_a_rows_trace(ladder, slates, tmp_path):
    lad = ladder("""
        - id: a
          fields:
            - { name: Q, type: text, from: input.context }
        """)
    inputs = [{"id": f"r{i}", "context": f"q{i}"} for i in range(7)]
    def answer(messages, **hints):
        if "q3" in messages[-1]["content"]:
            raise RuntimeError("model down")
        return "fine"

    model = ScriptedModel(answer)
    ev = ladr_lab.evaluate(lad, inputs, model=model, slates=slates, out=tmp_path / "ev", progress=False)
    v = EvaluationView(tmp_path / "ev", page=5)
    assert "ladr-evaluation-view" in v.widget._dom_classes
    assert "7 rows" in v.header.value and "completed" in v.header.value and "error" in v.header.value
    assert "1–5 of 7" in v.page_label.value and v.table.value.count("<tr") == 6
    v.next.click()
    assert "6–7 of 7" in v.page_label.value and list(v.row_pick.options) == ["", "r5", "r6"]
    v.row_pick.value = "r6"
    assert v.trace_view is not None and v.trace_view.outline.totals()["rounds"] == 1
    assert "text/html" in v._repr_mimebundle_() and len(ev.rows) == 7
    v.status.value = "error"
    assert "1–1 of 1" in v.page_label.value and "model down" in v.table.value


def test_an_evaluation_is_shown_as_the_table_by_either_view():
    """A one-variant grid is a table: ExperimentView of an evaluation (or its folder) is the EvaluationView, and an
    EvaluationView refuses an experiment's folder rather than folding its cells by row."""
    from pathlib import Path

    from ladr_lab.errors import LadrError
    from ladr_lab.experiments import load_evaluation
    from ladr_lab.widgets import ExperimentView

    old = Path(__file__).resolve().parents[1] / "fixtures" / "batch_v1"
    by_folder, by_object = ExperimentView(old / "evaluation"), ExperimentView(load_evaluation(old / "evaluation"))
    assert type(by_folder) is EvaluationView and type(by_object) is EvaluationView
    assert "4 rows" in by_folder.header.value and "1–4 of 4" in by_folder.page_label.value
    assert [r["row"] for r in by_folder.rows()] == ["dedup", "rounds", "down", "nocontext"]
    assert type(ExperimentView(old / "experiment")) is ExperimentView
    with pytest.raises(LadrError, match="not an evaluation's folder"):
        EvaluationView(old / "experiment")
