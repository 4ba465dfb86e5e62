"""Two real experiment folders, run offline with a scripted model, that differ in known ways: the run `after` is the
run `before` with the model changed on some rows (a regression, a fix, an error, a reworded answer), one row
dropped and one added. The comparison tests and the ComparisonView tests read them.

Two variants, `terse` and `long` (knob sets: the prompt shows the style, so both run). Each row asks for
`fetched: core.md` and `contains: ANSWER`. Per row, before → after (both variants unless said):

    ok        pass → pass, same output             unchanged
    regress   pass → fail (no fetch)               pass→fail in terse; in long it passes on both sides
    fix       fail → pass                          fail→pass
    down      pass → error (the model raises)      pass→fail
    wording   pass → pass, another answer          output
    worse     fail → error                         status
    gone      only before                          missing
    new       only after                           new
"""
from __future__ import annotations

import shutil
import textwrap
from pathlib import Path

from ladr_lab.config import load_ladder_text
from ladr_lab.experiments import experiment
from ladr_lab.models import ScriptedModel
from tests.conftest import FIXTURES, SLATES_YAML

STEP = """
- id: research
  fields:
    - { name: Question, type: text, from: input.context }
    - { name: Style, type: text, value: "style={{knobs.style}}" }
  retrieve:
    to: { slate: Knowledge, folder: docs }
    as: Docs
    maxRounds: 2
    requestMatch: { type: object, required: [request], properties: { request: { type: object, required: [files] } } }
"""
ROWS_BEFORE = ["ok", "regress", "fix", "down", "wording", "worse", "gone"]
ROWS_AFTER = ["ok", "regress", "fix", "down", "wording", "worse", "new"]
FETCH = '{"request": {"files": ["core.md"]}}'

# (row, variant) -> the change `after` shows against `before`
EXPECTED = {("terse", "regress"): "pass→fail", ("terse", "fix"): "fail→pass", ("terse", "down"): "pass→fail",
            ("terse", "wording"): "output", ("terse", "worse"): "status", ("terse", "gone"): "missing",
            ("terse", "new"): "new",
            ("long", "fix"): "fail→pass", ("long", "down"): "pass→fail", ("long", "wording"): "output",
            ("long", "worse"): "status", ("long", "gone"): "missing", ("long", "new"): "new"}


def _answer(after: bool):
    def answer(messages, call):
        text = messages[-1]["content"]
        row = text.split("row=", 1)[1].split()[0]
        terse = "style=terse" in text
        if call.round > 1:                   # the document was shown: the answer
            return "ANSWER: from the docs" + (" (reworded)" if after and row == "wording" else "")
        if after and row in ("down", "worse"):
            raise RuntimeError("model down")
        fetch = {"ok": True, "regress": not (after and terse), "fix": after, "down": True, "wording": True,
                 "worse": False, "gone": True, "new": True}[row]
        return FETCH if fetch else "ANSWER: from memory"
    return answer


def two_runs(tmp: Path) -> tuple[Path, Path]:
    """Run the experiment before and after into `tmp/before` and `tmp/after`; returns both folders."""
    know = tmp / "Knowledge"
    if not know.exists():
        shutil.copytree(FIXTURES / "knowledge", know)
    (tmp / "Memory" / "facts").mkdir(parents=True, exist_ok=True)
    steps = textwrap.indent(textwrap.dedent(STEP).strip("\n") + "\n", "  ")
    lad = load_ladder_text("name: cmp\nknobs: { style: terse }\n" + SLATES_YAML + "steps:\n" + steps)
    out = []
    for name, rows, after in (("before", ROWS_BEFORE, False), ("after", ROWS_AFTER, True)):
        inputs = [{"id": r, "context": f"row={r} what is core?",
                   "assert": ["fetched: core.md", "contains: ANSWER"]} for r in rows]
        experiment(lad, inputs, knob_sets={"terse": {"style": "terse"}, "long": {"style": "long"}},
                   model=ScriptedModel(_answer(after)), slates={"Knowledge": know, "Memory": tmp / "Memory"},
                   out=tmp / name, concurrency=1, progress=False, cache=False)
        out.append(tmp / name)
    return out[0], out[1]
