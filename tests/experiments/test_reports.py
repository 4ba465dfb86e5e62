"""A batch run reported for CI and for people: the JUnit XML report (read back by junitparser, a JUnit parser, with
the counts counted by hand), every cell as `--json` lists it, and the standalone HTML page (each cell in it)."""
from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ladr_lab.experiments import AssertionResult, CellResult, Experiment, load_results
from tests.helpers_experiments import two_runs

junitparser = pytest.importorskip("junitparser")

# the few rules of Jenkins' JUnit schema (xunit-plugin's junit-10.xsd) a report could break
SUREFIRE_TIME = re.compile(r"(([0-9]{0,3},)*[0-9]{3}|[0-9]{0,3})*(\.[0-9]*)?")
SUITES_ATTRS = {"name", "time", "tests", "failures", "errors"}
SUITE_REQUIRED = {"name", "tests", "failures", "errors"}
SUITE_ATTRS = SUITE_REQUIRED | {"group", "time", "skipped", "timestamp", "hostname", "id", "package", "file", "log",
                                "url"}
CASE_ATTRS = {"name", "time", "classname", "group"}
CASE_CHILDREN = {"skipped", "error", "failure", "system-out", "system-err"}


def _schema_problems(xml: str) -> list[str]:
    root = ET.fromstring(xml)
    bad = []
    if root.tag != "testsuites" or set(root.attrib) - SUITES_ATTRS:
        bad.append(f"root {root.tag} {sorted(root.attrib)}")
    for suite in root:
        if suite.tag != "testsuite" or not SUITE_REQUIRED <= set(suite.attrib) <= SUITE_ATTRS:
            bad.append(f"suite {sorted(suite.attrib)}")
        for el in (root, suite):
            if "time" in el.attrib and not SUREFIRE_TIME.fullmatch(el.attrib["time"]):
                bad.append(f"time {el.attrib['time']}")
        for case in suite:
            if case.tag != "testcase" or "name" not in case.attrib or set(case.attrib) - CASE_ATTRS:
                bad.append(f"case {sorted(case.attrib)}")
            if {c.tag for c in case} - CASE_CHILDREN:
                bad.append(f"case children {[c.tag for c in case]}")
    return bad


@pytest.fixture(scope="module")
def after(tmp_path_factory):
    """The `after` run of tests/helpers_experiments.py: per variant 7 cells; terse has a failed assertion
    (regress) and two errors (down, worse), long two errors."""
    return load_results(two_runs(tmp_path_factory.mktemp("rep"))[1])


def test_junit_read_back_by_junitparser_has_the_counts_counted_by_hand(after, tmp_path):
    path = after.save_junit(tmp_path / "deep" / "junit.xml")
    xml = junitparser.JUnitXml.fromfile(str(path))
    suites = {s.name: s for s in xml}
    assert list(suites) == ["terse", "long"]
    assert [(s.tests, s.failures, s.errors, s.skipped) for s in suites.values()] == [(7, 1, 2, 0), (7, 0, 2, 0)]
    assert (xml.tests, xml.failures, xml.errors) == (14, 1, 4)
    cases = {(c.classname, c.name): c for s in xml for c in s}
    assert len(cases) == 14 and cases[("terse", "ok")].is_passed
    (failure,) = cases[("terse", "regress")].result
    assert isinstance(failure, junitparser.Failure) and failure.type == "assertion"
    assert failure.message == "fetched:core.md: never fetched core.md (fetched: nothing)"
    assert "✓ contains:ANSWER" in failure.text
    (error,) = cases[("long", "down")].result
    assert isinstance(error, junitparser.Error) and error.type == "ModelError" and "model down" in error.message
    assert cases[("terse", "wording")].system_out.startswith("ANSWER: from the docs (reworded)\n\ntrace: ")
    assert cases[("terse", "ok")].time == pytest.approx(after.find("terse", "ok").seconds, abs=1e-3)
    # every parser counts alike: one result element per case, so counting elements gives the attributes again
    for suite in xml:
        stated = (suite.tests, suite.failures, suite.errors, suite.skipped)
        suite.update_statistics()
        assert (suite.tests, suite.failures, suite.errors, suite.skipped) == stated
    assert _schema_problems(path.read_text(encoding="utf-8")) == []


