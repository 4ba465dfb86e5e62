"""Notebook 07 in a real browser: JupyterLab in headless Chromium runs every cell of a cleared copy (replaying the
recorded real-model runs, no model), and its widgets render as widget DOM that fits the page: the TraceView, the two
RequestMatchEditors (the tight fix and the loose fix each show their flip) and the ReplayView (no divergence).

Skips as test_lab_notebook.py does. Screenshots (07_*.png) land beside notebook 01's.
"""
from __future__ import annotations

import os

import pytest

from tests.browser.lab import REPO, lab_page, require_or_skip

pytestmark = require_or_skip()

NOTEBOOK = REPO / "notebooks" / "07_real_model.ipynb"
TIMEOUT_MS = 60_000


@pytest.fixture(scope="module")
def lab07(tmp_path_factory):
    """Notebook 07 open in JupyterLab with every cell run (LADR_LIVE unset: the live cell only prints how):
    (page, screenshot folder)."""
    os.environ.pop("LADR_LIVE", None)   # the kernel inherits the server's environment
    with lab_page(NOTEBOOK, tmp_path_factory.mktemp("lab07"), TIMEOUT_MS) as (page, shots, _timings):
        yield page, shots


def _outputs(page, selector: str, *, not_in: str | None = None):
    out = page.locator(".jp-OutputArea-output").filter(has=page.locator(selector))
    return out.filter(has_not=page.locator(not_in)) if not_in else out


def test_07_cells_ran_without_errors(lab07):
    from playwright.sync_api import expect

    page, shots = lab07
    for sel, what in [(".jp-OutputArea-output:has-text('Error displaying widget')", "widget error"),
                      # an HTML output JupyterLab failed to render (e.g. an SVG <a href> its link rewriting breaks on)
                      (".jp-OutputArea-child:has-text('Javascript Error')", "rendering error"),
                      (".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']", "stderr output")]:
        n = page.locator(sel).count()
        assert n == 0, f"{n} {what}(s): {page.locator(sel).first.inner_text()[:800]}"
    page.evaluate("() => document.querySelector('.jp-NotebookPanel .jp-WindowedPanel-outer').scrollTop = 0")
    page.screenshot(path=str(shots / "07_top.png"))
    # the printed rounds, in the page: the re-asking run, the constrained run's prose answer, the copied example,
    # the browsing run (its subfolder listed, then a file read)
    printed = page.locator(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stdout']")
    for text, name in [("round 4 → forced final", "07_reask_rounds.png"),
                       ("I will refer to the file", "07_good_rounds.png"),
                       ("gates/gate-actions.md  (1937 chars)", "07_copied_rounds.png"),
                       ("subfolders concepts/  (431 chars)", "07_browse_rounds.png"),
                       ('[{"name": "fields.md", "size": 2178}', "07_browse_listing.png")]:
        expect(printed.filter(has_text=text)).to_have_count(1)
        printed.filter(has_text=text).scroll_into_view_if_needed()
        expect(printed.filter(has_text=text)).to_be_in_viewport()
        page.wait_for_timeout(300)   # the windowed notebook paints cells scrolled in a frame later
        page.screenshot(path=str(shots / name))
    live = page.locator(".jp-OutputArea-output", has_text="not run: set LADR_LIVE")
    expect(live).to_have_count(1)   # the live cell did not run a model
    live.scroll_into_view_if_needed()
    page.screenshot(path=str(shots / "07_page_end.png"))


def test_07_widgets_render(lab07):
    from playwright.sync_api import expect

    page, shots = lab07
    trace_out = _outputs(page, ".ladr-trace-view", not_in=".ladr-replay-view")   # the ReplayView holds one too
    expect(trace_out).to_have_count(1)
    editors = _outputs(page, ".ladr-schema-editor")
    expect(editors).to_have_count(2)
    replay_out = _outputs(page, ".ladr-replay-view")
    expect(replay_out).to_have_count(1)
    for out in (trace_out, editors.nth(0), editors.nth(1), replay_out):
        assert "VBox(children=" not in out.inner_text()   # widget DOM, not the text fallback

    # section 1: the re-asking run, its four rounds listed once the step is opened
    view = trace_out.locator(".ladr-trace-view").first
    trace_out.scroll_into_view_if_needed()
    view.locator(".ladr-step button.ladr-toggle").first.click()
    expect(view.locator(".ladr-round")).to_have_count(4)
    view.screenshot(path=str(shots / "07_trace_view.png"))

    # section 2: the tight schema's fix flips round 1; section 3: required: [files] flips round 2 to final
    tight, loose = editors.nth(0), editors.nth(1)
    expect(tight.locator(".ladr-flip")).to_have_count(1)
    expect(tight.locator(".ladr-flip").first).to_be_visible()
    tight.locator(".ladr-schema-editor").screenshot(path=str(shots / "07_tight_editor.png"))
    expect(loose.locator(".ladr-flip")).to_have_count(1)
    loose.locator(".ladr-schema-editor").screenshot(path=str(shots / "07_loose_editor.png"))

    expect(replay_out).to_contain_text("no divergence")
    replay_out.locator(".ladr-replay-view").screenshot(path=str(shots / "07_replay_view.png"))


def test_07_nothing_overflows(lab07):
    page, _ = lab07
    # an output wider than its cell gets a horizontal scrollbar: scrollWidth > clientWidth (the widgets, and the
    # printed rounds with their long lines)
    outputs = page.locator(".jp-OutputArea-output")
    assert outputs.count() >= 12
    for i in range(outputs.count()):
        out = outputs.nth(i)
        out.scroll_into_view_if_needed()
        sw, cw = out.evaluate("e => [e.scrollWidth, e.clientWidth]")
        assert sw <= cw + 1, f"output {i} overflows its cell: {sw} > {cw} px: {out.inner_text()[:200]!r}"
