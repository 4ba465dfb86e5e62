"""`ladr-lab eval` reports for CI and for people (`--html FILE`, `--junit FILE`, every cell in `--json`), and
`ladr-lab eval compare A B`: its own parser, the changed cells, exit 1 on a regression, 2 on a usage error."""
from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from ladr_lab.cli import main
from ladr_lab.cli.eval import compare_parser, is_compare
from tests.helpers_experiments import EXPECTED, two_runs

ROOT = Path(__file__).resolve().parents[2]
SMALL, TIGHT = str(ROOT / "examples" / "research_small.yaml"), str(ROOT / "examples" / "pitfall_tight.yaml")


@pytest.fixture
def inputs(tmp_path):
    path = tmp_path / "in.jsonl"
    path.write_text('{"id": "q1", "context": "How does deduplication work across retrieval rounds?"}\n'
                    '{"id": "q2", "context": "What does maxRounds do?", "assert": "max-calls: 1"}\n',
                    encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    return two_runs(tmp_path_factory.mktemp("cli-cmp"))


def test_an_experiment_writes_html_and_junit_and_lists_every_cell(tmp_path, inputs, capsys):
    html, junit = tmp_path / "r" / "report.html", tmp_path / "r" / "junit.xml"
    code = main(["eval", SMALL, TIGHT, "--inputs", str(inputs), "--out", str(tmp_path / "x"), "--no-progress",
                 "--json", "--html", str(html), "--junit", str(junit)])
    doc = json.loads(capsys.readouterr().out)
    assert code == 1 and doc["failed"] == 2 and doc["cells"] == 4          # the keys it always had, as they were
    assert doc["html"] == str(html) and doc["junit"] == str(junit)
    cells = doc["per_cell"]
    assert [(c["variant"], c["row"]) for c in cells] == [("research_small", "q1"), ("pitfall_tight", "q1"),
                                                        ("research_small", "q2"), ("pitfall_tight", "q2")]
    q2 = next(c for c in cells if c["row"] == "q2" and c["variant"] == "research_small")
    assert q2["passed"] is False and q2["checks"][0]["name"] == "max-calls:1" and q2["checks"][0]["passed"] is False
    assert Path(q2["trace"]).is_file() and q2["status"] == "completed" and q2["output"]
    # the JUnit report: a suite per variant, the failed assertion a failure
    root = ET.parse(junit).getroot()
    assert [(s.get("name"), s.get("tests"), s.get("failures")) for s in root] == \
        [("research_small", "2", "1"), ("pitfall_tight", "2", "1")]
    page = html.read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>") and page.count('id="cell-') == 4 and "max-calls:1" in page


def test_the_text_summary_names_the_reports(tmp_path, inputs, capsys):
    main(["eval", SMALL, TIGHT, "--inputs", str(inputs), "--out", str(tmp_path / "x"), "--no-progress",
          "--junit", str(tmp_path / "j.xml")])
    out = capsys.readouterr().out
    assert f"junit: {tmp_path / 'j.xml'}" in out and "html:" not in out


def test_an_evaluation_lists_every_row_and_writes_its_reports(tmp_path, capsys):
    (tmp_path / "in.csv").write_text("id,context\nq1,What does maxRounds do?\nq2,How does dedup work?\n",
                                     encoding="utf-8")
    code = main(["eval", SMALL, "--inputs", str(tmp_path / "in.csv"), "--out", str(tmp_path / "x"),
                 "--no-progress", "--json", "--html", str(tmp_path / "e.html"), "--junit", str(tmp_path / "e.xml")])
    doc = json.loads(capsys.readouterr().out)
    assert code == 0 and doc["rows"] == 2 and [r["row"] for r in doc["per_row"]] == ["q1", "q2"]
    assert "variant" not in doc["per_row"][0] and "checks" not in doc["per_row"][0]
    suite = ET.parse(tmp_path / "e.xml").getroot()[0]
    assert suite.get("name") == "x" and suite.get("tests") == "2" and suite.get("errors") == "0"
    assert (tmp_path / "e.html").read_text(encoding="utf-8").count('id="cell-') == 2


def test_compare_prints_the_changes_and_exits_1_on_a_regression(folders, capsys):
    before, after = folders
    assert main(["eval", "compare", str(before), str(after)]) == 1
    out = capsys.readouterr().out
    assert "terse                pass  71% →  57%  2 pass→fail, 1 fail→pass, 1 status, 1 output, 1 new, 1 missing" \
        in out
    assert "  pass→fail  terse/regress: ✓ pass → ✗ fail  [passed, assertions (fetched:core.md), output]" in out
    # the other way round the fixed row regresses
    assert main(["eval", "compare", str(after), str(before)]) == 1
    back = capsys.readouterr().out
    assert "fail→pass  terse/regress" in back and "pass→fail  terse/fix" in back


def test_compare_exits_0_when_cells_changed_but_none_regressed(folders, tmp_path, capsys):
    import shutil
    before, _ = folders
    copy = tmp_path / "copy"
    shutil.copytree(before, copy)
    lines = (copy / "results.jsonl").read_text(encoding="utf-8").splitlines()
    line = json.loads(lines[0])
    lines.append(json.dumps({**line, "output": line["output"] + " (reworded)"}))   # the cell's last line wins
    (copy / "results.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert main(["eval", "compare", str(before), str(copy)]) == 0
    assert f"  output     {line['variant']}/{line['row']}: ✓ pass → ✓ pass  [output]" in capsys.readouterr().out
    assert main(["eval", "compare", str(before), str(before)]) == 0
    assert "no cell changed" in capsys.readouterr().out


def test_compare_json_and_html(folders, tmp_path, capsys):
    before, after = folders
    code = main(["eval", "compare", str(before), str(after), "--json", "--html", str(tmp_path / "c.html")])
    doc = json.loads(capsys.readouterr().out)
    assert code == 1 and doc["regressions"] == 3 and doc["identical"] is False
    assert {(c["variant"], c["row"]): c["change"] for c in doc["changes"]} == EXPECTED
    assert doc["html"] == str(tmp_path / "c.html") and [s["variant"] for s in doc["summary"]] == ["terse", "long"]
    page = (tmp_path / "c.html").read_text(encoding="utf-8")
    assert page.count('class="ladr-cmp-change"') == len(EXPECTED) and "Run diff" in page


def test_compare_pairs_variants_and_refuses_what_is_not_a_results_folder(folders, tmp_path, capsys):
    before, after = folders
    assert main(["eval", "compare", str(before), str(after), "--variant", "terse=long", "--variant",
                 "long=terse", "--json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert [s["variant"] for s in doc["summary"]] == ["terse → long", "long → terse"]
    assert main(["eval", "compare", str(before), str(tmp_path)]) == 2
    assert f"{tmp_path} holds no results (results.jsonl)" in capsys.readouterr().err
    assert main(["eval", "compare", str(before), str(after), "--variant", "terse=nope", "--json"]) == 2
    assert "no variant 'nope' after" in json.loads(capsys.readouterr().out)["error"]
    with pytest.raises(SystemExit) as exc:
        main(["eval", "compare", str(before), str(after), "--variant", "nosign"])
    assert exc.value.code == 2 and "--variant takes BEFORE=AFTER" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exc:
        main(["eval", "compare", str(before)])
    assert exc.value.code == 2 and "ladr-lab eval compare" in capsys.readouterr().err


def test_compare_is_the_first_word_only_and_never_a_path(tmp_path, monkeypatch):
    assert is_compare(["eval", "compare", "a", "b"]) and not is_compare(["eval", "./compare", "--inputs", "x"])
    assert not is_compare(["eval", "a.yaml", "compare"]) and not is_compare(["run", "compare"])
    monkeypatch.chdir(tmp_path)
    (tmp_path / "compare").write_text("name: x\nsteps: [{ id: s }]\n")       # a ladder file named compare
    assert is_compare(["eval", "compare", "a", "b"])      # still the sub-command: `./compare` names the file


def test_compare_and_the_report_flags_are_in_the_readme():
    readme = (ROOT / "README.md").read_text()
    assert "ladr-lab eval compare" in readme
    for action in compare_parser()._actions:
        for opt in action.option_strings:
            if opt.startswith("--") and opt != "--help":
                assert opt in readme.split("ladr-lab eval compare", 1)[1], f"eval compare {opt} is not in the README"
