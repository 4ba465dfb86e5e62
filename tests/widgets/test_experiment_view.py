"""ExperimentView over a real experiment run with a scripted model: two variants that judge the model's requests
with different schemas, so they disagree on the rows where the model writes the shape only one accepts."""
from __future__ import annotations

import re

import pytest

pytest.importorskip("ipywidgets")
pytest.importorskip("pandas")

from ladr_lab.display import render  # noqa: E402
from ladr_lab.experiments import experiment, load_experiment  # noqa: E402
from ladr_lab.models import ScriptedModel  # noqa: E402
from ladr_lab.widgets import DiffView, ExperimentView, TraceView  # noqa: E402

STEP = """
- id: research
  fields:
    - {{ name: Question, type: text, from: input.context }}
    - {{ name: Style, type: text, value: "{style}" }}
  retrieve:
    to: {{ slate: Knowledge, folder: docs }}
    as: Docs
    maxRounds: 2
    requestMatch: {schema}
"""
WRAPPED = "{ type: object, required: [request], properties: { request: { type: object, required: [files] } } }"
BARE = "{ type: object, required: [files], properties: { files: { type: array } } }"

# row id -> (question, its own assertions); the question says how the scripted model answers round 1
ROWS = {
    "r1": ("wrapped: what is core?", ["fetched: core.md"]),
    "r2": ("bare: what is core?", ["fetched: core.md"]),
    "r3": ("plain: what is core?", ["fetched: core.md"]),
    "r4": ("wrapped: and faq?", ["fetched: core.md"]),
    "r5": ("down: anything", ["contains: ANSWER"]),
    "r6": ("plain: say hello", ["contains: ANSWER"]),
}


def _answer(messages, call):
    """Round 1: a request in the form the question names (or a plain answer); later rounds: the answer."""
    text = messages[-1]["content"]
    if "down:" in text:
        raise RuntimeError("model down")
    if call.round == 1 and "wrapped:" in text:
        return '{"request": {"files": ["core.md"]}}'
    if call.round == 1 and "bare:" in text:
        return '{"files": ["core.md"]}'
    return "ANSWER: " + ("from the docs" if call.round > 1 else "from memory")


@pytest.fixture(scope="module")
def exp(tmp_path_factory):
    """The experiment (2 variants × 6 rows), run once for the module."""
    import shutil
    from pathlib import Path

    from ladr_lab.config import load_ladder_text
    from tests.conftest import FIXTURES, SLATES_YAML

    tmp = tmp_path_factory.mktemp("exp")
    know = tmp / "Knowledge"
    shutil.copytree(FIXTURES / "knowledge", know)
    (tmp / "Memory" / "facts").mkdir(parents=True)

    def lad(name, schema, style):
        import textwrap
        steps = textwrap.indent(textwrap.dedent(STEP.format(schema=schema, style=style)).strip("\n") + "\n", "  ")
        return load_ladder_text(f"name: {name}\n" + SLATES_YAML + "steps:\n" + steps)

    inputs = [{"id": rid, "context": q, "assert": a} for rid, (q, a) in ROWS.items()]
    out = Path(tmp / "out")
    experiment({"wrapped": lad("wrapped", WRAPPED, "w"), "bare": lad("bare", BARE, "b")}, inputs,
               model=ScriptedModel(_answer), slates={"Knowledge": know, "Memory": tmp / "Memory"}, out=out,
               concurrency=1, progress=False)
    return load_experiment(out)


def _marks(view):
    return {key: b.description for key, b in view.cells.items()}


def test_the_experiment_disagrees_where_the_scripted_model_says(exp):
    assert exp.variants == ["wrapped", "bare"] and len(exp.rows) == 12
    assert [d["row"] for d in exp.difference_rows("wrapped", "bare")] == ["r1", "r2", "r4"]


def test_grid_counts_marks_and_paging(exp):
    v = ExperimentView(exp, page=4)
    assert "ladr-experiment-view" in v.widget._dom_classes
    assert "2 variant(s) × 6 row(s)" in v.header.value
    assert re.search(r"passed</span> 5\b", v.header.value) and re.search(r"failed</span> 5\b", v.header.value)
    assert re.search(r"error</span> 2\b", v.header.value)
    assert "rows 1–4 of 6" in v.page_label.value and "3 where wrapped and bare differ" in v.page_label.value
    marks = _marks(v)
    assert len(marks) == 8
    assert marks[("wrapped", "r1")] == "✓ pass" and marks[("bare", "r1")] == "✗ fail"
    assert marks[("wrapped", "r2")] == "✗ fail" and marks[("bare", "r2")] == "✓ pass"
    assert "ladr-exp-pass" in v.cells[("wrapped", "r1")]._dom_classes
    assert "ladr-exp-fail" in v.cells[("bare", "r1")]._dom_classes
    # the failing assertion's reason is the failing cell's tooltip
    assert "fetched:core.md" in v.cells[("bare", "r1")].tooltip and "never fetched" in v.cells[("bare", "r1")].tooltip
    assert "all 1 assertion(s) passed" in v.cells[("wrapped", "r1")].tooltip
    v.next.click()
    assert "rows 5–6 of 6" in v.page_label.value
    assert _marks(v) == {("wrapped", "r5"): "error", ("bare", "r5"): "error",
                         ("wrapped", "r6"): "✓ pass", ("bare", "r6"): "✓ pass"}
    assert "model down" in v.cells[("wrapped", "r5")].tooltip
    assert v.next.disabled and not v.prev.disabled