def _cell(row: str, status: str = "completed", checks: dict | None = None, **kw) -> CellResult:
    cell = CellResult(row=row, variant="v", status=status, output=kw.pop("output", "out"), **kw)
    return cell.with_checks({n: AssertionResult(*r) for n, r in checks.items()}, None) if checks is not None \
        else cell


def test_each_kind_of_cell_has_one_result_element(tmp_path):
    cells = [_cell("pass", checks={"a": (True, "")}),
             _cell("none"),                                                 # no assertions, completed: passes
             _cell("failed", checks={"a": (False, "no a"), "b": (False, "no b"), "c": (True, "")}),
             _cell("aborted", "aborted", checks={"a": (True, "")}),
             _cell("budget", "budget_exhausted"),
             _cell("unsettled", "unsettled", error="needs a call the recording does not have"),
             _cell("unchecked", checks={"g": (None, "no grader"), "a": (True, "")}),
             _cell("error", "error", checks={"a": (False, "the cell ended in error")}, error="boom",
                   error_type="ModelError", error_step="s1")]
    xml = junitparser.JUnitXml.fromstring(Experiment(tmp_path, cells, ["v"]).to_junit())
    got = {c.name: [(type(r).__name__, r.type, r.message) for r in c.result] for s in xml for c in s}
    assert got == {
        "pass": [], "none": [],
        "failed": [("Failure", "assertion", "a: no a (and 1 more failed assertion(s))")],
        "aborted": [("Failure", "status", "status aborted")],
        "budget": [("Failure", "status", "status budget_exhausted")],
        "unsettled": [("Skipped", None, "unsettled: needs a call the recording does not have")],
        "unchecked": [("Skipped", None, "1 assertion(s) could not be checked: g: no grader")],
        "error": [("Error", "ModelError", "boom")]}
    (suite,) = xml
    assert (suite.tests, suite.failures, suite.errors, suite.skipped) == (8, 3, 1, 2)
    error_case = next(c for c in suite if c.name == "error")
    assert error_case.result[0].text.splitlines() == ["error in step s1: boom", "✗ a: the cell ended in error"]


def test_a_case_fails_as_its_cell_does_under_weights_and_a_threshold(tmp_path):
    """JUnit counts what the summary and --pass-rate count: a weight-0 assertion never fails a case, and with a
    cell threshold the weighted score decides (promptfoo's rules, scoring.py), both ways."""
    both = {"a": (True, ""), "b": (False, "no b")}
    cells = [_cell("report-only", checks=both, weights={"b": 0.0}, scored=True),           # b weighs 0
             _cell("over", checks=both, weights={"b": 0.5}, threshold=0.6, scored=True),    # 1/1.5 = 0.67 >= 0.6
             _cell("under", checks={"a": (True, ""), "g": (True, "graded 0.3", 0.3)}, scores={"g": 0.3},
                   threshold=0.9, scored=True),                                             # 0.65 < 0.9, none failed
             _cell("plain", checks=both)]                                                   # no scoring: b fails it
    exp = Experiment(tmp_path, cells, ["v"])
    assert [c.passed for c in cells] == [True, True, False, False]
    xml = junitparser.JUnitXml.fromstring(exp.to_junit())
    got = {c.name: [(type(r).__name__, r.message) for r in c.result] for s in xml for c in s}
    assert got == {"report-only": [], "over": [],
                   "under": [("Failure", "score 0.65 < threshold 0.9")],
                   "plain": [("Failure", "b: no b")]}
    (suite,) = xml
    assert (suite.tests, suite.failures) == (4, 2)
    assert exp.pass_rate() == 0.5      # the share of passing cases in the report


def test_an_evaluation_is_one_suite_named_after_its_folder(tmp_path):
    from ladr_lab.experiments import Evaluation
    ev = Evaluation(tmp_path / "nightly", [CellResult(row="r1", status="completed", output="x", trace="traces/r1.jsonl"),
                                           CellResult(row="r2", status="error", error="down")])
    (suite,) = junitparser.JUnitXml.fromstring(ev.to_junit())
    assert suite.name == "nightly" and [c.classname for c in suite] == ["evaluation", "evaluation"]
    assert (suite.tests, suite.errors) == (2, 1)


