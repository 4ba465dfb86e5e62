"""DiffView: two runs compared, the differing rows paged, each opened to show what differs."""
from __future__ import annotations

import pytest

pytest.importorskip("ipywidgets")

from ladr_lab.engine import Run  # noqa: E402
from ladr_lab.models import ScriptedModel  # noqa: E402
from ladr_lab.widgets import DiffView  # noqa: E402
from tests.helpers_display import scripted_run  # noqa: E402


def test_it_shows_the_first_divergence_and_opens_a_row(ladder, slates):
    a = scripted_run(ladder, slates)
    a.run()
    b = Run(a.ladder, model=ScriptedModel({"research": ['{"request": {"files": ["faq.md"]}}', "final <answer>"]}),
            slates=slates, input="How <b>dedup</b>?")
    b.run()
    dv = DiffView(a, b.trace)
    assert "ladr-diff-view" in dv.widget._dom_classes
    assert "first divergence" in dv.summary.value and "call research · node 1 · round 1" in dv.summary.value
    assert dv.only.value and dv.rows() and all(not r["same"] for r in dv.rows())
    assert "ladr-diff-rows" in dv.table.value and dv.row_pick.options[1][1] == 0
    dv.row_pick.value = 0
    detail = dv.detail.value
    assert "output" in detail and "faq.md" in detail and "a: " in detail and "&lt;answer&gt;" not in detail
    dv.only.value = False
    assert len(dv.rows()) == len(dv.diff.rows) and dv.table.value.count("<tr") == len(dv.diff.rows) + 1
    data = dv._repr_mimebundle_()
    assert "Run diff" in data["text/html"]


def test_identical_runs_say_so(ladder, slates):
    a = scripted_run(ladder, slates)
    a.run()
    dv = DiffView(a.trace, a.trace)
    assert dv.diff.identical and "No divergence" in dv.summary.value and dv.rows() == []
