"""A knowledge source bound to a step at run time (seed 004's undeclared binding): a ladder learns from its
own past runs through the run-file retriever."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from ladr_lab.engine import Run
from ladr_lab.errors import RunError
from ladr_lab.models import ScriptedModel
from ladr_lab.runfiles import RunFileSource

STEP = """
- id: answer
  fields: [{ name: Question, type: text, from: input.context }]
"""


def test_a_step_gets_the_evidence_of_its_own_past_runs(ladder, slates, tmp_path):
    runs = tmp_path / "runs"
    lad = ladder(STEP)
    Run(lad, model=ScriptedModel(["The code word is ACME-7781."]), slates=slates, input="What is the code word?",
        run_dir=runs).run()
    source = RunFileSource(runs, owner="answer", top_k=2, name="PastRuns")
    second = Run(lad, model=ScriptedModel(["I remember."]), slates=slates, input="Tell me the code word again",
                 run_dir=runs, knowledge={"answer": [source]})
    second.run()
    source.close()
    call = second.trace.calls()[0]
    knowledge = [s for s in call.prompt_sections() if s.kind == "knowledge"]
    assert [s.name for s in knowledge] == ["PastRuns"] and "ACME-7781" in knowledge[0].text
    assert "Tell me the code word again" not in knowledge[0].text        # this run's own turn is not evidence


def test_a_source_over_another_folder_sees_every_past_record(ladder, slates, tmp_path):
    runs = tmp_path / "past"
    Run(ladder(STEP), model=ScriptedModel(["ORBITAL-4412 went to the archive."]), slates=slates, input="Where?",
        run_dir=runs).run()
    with_source = RunFileSource(runs, owner="answer", top_k=3)
    r = Run(ladder(STEP), model=ScriptedModel(["ok"]), slates=slates, input="where did ORBITAL-4412 go",
            knowledge={"answer": [with_source]})
    r.run()
    with_source.close()
    assert "ORBITAL-4412 went to the archive." in r.trace.calls()[0].messages[1]["content"]


def test_knowledge_for_an_unknown_step_is_refused(ladder, slates, tmp_path):
    class Nothing:
        name = "x"

        def evidence(self, question, *, episode=None, conversation=None):
            return ""

    with pytest.raises(RunError, match="unknown step"):
        Run(ladder(STEP), model=ScriptedModel(["ok"]), slates=slates, knowledge={"nope": [Nothing()]})


def test_the_command_line_binds_a_source(tmp_path):
    lad = tmp_path / "l.yaml"
    lad.write_text("name: learn\nsteps:\n  - id: answer\n"
                   "    fields: [{ name: Question, type: text, from: input.context }]\n")
    (tmp_path / "s1.yaml").write_text('answer: ["The code word is ACME-7781."]\n')
    (tmp_path / "s2.yaml").write_text('answer: ["ok"]\n')
    base = [sys.executable, "-m", "ladr_lab", "run", str(lad), "--run-dir", str(tmp_path / "runs"), "--json"]
    subprocess.run(base + ["--input", "code?", "--model", f"script:{tmp_path / 's1.yaml'}"], check=True,
                   capture_output=True)
    p = subprocess.run(base + ["--input", "the code word again", "--model", f"script:{tmp_path / 's2.yaml'}",
                               "--knowledge", f"answer={tmp_path / 'runs'},top_k=2,name=PastRuns",
                               "--trace-out", str(tmp_path / "t.jsonl")], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    call = json.loads((tmp_path / "t.jsonl").read_text().splitlines()[2])
    assert "PastRuns:\n" in call["messages"][1]["content"] and "ACME-7781" in call["messages"][1]["content"]
    bad = subprocess.run(base + ["--knowledge", "answer", "--input", "x"], capture_output=True, text=True)
    assert bad.returncode == 2 and "--knowledge takes STEP=RUN_DIR" in bad.stdout and "Traceback" not in bad.stderr
