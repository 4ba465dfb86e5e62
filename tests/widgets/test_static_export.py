"""A notebook exported to HTML offline: by default a widget output is a widget view the page fills from a CDN;
with the display priority docs/widgets.md gives, the static fallback every view carries is exported instead."""
from __future__ import annotations

import pytest

pytest.importorskip("ipywidgets")
nbformat = pytest.importorskip("nbformat")
nbconvert = pytest.importorskip("nbconvert")

from ladr_lab.widgets import TraceView  # noqa: E402
from tests.helpers_display import scripted_run  # noqa: E402

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
STATIC_PRIORITY = ["text/html", "text/markdown", "image/svg+xml", "image/png", "image/jpeg", "text/plain"]


def _notebook(view):
    bundle = view._repr_mimebundle_()
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("TraceView(run)")
    cell.outputs = [nbformat.v4.new_output("display_data", data=bundle)]
    nb.cells.append(cell)
    # as saved with widget state (nbconvert exports a widget view only when the state holds its model)
    model = bundle[WIDGET_VIEW]["model_id"]
    nb.metadata["widgets"] = {"application/vnd.jupyter.widget-state+json": {
        "state": {model: {"model_name": "VBoxModel", "model_module": "@jupyter-widgets/controls",
                          "model_module_version": "2.0.0", "state": {}}},
        "version_major": 2, "version_minor": 0}}
    return nb


def test_the_documented_priority_exports_the_static_view_instead_of_the_widget(ladder, slates):
    run = scripted_run(ladder, slates)
    run.run()
    nb = _notebook(TraceView(run.trace))
    default, _ = nbconvert.HTMLExporter().from_notebook_node(nb)
    assert f'<script type="{WIDGET_VIEW}">' in default
    from traitlets.config import Config
    config = Config({"NbConvertBase": {"display_data_priority": STATIC_PRIORITY}})
    static, _ = nbconvert.HTMLExporter(config=config).from_notebook_node(nb)
    assert f'<script type="{WIDGET_VIEW}">' not in static            # nothing for the CDN's widget manager to fill
    assert "research" in static and "3 rounds" in static    # the view itself, readable offline


def test_a_view_builds_only_the_mime_types_asked_for(monkeypatch, ladder, slates):
    view = TraceView(scripted_run(ladder, slates))
    calls = []
    real = type(view).static_html
    monkeypatch.setattr(type(view), "static_html", lambda self: calls.append(1) or real(self))
    assert set(view._repr_mimebundle_(include=["text/plain"])) == {"text/plain"} and calls == []
    assert set(view._repr_mimebundle_(exclude=["text/html"])) == {"text/plain", WIDGET_VIEW} and calls == []
    assert set(view._repr_mimebundle_(exclude=[WIDGET_VIEW])) == {"text/plain", "text/html"} and calls == [1]
    assert set(view._repr_mimebundle_()) == {"text/plain", "text/html", WIDGET_VIEW}
