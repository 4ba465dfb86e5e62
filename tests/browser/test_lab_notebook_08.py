"""Notebook 08 in a real browser: JupyterLab in headless Chromium runs every cell of a cleared copy (experiments with
the offline and a scripted model), and its ExperimentView renders as widget DOM that fits the page: the summary,
the grid's pass/fail badges with their reasons as tooltips, the disagree filter, and a clicked cell opening its
trace (and its diff against the other variant).

Skips as test_lab_notebook.py does. Screenshots (08_*.png) land beside the other notebooks'.
"""
from __future__ import annotations

import pytest

from tests.browser.lab import REPO, lab_page, require_or_skip

pytestmark = require_or_skip()

NOTEBOOK = REPO / "notebooks" / "08_experiments.ipynb"
TIMEOUT_MS = 60_000


@pytest.fixture(scope="module")
def lab08(tmp_path_factory):
    """Notebook 08 open in JupyterLab with every cell run: (page, screenshot folder)."""
    with lab_page(NOTEBOOK, tmp_path_factory.mktemp("lab08"), TIMEOUT_MS) as (page, shots, _timings):
        yield page, shots


def _view(page):
    from playwright.sync_api import expect

    out = page.locator(".jp-OutputArea-output").filter(has=page.locator(".ladr-experiment-view"))
    expect(out).to_have_count(1)
    out.scroll_into_view_if_needed()
    return out, out.locator(".ladr-experiment-view").first


def test_08_cells_ran_without_errors(lab08):
    page, shots = lab08
    for sel, what in [(".jp-OutputArea-output:has-text('Error displaying widget')", "widget error"),
                      # an HTML output JupyterLab failed to render (e.g. an SVG <a href> its link rewriting breaks on)
                      (".jp-OutputArea-child:has-text('Javascript Error')", "rendering error"),
                      (".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']", "stderr output")]:
        n = page.locator(sel).count()
        assert n == 0, f"{n} {what}(s): {page.locator(sel).first.inner_text()[:800]}"
    page.evaluate("() => document.querySelector('.jp-NotebookPanel .jp-WindowedPanel-outer').scrollTop = 0")
    page.screenshot(path=str(shots / "08_top.png"))


def test_08_experiment_view_renders_its_grid_and_opens_a_cell(lab08):
    from playwright.sync_api import expect

    page, shots = lab08
    out, view = _view(page)
    assert "VBox(children=" not in out.inner_text()      # widget DOM, not the text fallback
    expect(view.locator(".ladr-exp-summary")).to_have_count(1)
    expect(view.locator(".ladr-exp-summary")).to_contain_text("one_file")
    # 6 questions × 4 variants, each a badge: 5 + 4 + 4 + 5 pass, the rest fail (one_file: the offline model asks
    # for the one file maxItems allows, issue 31; before, it asked for nothing and failed every row)
    cells = view.locator("button.ladr-exp-cell")
    expect(cells).to_have_count(24)
    expect(view.locator("button.ladr-exp-pass")).to_have_count(18)
    expect(view.locator("button.ladr-exp-fail")).to_have_count(6)
    fail = view.locator("button.ladr-exp-fail").first
    expect(fail).to_be_visible()
    assert "✗ fail" in fail.inner_text()
    assert "✗ right file: never fetched retrieve/dedup.md" in (fail.get_attribute("title") or "")
    # a badge reads: its text colour is not the button's default grey on grey
    color = fail.evaluate("e => getComputedStyle(e).color")
    assert color == "rgb(207, 34, 46)", color
    view.screenshot(path=str(shots / "08_experiment_view.png"))

    # only where small and tight disagree: one row (max-rounds), its ≠ mark
    view.locator(".widget-checkbox", has_text="only where they disagree").locator("input").check()
    expect(cells).to_have_count(4)
    expect(view.locator(".ladr-exp-disagree")).to_have_count(1)
    expect(view.locator(".ladr-exp-page")).to_contain_text("rows 1–1 of 1")
    view.screenshot(path=str(shots / "08_disagree.png"))

    # clicking a cell opens its trace below the grid, and its diff against small
    view.locator("button.ladr-exp-cell", has_text="fail").first.click()
    box = view.locator(".ladr-exp-cell-box")
    expect(box.locator(".ladr-trace-view")).to_have_count(1)
    expect(box.locator(".ladr-exp-cell-head")).to_contain_text("row max-rounds · variant tight")
    expect(box.locator(".ladr-exp-reasons")).to_contain_text("does not contain 'forced final'")
    expect(view.locator("button.ladr-exp-open")).to_have_count(1)
    box.locator(".ladr-trace-view .ladr-step button.ladr-toggle").first.click()
    expect(box.locator(".ladr-trace-view .ladr-round")).to_have_count(2)
    box.scroll_into_view_if_needed()
    view.screenshot(path=str(shots / "08_cell_opened.png"))
    box.locator(".lm-TabBar-tab", has_text="Diff").click()
    expect(box.locator(".ladr-diff-view")).to_have_count(1)
    expect(box.locator(".ladr-diff-view")).to_contain_text("tight/max-rounds")
    box.locator(".ladr-diff-view").screenshot(path=str(shots / "08_cell_diff.png"))


