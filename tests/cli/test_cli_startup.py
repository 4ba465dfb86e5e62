"""Start-up off the critical path: `--help`, `--version`, usage errors, a missing key and a mistyped model name
import neither litellm nor pandas (each in a fresh interpreter, counting `sys.modules` at exit)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PROBE = ("import runpy, sys\n"
         "sys.argv = ['ladr_lab', *sys.argv[1:]]\n"
         "try:\n    runpy.run_module('ladr_lab', run_name='__main__')\n"
         "except SystemExit as exc:\n    code = exc.code\n"
         "sys.stdout.flush()\n"
         "print('EXIT', code, sorted(m for m in ('litellm', 'pandas') if m in sys.modules), file=sys.stderr)\n")
LADDER = str(ROOT / "examples" / "single_shot.yaml")
INPUTS = str(ROOT / "examples" / "experiments" / "questions.jsonl")


def _run(*args: str) -> tuple[str, str, str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env["PYTHONPATH"] = str(ROOT)
    done = subprocess.run([sys.executable, "-c", PROBE, *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=120, env=env)
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("EXIT "), done.stderr[-2000:]
    return done.stdout, done.stderr, last


@pytest.mark.parametrize("args, code", [
    (["--help"], "0"), (["eval", "--help"], "0"), (["run", "--help"], "0"), (["--version"], "0"),
    (["run"], "2"), (["eval", LADDER], "2"), (["run", "--bogus", LADDER], "2"), (["nosuchcommand"], "2"),
    (["eval", LADDER, "--inputs", INPUTS, "--out", "x", "--concurrency", "0"], "2"),
], ids=lambda v: " ".join(v) if isinstance(v, list) else v)
def test_help_version_and_usage_errors_import_nothing_heavy(args, code):
    _, _, last = _run(*args)
    assert last == f"EXIT {code} []"


def test_version_prints_the_package_version():
    out, _, last = _run("--version")
    assert out.startswith("ladr-lab ") and out.split()[1][0].isdigit() or "unknown" in out
    assert last == "EXIT 0 []"


@pytest.mark.parametrize("args, said", [
    (["run", LADDER, "--input", "q", "--model", "openai/gpt-4o-mini"],
     "ladr-lab: openai/gpt-4o-mini needs OPENAI_API_KEY, which is not set"),
    (["run", LADDER, "--input", "q", "--model", "offlne"], "ladr-lab: unknown model 'offlne': did you mean \"offline\"?"),
    (["eval", LADDER, "--inputs", INPUTS, "--out", "OUT", "--model", "anthropic/claude-3-5-sonnet-20240620",
      "--no-progress"], "anthropic/claude-3-5-sonnet-20240620 needs ANTHROPIC_API_KEY, which is not set"),
], ids=["run-missing-key", "run-offlne", "eval-missing-key"])
def test_a_missing_key_or_a_mistyped_name_is_said_before_any_heavy_import(args, said, tmp_path):
    args = [str(tmp_path / "out") if a == "OUT" else a for a in args]
    out, err, last = _run(*args)
    assert said in err, err[-2000:]
    assert last == "EXIT 1 []", last


def test_a_missing_key_of_a_model_the_ladder_names_is_said_before_any_cell(tmp_path):
    """No --model: the ladder's own `model:` (and its steps') is checked the same way, once, before a cell runs or a
    results folder is made."""
    ladder = tmp_path / "named.yaml"
    text = Path(LADDER).read_text(encoding="utf-8")
    assert "\nmodel: offline\n" in text
    ladder.write_text(text.replace("\nmodel: offline\n", "\nmodel: openai/gpt-4o-mini\n"), encoding="utf-8")
    out, err, last = _run("eval", str(ladder), "--inputs", INPUTS, "--out", str(tmp_path / "out"), "--no-progress")
    assert "ladr-lab: openai/gpt-4o-mini needs OPENAI_API_KEY, which is not set" in err, err[-2000:]
    assert last == "EXIT 1 []" and not (tmp_path / "out").exists()
