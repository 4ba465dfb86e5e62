"""The command line: validate and run, as SPEC §9 fixes them, and never a traceback."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ladr_lab.cli import build_parser, main

ROOT = Path(__file__).resolve().parents[2]


def cli(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    env = dict(os.environ, LITELLM_LOCAL_MODEL_COST_MAP="True")
    return subprocess.run([sys.executable, "-m", "ladr_lab", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=120, env=env)


def test_validate_ok_prints_cost_and_ok():
    p = cli("validate", "examples/parallel_investigators.yaml")
    assert p.returncode == 0, p.stdout + p.stderr
    assert p.stdout.strip().endswith("OK")
    assert "investigate" in p.stdout and "3 × (2 + 1)" in p.stdout and "maxLlmCalls" in p.stdout


def test_validate_warns_when_worst_case_exceeds_budget(tmp_path):
    lad = tmp_path / "l.yaml"
    lad.write_text("name: x\nexecutionBudget: { maxLlmCalls: 3 }\nknobs: { n: 4 }\nsteps:\n"
                   "  - id: fan\n    nodes: '{{knobs.n}}'\n")
    p = cli("validate", str(lad))
    assert p.returncode == 0
    assert "warning: the worst case (4) exceeds executionBudget.maxLlmCalls (3)" in p.stdout
    p2 = cli("validate", str(lad), "--knob", "n=2")
    assert "warning" not in p2.stdout


def test_validate_reports_every_problem_with_positions(tmp_path):
    lad = tmp_path / "bad.yaml"
    lad.write_text("name: x\nsteps:\n  - id: a\n    nodes: 0\n    typo: 1\n  - id: a\n")
    p = cli("validate", str(lad))
    assert p.returncode == 1 and "Traceback" not in p.stdout + p.stderr
    lines = [ln for ln in p.stdout.splitlines() if ": error: " in ln]
    assert len(lines) == 3
    assert any(ln.startswith(f"{lad}:4:12: error: ") and "nodes must be" in ln for ln in lines)
    j = cli("validate", str(lad), "--json")
    data = json.loads(j.stdout)
    assert j.returncode == 1 and data["ok"] is False and {p["line"] for p in data["problems"]} == {4, 5, 6}


@pytest.mark.parametrize("content", ["", "just a string", "name: [unclosed", "\t- bad", "steps: 3"])
def test_validate_never_tracebacks_on_garbage(tmp_path, content):
    lad = tmp_path / "g.yaml"
    lad.write_text(content)
    p = cli("validate", str(lad))
    assert p.returncode == 1 and "Traceback" not in p.stdout + p.stderr and "error" in p.stdout


def test_validate_missing_file():
    p = cli("validate", "nope.yaml")
    assert p.returncode == 1 and "cannot read ladder file" in p.stdout


def test_run_json_summary_and_trace(tmp_path):
    trace = tmp_path / "t.jsonl"
    p = cli("run", "examples/research.yaml", "--input", "What happens when maxRounds is reached?", "--json",
            "--trace-out", str(trace))
    summary = json.loads(p.stdout.strip().splitlines()[-1])
    assert p.returncode == 0 and summary["status"] == "completed" and summary["error"] is None
    events = [json.loads(line) for line in trace.read_text().splitlines()]
    calls = [e for e in events if e["type"] == "llm_call"]
    assert len(calls) == summary["llm_calls"] >= 2
    assert calls[0]["request_match"] == "retrieval" and calls[-1]["request_match"] == "final"
    assert events[-1]["type"] == "run_end" and events[-1]["output"] == summary["output"]
    assert "[" in summary["output"] and ".md]" in summary["output"]  # the offline model cites what it read


def test_run_prints_rounds_readably():
    p = cli("run", "examples/research.yaml", "--input", "How does deduplication work across retrieval rounds?")
    assert p.returncode == 0
    assert "research · node 1 · round 1 → retrieval" in p.stdout
    assert "why: JSON found" in p.stdout and "fetched" in p.stdout and "Output:" in p.stdout


def test_run_with_script_knobs_slate_and_input_json(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_text("ALPHA")
    lad = tmp_path / "l.yaml"
    lad.write_text("""name: x
knobs: { n: 1 }
slates: [{ title: K, folders: [{ name: docs }] }]
steps:
  - id: s
    nodes: "{{knobs.n}}"
    fields:
      - { name: Topic, type: text, from: input.topic }
      - { name: A, type: slateRead, from: { slate: K, folder: docs, metatag: index } }
