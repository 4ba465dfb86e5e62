"""Slate paths against the disk: a slate root that does not exist is never read silently as empty."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from ladr_lab.config import check_text, load_ladder
from ladr_lab.config.disk import with_disk_rules
from ladr_lab.engine import Run
from ladr_lab.errors import RunError

ROOT = Path(__file__).resolve().parents[2]

READ_ONLY = """\
name: t
slates:
  - title: Knowledge
    path: {path}
    folders: [{{ name: docs }}]
steps:
  - id: s
    fields:
      - {{ name: Index, type: slateRead, from: {{ slate: Knowledge, folder: docs, metatag: index }} }}
    systemPrompt: Answer.
"""

WRITTEN = """\
name: t
slates:
  - title: Memory
    path: {path}
    folders: [{{ name: facts }}]
steps:
  - id: s
    fields:
      - {{ name: Q, type: text, from: input.context }}
    systemPrompt: Answer.
    slateWrite: {{ to: {{ slate: Memory, folder: facts, file: a.md }}, match: {{ type: object, required: [x] }} }}
"""


def test_a_read_only_slate_root_that_does_not_exist_is_a_located_error_with_its_resolved_path(tmp_path):
    (tmp_path / "knowledge" / "docs").mkdir(parents=True)
    _, problems = check_text(READ_ONLY.format(path="knowlege"), file="l.yaml", base_dir=tmp_path,
                             registry=with_disk_rules())
    [p] = [p for p in problems if p.rule == "missing-slate-root"]
    assert p.severity == "error" and p.line == 4 and str(tmp_path / "knowlege") in p.message
    assert p.suggestion == "knowledge"


def test_a_written_slate_root_that_does_not_exist_is_a_warning_naming_it(tmp_path):
    ladder, problems = check_text(WRITTEN.format(path="mem"), base_dir=tmp_path, registry=with_disk_rules())
    assert ladder is not None
    [p] = [p for p in problems if p.rule == "new-slate-root"]
    assert p.severity == "warning" and str(tmp_path / "mem") in p.message


def test_validate_fails_and_run_refuses_before_the_first_call(tmp_path):
    (tmp_path / "l.yaml").write_text(READ_ONLY.format(path="nope"))
    done = subprocess.run([sys.executable, "-m", "ladr_lab", "validate", str(tmp_path / "l.yaml")], cwd=ROOT,
                          capture_output=True, text=True)
    assert done.returncode == 1 and "does not exist" in done.stdout
    assert str(tmp_path / "nope") in done.stdout and ":4:" in done.stdout
    with pytest.raises(RunError, match="does not exist"):
        Run(load_ladder(tmp_path / "l.yaml"))
    (tmp_path / "k" / "docs").mkdir(parents=True)
    with pytest.raises(RunError, match=r"wrong/dir"):
        Run(load_ladder(tmp_path / "l.yaml"), slates={"Knowledge": tmp_path / "wrong" / "dir"})
    run = Run(load_ladder(tmp_path / "l.yaml"), slates={"Knowledge": tmp_path / "k"})
    assert run.slate_notes == []


def test_a_written_slate_root_is_a_note_and_the_run_goes_on(tmp_path):
    (tmp_path / "l.yaml").write_text(WRITTEN.format(path="mem"))
    run = Run(load_ladder(tmp_path / "l.yaml"), input="q")
    assert any("does not exist yet" in n and str(tmp_path / "mem") in n for n in run.slate_notes)