def test_filters_show_exactly_the_disagreeing_or_failing_rows(exp):
    v = ExperimentView(exp)
    v.only_disagree.value = True
    assert v.rows() == ["r1", "r2", "r4"]
    assert {r for _, r in v.cells} == {"r1", "r2", "r4"} and "rows 1–3 of 3" in v.page_label.value
    # the ≠ mark of a disagreeing row says in what they differ
    grid = "".join(getattr(c, "value", "") for c in v.grid.children)
    assert grid.count("ladr-exp-disagree") == 3 and "differ in passed, output" in grid
    v.only_disagree.value = False
    v.only_failures.value = True
    assert v.rows() == ["r1", "r2", "r3", "r4", "r5"]
    v.only_disagree.value = True
    assert v.rows() == ["r1", "r2", "r4"]
    v.variant_b.value = "wrapped"           # a variant compared with itself disagrees nowhere
    assert v.rows() == [] and "no rows" in v.grid.children[0].value


def test_opening_a_cell_shows_its_trace_reasons_and_the_diff_against_the_other_variant(exp):
    v = ExperimentView(exp)
    tv = v.open_cell("bare", "r1")
    assert isinstance(tv, TraceView) and v.trace_view is tv and v.opened == ("bare", "r1")
    assert "ladr-exp-open" in v.cells[("bare", "r1")]._dom_classes
    # its trace: the bare schema rejected the wrapped request, so the request is the answer
    assert '{"request": {"files": ["core.md"]}}'.replace('"', "&quot;") in tv.static_html()
    head = v.cell_box.children[0].value
    assert "never fetched core.md" in head and "fetched:core.md" in head and "✗ fail" in head
    assert v.tabs.titles == ("Trace · bare", "Diff · bare vs wrapped")
    v.tabs.selected_index = 1
    d = v.diff_view
    assert isinstance(d, DiffView) and d.diff.a == "bare/r1" and d.diff.b == "wrapped/r1"
    assert d.diff.totals["llm_calls"]["a"] == 1 and d.diff.totals["llm_calls"]["b"] == 2
    assert d.diff.first_divergence is not None and "ladr-diff-view" in v._diff_box.children[0]._dom_classes
    # another cell replaces the first; the button opens it as a click would
    v.cells[("wrapped", "r2")].click()
    assert v.opened == ("wrapped", "r2") and v.diff_view is None
    assert "ladr-exp-open" not in v.cells[("bare", "r1")]._dom_classes
    assert "{&quot;files&quot;: [&quot;core.md&quot;]}" in v.cell_box.children[0].value    # its output
    assert v.open_diff() is not None and v.tabs.selected_index == 1


def test_static_html_has_the_marks_reasons_and_disagreements(exp):
    v = ExperimentView(exp)
    html = render(v)
    assert "ladr-experiment" in html and "text/html" in v._repr_mimebundle_()
    assert html.count("✓ pass") >= 5 and html.count("✗ fail") >= 5
    assert "never fetched core.md" in html                            # the reasons, in titles and the why table
    assert html.count('class="ladr-exp-disagree"') == 3
    assert "3 row(s) where wrapped and bare differ" in html
    assert "why 7 cell(s) did not pass" in html and "model down" in html
    assert render(exp) == exp.to_html() and "ladr-exp-grid" in exp.to_html()


def test_a_folder_path_and_an_unknown_pair(exp):
    v = ExperimentView(exp.out, pair=("bare", "wrapped"))
    assert v.pair == ("bare", "wrapped") and len(v.cells) == 12
    assert v.open_cell("bare", "nope") is None and "no cell bare/nope" in v.cell_box.children[0].value
    with pytest.raises(KeyError, match="no variant 'c'"):
        ExperimentView(exp, pair=("bare", "c"))


def test_charts_show_pass_rates_and_latency_with_their_numbers(exp):
    v = ExperimentView(exp)
    charts = v.charts.value
    assert charts.count("<svg") >= 3 and "pass rate per variant" in charts and "latency per cell" in charts
    for s in exp.summary_rows():           # each bar's figures in its tooltip and in the table beside it
        assert f"{s['variant']}: {s['passed']} of {s['cells']} cells passed" in charts
        assert f">{s['variant']}</td>" in charts
    for name in exp.assertion_names():
        assert f"{name}, " in charts
    assert "ladr-exp-chart-numbers" in v.static_html()
