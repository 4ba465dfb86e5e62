"""A batch run as a JUnit XML report (`--junit FILE`, `Experiment.to_junit()`), for the CI systems that read one.

One `<testsuite>` per variant (an evaluation's one suite is named after its folder), one `<testcase>` per cell
(`name` the row id, `classname` the variant, `time` the cell's seconds), and at most one result element in it, so
every reader counts the same (JUnit's own rule is one failure per test; several `<failure>` elements are valid
in Jenkins' schema, but GitLab, most GitHub Actions reporters and `xunitparser` take or count only one):

    <error>     the cell ended in status `error` (type: the error's class; message: the error)
    <failure>   the cell failed (`CellResult.passed` is False; type `assertion`; message: the first failed
                assertion that counts and why, and how many more; with a cell threshold, the weighted score under
                it first), or the run ended `aborted` or `budget_exhausted` (type `status`)
    <skipped>   no verdict: status `unsettled` (a re-judged cell that needs a call the recording lacks), or an
                assertion that could not be checked decides the cell (`passed` None)
    (nothing)   completed and the cell passed (or it has no assertions)

The verdict is the cell's own (scoring.py), so the report counts what the summary and `--pass-rate` count: an
assertion of weight 0 is reported (`✗` in the text of a failing case) but never fails a case, and with a cell
`threshold` a case fails when its weighted score is under it, whatever each assertion said.

The result element's text lists every assertion of the cell (`✓`, `✗`, `?` with its reason) and the error;
`<system-out>` holds the cell's output and the path of its trace. The counts of each `<testsuite>` (tests,
failures, errors, skipped, time) and of `<testsuites>` (tests, failures, errors, time) are those of its cases.
The document follows Jenkins' JUnit schema (xunit-plugin's junit-10.xsd, which GitLab's and the GitHub reporters'
readers accept); text is stripped of the characters XML 1.0 cannot hold.
"""
from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import TYPE_CHECKING

from .cells import UNSETTLED, CellResult

if TYPE_CHECKING:
    from .results import Experiment

__all__ = ["ONE_LINE", "to_junit", "write_junit"]

ONE_LINE = 500          # characters of a message attribute (the element's text has the whole reason)
# what XML 1.0 cannot carry (control characters, lone surrogates, U+FFFE/U+FFFF): replaced by U+FFFD
_NOT_XML = re.compile("[^\t\n\r\u0020-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _text(value: object) -> str:
    return _NOT_XML.sub("\ufffd", "" if value is None else str(value))


def _line(value: object) -> str:
    text = " ".join(_text(value).split())
    return text if len(text) <= ONE_LINE else text[:ONE_LINE - 1] + "…"


def _assertion_lines(cell: CellResult) -> list[str]:
    why = cell.reasons()
    marks = {True: "✓", False: "✗", None: "?"}
    return [f"{marks[cell.check(n)]} {n}" + (f": {why[n]}" if why.get(n) else "") for n in cell.asserts]


def _result(cell: CellResult) -> ET.Element | None:
    """The one result element of a cell's test case (None: it passed)."""
    lines = _assertion_lines(cell)
    counts = [n for n in cell.asserts if cell.weights.get(n, 1.0) > 0]     # weight 0: reported, never failing
    failed = [n for n in counts if cell.check(n) is False]
    unchecked = [n for n in counts if cell.check(n) is None]
    reasons = cell.reasons()
    verdict = cell.passed
    if cell.status == "error":
        el = ET.Element("error", type=_line(cell.error_type or "error"), message=_line(cell.error or "error"))
        body = [f"error{f' in step {cell.error_step}' if cell.error_step else ''}: {cell.error}", *lines]
    elif verdict is False:
        said = []
        if cell.threshold is not None:
            score = cell.score
            said.append(f"score {'—' if score is None else f'{score:.2f}'} < threshold {cell.threshold:g}")
        if failed:
            said.append(failed[0] + (f": {reasons[failed[0]]}" if reasons.get(failed[0]) else "")
                        + (f" (and {len(failed) - 1} more failed assertion(s))" if len(failed) > 1 else ""))
        el = ET.Element("failure", type="assertion", message=_line("; ".join(said) or "failed"))
        body = [*(["status: " + cell.status] if cell.status != "completed" else []),
                *(said[:1] if cell.threshold is not None else []), *lines]
    elif cell.status not in ("completed", UNSETTLED):          # aborted, budget_exhausted
        el = ET.Element("failure", type="status", message=_line(f"status {cell.status}"
                                                                  + (f": {cell.error}" if cell.error else "")))
        body = [f"status: {cell.status}", *lines]
    elif cell.status == UNSETTLED:
        el = ET.Element("skipped", message=_line(f"unsettled: {cell.error or 'no verdict'}"))
        body = lines
    elif verdict is None and unchecked:
        el = ET.Element("skipped", message=_line(f"{len(unchecked)} assertion(s) could not be checked: "
                                                 f"{unchecked[0]}: {reasons.get(unchecked[0]) or 'not checked'}"))
        body = lines
    else:
        return None
    el.text = _text("\n".join(body)) if body else None
    return el


def _case(cell: CellResult, exp: Experiment, classname: str) -> ET.Element:
    name = cell.row if cell.repeat == 1 else f"{cell.row} (run {cell.repeat})"    # repeats are cases of their own
    case = ET.Element("testcase", name=_text(name), classname=_text(classname),
                      time=f"{max(0.0, float(cell.seconds or 0)):.3f}")
    result = _result(cell)
    if result is not None:
        case.append(result)
    said = [str(cell.output)] if cell.output not in (None, "") else []
    said += [f"trace: {exp.out / cell.trace}"] if cell.trace else []
    if said:
        ET.SubElement(case, "system-out").text = _text("\n\n".join(said))
    return case


def _counts(el: ET.Element) -> dict[str, int]:
    cases = el.iter("testcase")
    n = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for case in cases:
        n["tests"] += 1
        for kind, key in (("failure", "failures"), ("error", "errors"), ("skipped", "skipped")):
            n[key] += case.find(kind) is not None
    return n


def to_junit(exp: Experiment, *, name: str | None = None) -> str:
    """The batch run as a JUnit XML document (a string): a suite per variant, a test case per cell."""
    name = name or f"ladr-lab eval {exp.out}"
    top = ET.Element("testsuites", name=_text(name))
    groups: dict[str | None, list[CellResult]] = {}
    for v in exp.variants:
        groups[v] = []
    for c in exp.cells:
        groups.setdefault(c.variant, []).append(c)
    total = 0.0
    for variant, cells in groups.items():
        suite_name = variant if variant is not None else (exp.out.name or "evaluation")
        suite = ET.SubElement(top, "testsuite", name=_text(suite_name))
        seconds = 0.0
        for c in cells:
            suite.append(_case(c, exp, variant if variant is not None else "evaluation"))
            seconds += max(0.0, float(c.seconds or 0))
        counts = _counts(suite)
        for key in ("tests", "failures", "errors", "skipped"):
            suite.set(key, str(counts[key]))
        suite.set("time", f"{seconds:.3f}")
        total += seconds
    counts = _counts(top)
    for key in ("tests", "failures", "errors"):         # Jenkins' schema has no `skipped` on <testsuites>
        top.set(key, str(counts[key]))
    top.set("time", f"{total:.3f}")
    ET.indent(top)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(top, encoding="unicode") + "\n"


def write_junit(exp: Experiment, path: str | Path) -> Path:
    """Write the JUnit XML report to `path` (its folder made when missing); returns the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(to_junit(exp), encoding="utf-8")
    return path
