"""The analysis commands end to end: show, trace rejudge / diff / prompt, lint, eval (exit codes 0/1/2, no
traceback)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ladr_lab.cli import main

ROOT = Path(__file__).resolve().parents[2]
RESEARCH = ROOT / "examples" / "research.yaml"


def cli(*args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, LITELLM_LOCAL_MODEL_COST_MAP="True")
    return subprocess.run([sys.executable, "-m", "ladr_lab", *map(str, args)], cwd=ROOT, capture_output=True,
                          text=True, timeout=120, env=env)


@pytest.fixture(scope="module")
def traces(tmp_path_factory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("traces")
    out = {}
    for name, q in (("a", "How does deduplication work across retrieval rounds?"),
                    ("b", "What happens when maxRounds is reached?")):
        out[name] = d / f"{name}.jsonl"
        assert main(["run", str(RESEARCH), "--input", q, "--trace-out", str(out[name]), "--json"]) == 0
    return out


@pytest.fixture
def edited(tmp_path) -> Path:
    p = tmp_path / "edited.yaml"
    p.write_text(RESEARCH.read_text().replace("files:      { type: array, items: { type: string } }",
                                              "files:      { type: array, maxItems: 1, items: { type: string } }")
                 .replace("path: ../sample_slates/knowledge", f"path: {ROOT / 'sample_slates' / 'knowledge'}"))
    return p


def test_show_prints_a_saved_trace_as_run_prints_it(traces, capsys):
    p = cli("run", RESEARCH, "--input", "How does deduplication work across retrieval rounds?")
    shown = cli("show", traces["a"])
    assert shown.returncode == 0 and "Traceback" not in shown.stderr
    def rounds(text):
        return [ln for ln in text.splitlines() if ln.strip().startswith(("──", "why:", "fetched ", "▶", "■"))]
    live, saved = rounds(p.stdout), rounds(shown.stdout)
    assert live == saved and len(saved) >= 4
    assert shown.stdout.startswith("run of research-assistant with offline")
    assert main(["show", str(traces["a"]), "--step", "nope"]) == 0
    assert "research · node" not in capsys.readouterr().out
    missing = cli("show", "no-such.jsonl")
    assert missing.returncode == 1 and "cannot read trace" in missing.stderr and "Traceback" not in missing.stderr


def test_trace_rejudge_table_json_and_exit_codes(traces, edited):
    p = cli("trace", "rejudge", traces["a"], "--ladder", edited)
    assert p.returncode == 1, p.stderr        # a verdict flipped
    assert "1 flipped" in p.stdout and "maxItems at /properties/request/properties/files" in p.stdout
    assert "the step would end at round 1" in p.stdout
    # the rounds after the flip would never happen: their new verdict is unknown, in the table and in JSON
    later = [ln for ln in p.stdout.splitlines() if "r2" in ln.split("requestMatch")[0]]
    assert later and all("→ ?" in ln for ln in later)
    after = [r for r in json.loads(cli("trace", "rejudge", traces["a"], "--ladder", edited, "--json").stdout)
             if r["after_flip"] is not None]
    assert after and all(r["new"] is None and r["effect_kind"] == "unknown" for r in after)
    j = cli("trace", "rejudge", traces["a"], "--ladder", RESEARCH, "--json")
    rows = json.loads(j.stdout)
    assert j.returncode == 0 and rows and not any(r["flipped"] for r in rows)
    bad = cli("trace", "rejudge", traces["a"], "--ladder", "no-such.yaml")
    assert bad.returncode == 1 and "cannot read ladder file" in bad.stdout + bad.stderr
    usage = cli("trace", "rejudge", traces["a"])
    assert usage.returncode == 2 and "--ladder" in usage.stderr


def test_trace_diff_and_prompt(traces, capsys):
    assert main(["trace", "diff", str(traces["a"]), str(traces["a"])]) == 0
    assert "no divergence" in capsys.readouterr().out
    assert main(["trace", "diff", str(traces["a"]), str(traces["b"]), "--json"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert data["first_divergence"]["round"] == 1 and data["first_divergence"]["changes"][0] == "prompt (Question)"
    assert main(["trace", "prompt", str(traces["a"]), "--step", "research", "--round", "2", "--diff"]) == 0
    assert "added    retrieved RetrievedDocuments 1" in capsys.readouterr().out
    assert main(["trace", "prompt", str(traces["a"]), "--step", "research", "--json"]) == 0
    sections = json.loads(capsys.readouterr().out)
    assert [s["name"] for s in sections] == ["systemPrompt", "Question", "FileIndex", "FolderTree", "Summaries"]
    assert main(["trace", "prompt", str(traces["a"]), "--step", "research", "--round", "9"]) == 1
    assert main(["trace", "prompt", str(traces["a"]), "--step", "research", "--diff"]) == 2


def test_lint_command(tmp_path, traces, capsys):
    assert main(["lint", str(RESEARCH), "--trace", str(traces["a"])]) == 0     # info only
    assert "max-rounds-unused" in capsys.readouterr().out
    bad = tmp_path / "bad.yaml"
    bad.write_text(RESEARCH.read_text().replace("required: [request]\n", "requried: [request]\n", 1)
                   .replace("path: ../sample_slates/knowledge", f"path: {RESEARCH.parent.parent / 'sample_slates' / 'knowledge'}"))
    p = cli("lint", bad, "--json")
    report = json.loads(p.stdout)
    assert p.returncode == 1 and not report["ok"]
    assert {f["code"] for f in report["findings"]} == {"unknown-schema-keyword", "loose-request-match"}
    assert cli("lint", tmp_path / "missing.yaml").returncode == 1


def test_eval_command_resumes_and_reports(tmp_path):
    inputs = tmp_path / "in.jsonl"
    inputs.write_text('{"id": "dedup", "context": "How does deduplication work?"}\n'
                      '{"id": "rounds", "context": "What happens when maxRounds is reached?"}\n')
    out = tmp_path / "ev"
    p = cli("eval", RESEARCH, "--inputs", inputs, "--out", out, "--concurrency", "2", "--json")
    summary = json.loads(p.stdout.strip().splitlines()[-1])
    assert p.returncode == 0 and summary["counts"] == {"completed": 2} and (out / "results.csv").is_file()
    assert sorted(x.name for x in (out / "traces").iterdir()) == ["dedup.jsonl", "rounds.jsonl"]
    again = cli("eval", RESEARCH, "--inputs", inputs, "--out", out, "--no-progress")
    assert again.returncode == 0 and "2 row(s): 2 completed" in again.stdout
    assert len((out / "results.jsonl").read_text().splitlines()) == 2      # nothing was run again
    assert cli("eval", RESEARCH, "--out", out).returncode == 2
    missing = cli("eval", RESEARCH, "--inputs", tmp_path / "none.csv", "--out", out)
    assert missing.returncode == 1 and "does not exist" in missing.stderr and "Traceback" not in missing.stderr


def test_trace_rejudge_of_an_evaluation_folder(tmp_path, edited, capsys):
    inputs = tmp_path / "in.csv"
    inputs.write_text("context\nHow does deduplication work?\nWhat is a slate?\n")
    out = tmp_path / "ev"
    assert main(["eval", str(RESEARCH), "--inputs", str(inputs), "--out", str(out), "--no-progress"]) == 0
    capsys.readouterr()
    code = main(["trace", "rejudge", str(out), "--ladder", str(edited)])
    text = capsys.readouterr().out
    flipping = int(text.split(" of ")[0])
    assert (code == 1) == (flipping > 0) and "row(s) would flip under" in text
    assert main(["trace", "rejudge", str(tmp_path), "--ladder", str(edited)]) == 1


def test_show_and_rejudge_read_traces_with_only_the_contract_fields(traces, edited, tmp_path):
    minimal = tmp_path / "minimal.jsonl"
    keep = {"type", "step", "node", "round", "messages", "output", "forced_final", "request_match", "request",
            "fetched", "target", "policy", "status", "reason"}
    lines = [json.loads(ln) for ln in traces["a"].read_text().splitlines()]
    minimal.write_text("".join(json.dumps({k: v for k, v in e.items() if k in keep}) + "\n" for e in lines))
    p = cli("trace", "rejudge", minimal, "--ladder", edited)
    assert p.returncode == 1 and "Traceback" not in p.stderr and "1 flipped" in p.stdout, p.stderr
    assert "after the flip at #" in p.stdout and "#None" not in p.stdout
    junk = tmp_path / "junk.jsonl"
    junk.write_text('{"type": "llm_call"}\n{"type": "gate"}\n')
    shown = cli("show", junk)
    assert shown.returncode == 0 and "Traceback" not in shown.stderr and "None#None" not in shown.stdout
