"""Notebook 01 in a real browser: JupyterLab in headless Chromium runs every cell of a cleared copy, and the widgets
render as widget DOM (not the text fallback `VBox(children=...)`) and answer clicks and edits.

Skips, saying what to install, when Chromium, Playwright or JupyterLab with the widget front end are absent.
Screenshots land in tests/browser/screenshots/ (git-ignored; $LADR_SCREENSHOTS overrides).
"""
from __future__ import annotations

import re
import time

import pytest

from tests.browser.lab import REPO, lab_page, require_or_skip

pytestmark = require_or_skip()

NOTEBOOK = REPO / "notebooks" / "01_tour.ipynb"
TIMEOUT_MS = 60_000


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """Notebook 01 open in JupyterLab with every cell run: (page, screenshot folder, timings)."""
    with lab_page(NOTEBOOK, tmp_path_factory.mktemp("lab"), TIMEOUT_MS) as opened:
        yield opened


def _output_with(page, selector: str, *, not_in: str | None = None):
    """The one cell output holding `selector` (and not `not_in`), scrolled into view."""
    from playwright.sync_api import expect

    out = page.locator(".jp-OutputArea-output").filter(has=page.locator(selector))
    if not_in:
        out = out.filter(has_not=page.locator(not_in))
    expect(out).to_have_count(1)
    out.scroll_into_view_if_needed()
    return out


def test_cells_ran_without_errors(lab):
    page, shots, _ = lab
    for sel, what in [(".jp-OutputArea-output:has-text('Error displaying widget')", "widget error"),
                      # an HTML output JupyterLab failed to render (e.g. an SVG <a href> its link rewriting breaks on)
                      (".jp-OutputArea-child:has-text('Javascript Error')", "rendering error"),
                      (".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']", "stderr output")]:
        n = page.locator(sel).count()
        assert n == 0, f"{n} {what}(s): {page.locator(sel).first.inner_text()[:800]}"
    page.screenshot(path=str(shots / "01_top.png"))


def test_stepper_renders_and_steps(lab):
    from playwright.sync_api import expect

    page, shots, timings = lab
    out = _output_with(page, ".ladr-stepper")
    stepper = out.locator(".ladr-stepper")
    # real widget DOM, not the text fallback `VBox(children=...)`
    expect(stepper.locator("button.widget-button", has_text=re.compile(r"^\s*Step\s*$"))).to_have_count(1)
    assert "VBox(children=" not in out.inner_text()
    count = stepper.locator(".ladr-round-count").first
    step = stepper.locator("button.widget-button", has_text=re.compile(r"^\s*Step\s*$"))
    expect(count).to_contain_text(re.compile(r"round|not started"))   # "not started" before the first call
    before = _settled_rounds(count)
    # as the notebook says: press Step twice, round 1 asks for documents, round 2 answers
    for n in (1, 2):
        t = time.monotonic()
        step.click()
        expect(count).to_contain_text(re.compile(rf"\b{before + n} rounds?\b"))
        timings[f"Step click {n}"] = time.monotonic() - t
        if n == 1:
            expect(stepper.locator(".ladr-pending")).to_contain_text("round 2")
            stepper.screenshot(path=str(shots / "01_stepper.png"))
    inner_trace = stepper.locator(".ladr-trace-view").first
    expect(inner_trace).to_contain_text("completed")
    stepper.screenshot(path=str(shots / "01_stepper_done.png"))
    out.scroll_into_view_if_needed()
    page.screenshot(path=str(shots / "01_stepper_in_page.png"))


def test_trace_view_renders(lab):
    from playwright.sync_api import expect

    page, shots, _ = lab
    out = _output_with(page, ".ladr-trace-view", not_in=".ladr-stepper")   # the Stepper holds one too
    view = out.locator(".ladr-trace-view").first
    expect(view).to_be_visible()
    assert "VBox(children=" not in out.inner_text()
    # open the step, then its last round: the round's prompt sections are built on demand in the kernel
    view.locator(".ladr-step button.ladr-toggle").first.click()
    rounds = view.locator(".ladr-round")
    expect(rounds).to_have_count(2)
    rounds.last.locator("button.ladr-toggle").first.click()
    expect(rounds.last).to_contain_text("systemPrompt")
    expect(rounds.last).to_contain_text("RetrievedDocuments 1")
    view.screenshot(path=str(shots / "01_trace_view.png"))


def test_schema_edit_marks_a_flip(lab):
    from playwright.sync_api import expect

    page, shots, timings = lab
    out = _output_with(page, ".ladr-schema-editor")
    editor = out.locator(".ladr-schema-editor")
    expect(editor.locator(".ladr-flip")).to_have_count(0)
    box = editor.locator(".ladr-schema-text textarea").first
    text = box.input_value()
    assert "files" in text, text
    # rename the files mode: the recorded request {"request": {"files": [...]}} no longer matches
    t = time.monotonic()
    box.fill(text.replace("files", "paths"))
    box.press("Tab")   # some front ends send the value on blur only
    expect(editor.locator(".ladr-flip").first).to_be_visible()
    timings["schema edit to flip"] = time.monotonic() - t
    errors = editor.locator(".ladr-schema-errors")
    assert errors.count() == 0 or not errors.first.inner_text().strip(), errors.first.inner_text()
    editor.screenshot(path=str(shots / "01_schema_editor_flip.png"))
    page.screenshot(path=str(shots / "01_page_end.png"))


def _settled_rounds(count, timeout: float = TIMEOUT_MS / 1000) -> int:
    """The round count once its text reads as one: the HTML widget may be mid-update (its text briefly empty) right
    after `to_contain_text` matched, so one read of `inner_text` races the front end."""
    deadline = time.monotonic() + timeout
    while True:
        text = count.inner_text()
        if "not started" in text or re.search(r"(\d+)\s+round", text) or time.monotonic() > deadline:
            return _rounds(text)
        time.sleep(0.1)


def _rounds(text: str) -> int:
    if "not started" in text:
        return 0
    m = re.search(r"(\d+)\s+round", text)
    assert m, f"no round count in {text!r}"
    return int(m.group(1))