def test_08_nothing_overflows(lab08):
    page, shots = lab08
    # an output wider than its cell gets a horizontal scrollbar: scrollWidth > clientWidth (the DataFrames, the
    # widget with its grid, summary and opened cell)
    outputs = page.locator(".jp-OutputArea-output")
    assert outputs.count() >= 10
    for i in range(outputs.count()):
        out = outputs.nth(i)
        out.scroll_into_view_if_needed()
        sw, cw = out.evaluate("e => [e.scrollWidth, e.clientWidth]")
        assert sw <= cw + 1, f"output {i} overflows its cell: {sw} > {cw} px: {out.inner_text()[:200]!r}"
    page.screenshot(path=str(shots / "08_page_end.png"))


def test_08_tuning_view_labels_recount_the_scores(lab08):
    """The TuningView renders as widget DOM, its toggle labels fit their buttons, and a click on "Answer" for a
    request output recounts the scores in the page (the `recorded` row loses a true positive)."""
    from playwright.sync_api import expect

    page, shots = lab08
    out = page.locator(".jp-OutputArea-output").filter(has=page.locator(".ladr-tuning-view"))
    expect(out).to_have_count(2)              # section 7's, and section 8's (with Suggest pressed)
    out = out.first
    out.scroll_into_view_if_needed()
    view = out.locator(".ladr-tuning-view").first
    assert "VBox(children=" not in out.inner_text()
    scores = view.locator(".ladr-tuning-scores-box")
    expect(scores).to_contain_text("precision")
    before = scores.inner_text()
    toggle = view.locator(".ladr-label-toggle").first
    for button in toggle.locator("button").all():   # "Request" whole, not "Requ…"
        fits = button.evaluate("b => b.scrollWidth <= b.clientWidth + 1")
        assert fits, f"toggle label cut: {button.inner_text()!r}"
    toggle.locator("button", has_text="Answer").click()
    expect(scores).not_to_have_text(before)
    view.screenshot(path=str(shots / "08_tuning_view.png"))


def test_08_the_suggestion_draws_its_frontier_and_explains_itself(lab08):
    """Section 8: the suggestion's static view (schema, why each constraint, folds, the frontier chart beside its
    table) and the TuningView after Suggest (the chart in the widget, a point's tooltip with its figures)."""
    from playwright.sync_api import expect

    page, shots = lab08
    sug = page.locator(".jp-OutputArea-output .ladr-suggestion").first
    sug.scroll_into_view_if_needed()
    expect(sug.locator(".ladr-suggested")).to_contain_text("why each constraint")
    expect(sug.locator(".ladr-folds")).to_contain_text("held out")
    chart = sug.locator("svg.ladr-chart").first
    expect(chart).to_be_visible()
    assert chart.locator("circle").count() >= 2
    assert "precision" in (chart.locator("circle title").first.text_content() or "")
    expect(sug.locator(".ladr-frontier-table")).to_contain_text("suggested")
    sug.screenshot(path=str(shots / "08_suggestion.png"))
    view = page.locator(".jp-OutputArea-output").filter(has=page.locator(".ladr-tuning-view")).nth(1)
    view.scroll_into_view_if_needed()
    box = view.locator(".ladr-suggestion-box")
    expect(box.locator("svg.ladr-chart")).to_have_count(1)
    expect(view.locator("button", has_text="Suggest")).to_have_count(1)
    expect(view.locator("button", has_text="Next to label")).to_have_count(1)
    view.screenshot(path=str(shots / "08_tuning_suggest.png"))