# any character, and those XML 1.0 cannot hold (control characters, lone surrogates, U+FFFE) more often than by chance
_ANY_TEXT = st.lists(st.one_of(st.characters(blacklist_categories=()),
                               st.sampled_from(["\x00", "\x1b", "\ud800", "\udfff", "\ufffe", "]]>", '"', "&"])),
                     max_size=30).map("".join)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(row=_ANY_TEXT, variant=st.from_regex(r"[A-Za-z0-9._-]{1,12}", fullmatch=True), output=_ANY_TEXT,
       reason=_ANY_TEXT, error=_ANY_TEXT)
def test_any_text_makes_a_document_a_parser_reads(tmp_path, row, variant, output, reason, error):
    """Control characters, lone surrogates, `]]>`, quotes: XML 1.0 cannot hold some of them, and the report still
    parses, its names being the text with those replaced."""
    cells = [CellResult(row=row, variant=variant, status="completed", output=output)
             .with_checks({"a": AssertionResult(False, reason)}, None),
             CellResult(row=row + "2", variant=variant, status="error", error=error or "e")]
    xml = Experiment(tmp_path, cells, [variant]).to_junit()
    doc = junitparser.JUnitXml.fromstring(xml.encode("utf-8", "surrogatepass"))
    names = [c.name for s in doc for c in s]
    legal = re.compile("[\t\n\r\u0020-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
    clean = "".join(ch if legal.fullmatch(ch) else "\ufffd" for ch in row)
    assert names == [clean, clean + "2"] and (doc.failures, doc.errors) == (1, 1)
    assert _schema_problems(xml) == []


def test_every_cell_as_json_lists_it(after):
    reports = after.cell_reports()
    assert len(reports) == len(after.cells) == 14
    r = next(x for x in reports if (x["variant"], x["row"]) == ("terse", "regress"))
    assert r["status"] == "completed" and r["passed"] is False and r["output"] == "ANSWER: from memory"
    assert r["checks"] == [{"name": "fetched:core.md", "passed": False,
                            "reason": "never fetched core.md (fetched: nothing)"},
                           {"name": "contains:ANSWER", "passed": True, "reason": ""}]
    assert r["inputs"] == {"context": "row=regress what is core?"}
    assert r["trace"] == str(after.out / "terse" / "traces" / "regress.jsonl")
    # what only resuming reads, and a column per assertion, are left out
    assert not {"fingerprint", "pos", "asserts_fp", "asserts", "reasons", "fetched:core.md",
                "input.context"} & set(r)
    down = next(x for x in reports if (x["variant"], x["row"]) == ("long", "down"))
    assert down["status"] == "error" and down["error_type"] == "ModelError" and down["error_step"] == "research"


def test_the_page_is_standalone_and_holds_every_cell(after, tmp_path):
    path = after.save_html(tmp_path / "out" / "report.html")
    page = path.read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>") and '<meta charset="utf-8">' in page
    # nothing from elsewhere: no script or style file, no font, no image
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", page) and "@import" not in page
    details = re.findall(r'<details [^>]*id="(cell-\d+)"', page)
    assert details == [f"cell-{i}" for i in range(1, 15)]
    for i, c in enumerate(after.cells, 1):             # each cell: linked from the grid, its part names it
        assert f'href="#cell-{i}"' in page
        part = page.split(f'id="cell-{i}"', 1)[1].split("</details>", 1)[0]
        assert f"row {c.row} · variant {c.variant}" in part and (c.trace in part)
    regress = page.split(f'id="cell-{after.cells.index(after.find("terse", "regress")) + 1}"', 1)[1]
    assert "never fetched core.md" in regress.split("</details>", 1)[0]


def test_the_page_escapes_what_the_model_wrote(tmp_path):
    cell = CellResult(row="r<1>", variant="v", status="completed", output="<script>alert(1)</script>")
    page = Experiment(tmp_path, [cell], ["v"]).to_page()
    assert "<script>alert(1)" not in page and "&lt;script&gt;alert(1)" in page
    assert page.count("<script>") == 1          # the page's own (it opens the part a link points at)