""")
    (tmp_path / "script.yaml").write_text("s/1: [one]\ns/2: [two]\n")
    p = cli("run", str(lad), "--model", f"script:{tmp_path / 'script.yaml'}", "--knob", "n=2", "--slate",
            f"K={tmp_path}", "--input-json", '{"topic": "T"}', "--json", "--trace-out", str(tmp_path / "t.jsonl"))
    s = json.loads(p.stdout.strip().splitlines()[-1])
    assert s["status"] == "completed" and s["output"] == "one\n\ntwo" and s["llm_calls"] == 2
    prompt = json.loads((tmp_path / "t.jsonl").read_text().splitlines()[2])["messages"][1]["content"]
    assert prompt.startswith("Topic:\nT\n\nA:\n") and '"a.md"' in prompt


def test_run_errors_are_json_not_tracebacks(tmp_path):
    lad = tmp_path / "l.yaml"
    lad.write_text("name: x\nslates: [{ title: K, folders: [{ name: d }] }]\nsteps: [{ id: s }]\n")
    p = cli("run", str(lad), "--json")
    s = json.loads(p.stdout.strip().splitlines()[-1])
    assert p.returncode == 1 and s["status"] == "error" and 'slate "K" has no path' in s["error"]
    p = cli("run", str(lad), "--json", "--slate", f"K={tmp_path}", "--model", f"script:{tmp_path}/none.yaml")
    s = json.loads(p.stdout.strip().splitlines()[-1])
    assert s["status"] == "error" and "Traceback" not in p.stdout + p.stderr
    p = cli("run", str(lad), "--json", "--slate", f"K={tmp_path}", "--input", "x")
    assert json.loads(p.stdout.strip().splitlines()[-1])["status"] == "completed"
    p = cli("run", str(tmp_path / "missing.yaml"), "--json")
    assert p.returncode == 1 and json.loads(p.stdout.strip().splitlines()[-1])["status"] == "error"


def test_script_exhaustion_names_the_key(tmp_path):
    lad = tmp_path / "l.yaml"
    lad.write_text("name: x\nsteps: [{ id: s }, { id: t }]\n")
    (tmp_path / "s.yaml").write_text("s: [only]\n")
    p = cli("run", str(lad), "--json", "--model", f"script:{tmp_path / 's.yaml'}")
    s = json.loads(p.stdout.strip().splitlines()[-1])
    assert s["status"] == "error" and '"t' in s["error"] and s["llm_calls"] == 1


def test_run_dir_writes_history_and_log(tmp_path):
    p = cli("run", "examples/research.yaml", "--input", "glob mode", "--run-dir", str(tmp_path / "run"), "--json")
    assert p.returncode == 0
    hist = (tmp_path / "run" / "research.history").read_text()
    assert "research has started episode 1." in hist and "/node-1] research said (round 1):" in hist
    assert (tmp_path / "run" / "research.log").read_text().count("INFO  [") >= 2


def test_every_command_and_flag_is_documented_in_the_readme():
    readme = (ROOT / "README.md").read_text()
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "cmd")
    for name, sp in sub.choices.items():
        assert f"ladr-lab {name}" in readme
        for action in sp._actions:
            for opt in action.option_strings:
                if opt.startswith("--") and opt != "--help":
                    assert opt in readme, f"{name} {opt} is not in the README"


def test_main_in_process_returns_exit_codes(capsys):
    assert main(["validate", str(ROOT / "examples" / "research.yaml")]) == 0
    assert "OK" in capsys.readouterr().out


def test_validate_does_not_build_the_iri_grammar_jsonschema_would_import() -> None:
    # jsonschema imports rfc3987_syntax (when installed) for the "iri" formats, seconds of grammar building that
    # `validate` does not need; the command's own process skips it, a library user's process is untouched
    code = ("import sys; from ladr_lab.cli import main; rc = main(['validate', 'examples/bare_form.yaml']); "
            "import jsonschema; print(rc, sys.modules.get('rfc3987_syntax', 'absent'))")
    p = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120,
                       env=dict(os.environ, LITELLM_LOCAL_MODEL_COST_MAP="True"))
    assert p.stdout.splitlines()[-1] in ("0 None", "0 absent"), p.stdout + p.stderr
    lib = subprocess.run([sys.executable, "-c", "import sys, ladr_lab; print(sys.modules.get('rfc3987_syntax', 'absent'))"],
                         cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert lib.stdout.strip() == "absent"                       # importing the library changes nothing


def test_run_replay_of_fewer_calls_than_recorded_exits_1_and_says_so(tmp_path):
    lad = tmp_path / "l.yaml"
    text = "name: x\nsteps: [{ id: s, nodes: 2 }]\n"
    lad.write_text(text)
    (tmp_path / "s.yaml").write_text("s/1: [one]\ns/2: [two]\n")
    trace = tmp_path / "t.jsonl"
    assert main(["run", str(lad), "--model", f"script:{tmp_path / 's.yaml'}", "--trace-out", str(trace),
                 "--json"]) == 0
    lad.write_text(text.replace("nodes: 2", "nodes: 1"))
    p = cli("run", str(lad), "--model", f"replay:{trace}", "--json")
    s = json.loads(p.stdout.strip().splitlines()[-1])
    assert p.returncode == 1 and s["status"] == "completed" and s["divergence"]["unserved"] == 1
    assert (s["divergence"]["step"], s["divergence"]["node"]) == ("s", 2)
    p = cli("run", str(lad), "--model", f"replay:{trace}")
    assert p.returncode == 1 and "1 recorded call(s) were not asked for" in p.stdout


def test_json_commands_print_json_for_a_bad_ladder(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: b\nsteps:\n  - id: s\n    fieldz: []\n")
    inputs = tmp_path / "in.csv"
    inputs.write_text("id,context\n1,q\n")
    trace = tmp_path / "t.jsonl"
    trace.write_text('{"type": "run_end", "status": "completed", "output": ""}\n')
    for args in (["run", bad], ["eval", bad, "--inputs", inputs, "--out", tmp_path / "ev", "--no-progress"],
                 ["trace", "rejudge", trace, "--ladder", bad]):
        p = cli(*map(str, args), "--json")
        s = json.loads(p.stdout)                  # one JSON object, not FILE:LINE:COL lines
        assert p.returncode == 1 and "Traceback" not in p.stderr
        assert {"status", "output", "llm_calls", "error"} <= set(s) and s["status"] == "error"
        assert s["error_type"] == "ConfigErrors" and s["error_where"] == f"{bad}:4:5"
        assert [(q["rule"], q["suggestion"], q["line"]) for q in s["problems"]] == [("unknown-key", "fields", 4)]
    plain = cli("trace", "rejudge", str(trace), "--ladder", str(bad))
    assert plain.returncode == 1 and plain.stdout.startswith(f"{bad}:4:5: error:")


def test_run_on_a_bad_ladder_prints_each_problem_once(tmp_path, capsys):
    lad = tmp_path / "bad.yaml"
    lad.write_text("name: x\nsteps:\n  - { id: a, nodes: 0 }\n  - { id: b, type: nope }\n")
    assert main(["run", str(lad), "--input", "q"]) == 1
    out, err = capsys.readouterr()
    both = out + err
    assert both.count("nodes must be a whole number") == 1 and both.count('unknown step type "nope"') == 1
    assert err.strip() == f"ladr-lab: invalid ladder: 2 error(s) in {lad}"
    assert main(["run", str(lad), "--input", "q", "--json"]) == 1      # --json: every problem, in the one line
    line = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert line["status"] == "error" and "nodes must be" in line["error"] and '"nope"' in line["error"]


def test_a_failed_commands_json_is_a_run_result_with_its_problems(tmp_path):
    """`_error_json` is `RunResult.to_dict()` of a run that never started (every key of `run --json`'s summary,
    `edited_calls` too, in its order), then the ladder's `problems`."""
    from dataclasses import fields

    from ladr_lab.cli._common import _error_json
    from ladr_lab.config import load_ladder
    from ladr_lab.engine import RunResult
    from ladr_lab.errors import ConfigError, LadrError
    before = ["status", "output", "llm_calls", "error", "steps", "cost", "tokens_in", "tokens_out", "error_type",
              "error_step", "error_node", "error_path", "error_where", "divergence", "live_calls", "problems"]
    plain = _error_json("no such file", LadrError("no such file"))
    assert list(plain) == [f.name for f in fields(RunResult)] + ["problems"]
    assert [k for k in plain if k in before] == before and plain["edited_calls"] == 0
    assert plain == {**RunResult("error", "", 0, "no such file", error_type="LadrError").to_dict(), "problems": []}
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: b\nsteps:\n  - id: s\n    fieldz: []\n")
    with pytest.raises(ConfigError) as info:
        load_ladder(bad)
    s = _error_json("invalid ladder", info.value)
    assert (s["status"], s["output"], s["llm_calls"], s["error"], s["error_type"]) == \
        ("error", "", 0, "invalid ladder", "ConfigErrors")
    assert s["error_where"] == f"{bad}:4:5" and s["error_path"] == ["steps", 0, "fieldz"]
    assert [q["rule"] for q in s["problems"]] == ["unknown-key"] and _error_json("x")["error_type"] is None
