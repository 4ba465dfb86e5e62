"""The Stepper's streaming and Stop in a real browser: JupyterLab in headless Chromium runs a small notebook whose
Stepper drives `examples/research_small.yaml` with a scripted model that writes its answer a word at a time
(`ScriptedModel(..., stream_delay=...)`, as a slow local model would). Step, watch round 2's text grow under the
prompt with its speed, click Stop while it writes (the kernel hears the click: the call runs on its own thread),
see the call recorded as stopped and still pending, and Step again to have it answered in full.

Skips as test_lab_notebook.py does. Screenshots (stream_*.png) land beside the notebooks'.
"""
from __future__ import annotations

import json
import re
import time

import pytest

from tests.browser.lab import lab_page, require_or_skip

pytestmark = require_or_skip()

TIMEOUT_MS = 60_000
ANSWER = ("Dedup is per step execution and per node: a file already given in an earlier round answers "
          "(already in context), so the model must ask for something new or answer. " * 3)
SOURCE = f"""\
from pathlib import Path

from ladr_lab.models import ScriptedModel
from ladr_lab.widgets import Stepper

ROOT = Path(".") if Path("examples").exists() else Path("..")
script = {{"research": ['{{"files": ["retrieve/dedup.md"]}}', {ANSWER!r}]}}
model = ScriptedModel(script, stream_delay=0.12)   # a word every 0.12 s, as a slow local model writes
stepper = Stepper(ROOT / "examples" / "research_small.yaml", input="How does dedup work across rounds?",
                  model=model, cache=False)
stepper
"""


def _notebook(folder) -> object:
    nb = {"cells": [{"cell_type": "markdown", "metadata": {}, "source": ["# Watch the model write, and stop it"]},
                    {"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [],
                     "source": SOURCE.splitlines(True)}],
          "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}},
          "nbformat": 4, "nbformat_minor": 5}
    path = folder / "stepper_stream.ipynb"
    path.write_text(json.dumps(nb, indent=1), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    src = _notebook(tmp_path_factory.mktemp("nb"))
    with lab_page(src, tmp_path_factory.mktemp("labstream"), TIMEOUT_MS) as opened:
        yield opened


def test_stop_cancels_the_call_as_it_writes_and_step_sends_it_again(lab):
    from playwright.sync_api import expect

    page, shots, timings = lab
    out = page.locator(".jp-OutputArea-output").filter(has=page.locator(".ladr-stepper"))
    expect(out).to_have_count(1)
    stepper = out.locator(".ladr-stepper")
    step = stepper.locator("button.widget-button", has_text=re.compile(r"^\s*Step\s*$"))
    stop = stepper.locator("button.ladr-stop")
    count = stepper.locator(".ladr-round-count").first
    expect(stop).to_be_disabled()
    # round 1: the request, streamed a word at a time
    step.click()
    expect(count).to_contain_text(re.compile(r"\b1 round\b"))
    expect(stepper.locator(".ladr-pending")).to_contain_text("round 2")
    # round 2: its text grows under the prompt, with tokens and tokens per second
    t = time.monotonic()
    step.click()
    live = stepper.locator(".ladr-live")
    expect(live).to_contain_text("writing")
    expect(live.locator(".ladr-live-pre")).to_contain_text("per node")
    expect(live).to_contain_text(re.compile(r"\d+ tokens · [\d.]+ tok/s"))
    expect(stop).to_be_enabled()
    expect(step).to_be_disabled()
    timings["first words shown"] = time.monotonic() - t
    live.scroll_into_view_if_needed()
    stepper.screenshot(path=str(shots / "stream_writing.png"))
    # the buttons and the growing text in one view: Stop enabled, Step disabled while the call runs
    stop.evaluate("b => b.scrollIntoView({block: 'start'})")
    page.wait_for_timeout(300)       # the windowed notebook paints what scrolled in a frame later
    page.screenshot(path=str(shots / "stream_writing_page.png"))
    shown = live.locator(".ladr-live-pre").inner_text()
    # Stop while it writes: the kernel hears the click, the call is cancelled and kept pending
    t = time.monotonic()
    stop.click()
    message = stepper.locator(".ladr-message")
    expect(message).to_contain_text("Stopped: research · node 1 · round 2 was cancelled")
    expect(message).to_contain_text("Step sends it again")
    timings["Stop to stopped"] = time.monotonic() - t
    expect(live).to_contain_text("stopped")
    expect(count).to_contain_text(re.compile(r"\b1 round\b"))          # a cancelled call is not a round made
    expect(stepper.locator(".ladr-pending")).to_contain_text("round 2")
    partial = live.locator(".ladr-live-pre").inner_text()
    assert shown.strip() and partial.startswith(shown.strip()[:20]) and len(partial) < len(ANSWER), partial
    expect(stop).to_be_disabled()
    expect(step).to_be_enabled()
    stepper.screenshot(path=str(shots / "stream_stopped.png"))
    # the trace shows the stopped call
    expect(stepper.locator(".ladr-trace-view")).to_contain_text("stopped after")
    # Step again: the same call, answered in full; the run ends
    step.click()
    expect(count).to_contain_text(re.compile(r"\b2 rounds\b"), timeout=120_000)
    expect(stepper.locator(".ladr-last-round")).to_contain_text("tok/s")
    expect(stepper.locator(".ladr-pending")).to_contain_text("completed")
    expect(live).to_be_hidden()
    stepper.screenshot(path=str(shots / "stream_done.png"))
