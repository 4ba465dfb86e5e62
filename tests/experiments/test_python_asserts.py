"""`python:` assertions find their module in the current folder (before, `python: checks:confident` failed with "No
module named 'checks'" until PYTHONPATH was set) and the experiment file's folder, and take `file.py:function`; none
of it changes sys.path. Each test names its modules apart: a module once imported stays in sys.modules."""
from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from ladr_lab.errors import UsageError
from ladr_lab.experiments.assertions import check_all, load_asserts
from ladr_lab.experiments.file import load_experiment_file

CELL = {"status": "completed", "output": "see retrieve/dedup.md"}
CHECK = "def confident(output):\n    return 'dedup' in output\n"


def test_a_module_in_the_current_folder_is_found_without_pythonpath(tmp_path, monkeypatch):
    (tmp_path / "cwdchecks_a1.py").write_text(CHECK)
    monkeypatch.chdir(tmp_path)
    before = list(sys.path)
    (a,) = load_asserts("python: cwdchecks_a1:confident")
    assert a.value.__name__ == "confident" and check_all([a], CELL)[a.name].passed is True
    assert sys.path == before


def test_a_package_module_in_the_current_folder_is_found(tmp_path, monkeypatch):
    (tmp_path / "cwdpkg_b2").mkdir()
    (tmp_path / "cwdpkg_b2" / "__init__.py").write_text("")
    (tmp_path / "cwdpkg_b2" / "rules.py").write_text(CHECK)
    monkeypatch.chdir(tmp_path)
    (a,) = load_asserts("python: cwdpkg_b2.rules:confident")
    assert a.value("dedup") is True


def test_file_py_function_relative_to_the_current_folder(tmp_path, monkeypatch):
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "my checks.py").write_text(CHECK)
    monkeypatch.chdir(tmp_path)
    (a,) = load_asserts({"type": "python", "value": "sub/my checks.py:confident"})
    assert a.value("dedup") is True and a.value("nothing") is False
    (b,) = load_asserts(f"python: {tmp_path / 'sub' / 'my checks.py'}:confident")     # an absolute path
    assert b.value is a.value


def test_a_changed_file_is_loaded_again(tmp_path, monkeypatch):
    path = tmp_path / "changing_c3.py"
    path.write_text("def f(output):\n    return 1\n")
    monkeypatch.chdir(tmp_path)
    assert load_asserts("python: changing_c3.py:f")[0].value("x") == 1
    time.sleep(0.01)
    path.write_text("def f(output):\n    return 2  # changed\n")
    assert load_asserts("python: changing_c3.py:f")[0].value("x") == 2


def test_in_an_experiment_file_paths_and_modules_are_found_beside_it(tmp_path, monkeypatch):
    """The file's folder holds the ladder, the checks module and a checks file; the command runs elsewhere."""
    here = tmp_path / "exp"
    here.mkdir()
    (here / "l.yaml").write_text("name: t\nsteps:\n  - id: a\n")
    (here / "filechecks_d4.py").write_text(CHECK)
    (here / "modchecks_d4.py").write_text(CHECK)
    (here / "e.yaml").write_text("variants: {a: l.yaml}\ninputs: [{id: q, context: dedup}]\nassert:\n"
                                 "  - python: filechecks_d4.py:confident\n  - python: modchecks_d4:confident\n")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    spec = load_experiment_file(here / "e.yaml")
    first, second = spec.kwargs["asserts"]
    assert first.value("dedup") is True and second.value("dedup") is True


@pytest.mark.parametrize("value, words", [
    ("nosuchfile_e5.py:f", "no file"),
    ("nosuchmodule_e5:f", "cannot import module 'nosuchmodule_e5'"),
    ("raising_e5.py:f", "importing"),
    ("fine_e5.py:nope", "has no 'nope'"),
])
def test_what_cannot_be_imported_is_a_usage_error_that_says_why(tmp_path, monkeypatch, value, words):
    (tmp_path / "raising_e5.py").write_text("raise RuntimeError('boom at import')\n")
    (tmp_path / "fine_e5.py").write_text(CHECK)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(UsageError) as info:
        load_asserts(f"python: {value}", where="row 2")
    assert words in str(info.value) and "row 2" in str(info.value)


def test_the_command_line_finds_a_checks_module_in_the_folder_it_runs_in(tmp_path):
    """The issue's case: `ladr-lab eval ... --assert "python: checks:confident"` run in the folder holding checks.py,
    with no PYTHONPATH pointing there."""
    (tmp_path / "checks.py").write_text(CHECK)
    (tmp_path / "l.yaml").write_text("name: t\nsteps:\n  - id: a\n    fields: [{ name: Q, type: text, from: "
                                     "input.context }]\n")
    (tmp_path / "in.jsonl").write_text('{"id": "q", "context": "dedup"}\n')
    (tmp_path / "answers.yaml").write_text('"*": ["it is dedup"]\n')
    repo = Path(__file__).resolve().parents[2]
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(repo), "HOME": str(tmp_path)}
    # -P: the current folder is not put on sys.path, as for the installed `ladr-lab` script
    p = subprocess.run([sys.executable, "-P", "-m", "ladr_lab", "eval", "l.yaml", "--inputs", "in.jsonl", "--out", "o",
                        "--model", "script:answers.yaml", "--assert", "python: checks:confident", "--no-progress",
                        "--json"], cwd=tmp_path, capture_output=True, text=True, env=env, timeout=120)
    assert p.returncode == 0, p.stdout + p.stderr
