"""Scores, not only pass/fail: a cell's weighted score and its verdict under a threshold, the named metrics its
assertions feed, the pass rate an exit code reads, and how far repeated runs of one cell agree.

The rules are promptfoo's where it has one (docs/experiments.md, "Scores"):

- Each checked assertion scores 0..1: a graded kind (`checks.Check.graded`: python with a score, model-graded,
  similar) its grade (negated: 1 - grade), any other kind 1 for a pass and 0 for a fail. An unchecked one
  (`passed` None) has no score.
- The cell's weighted score is sum(weight × score) / sum(weight) over its checked assertions (`weight` default 1).
- Without a threshold a cell passes when none of its assertions of weight > 0 failed (weight 0: reported, never
  failing the cell, as promptfoo's "if weight is set to 0, the assertion automatically passes"), and it is unchecked
  (None) when none failed but one could not be checked — the rule before scores existed, unchanged.
- With a `threshold` the cell passes when its weighted score is >= the threshold, whatever each assertion said. An
  unchecked assertion could have scored 0 or 1: the cell passes when even 0 would reach the threshold, fails when
  even 1 would not, and is unchecked otherwise. A cell whose assertions all weigh 0 passes, with no score.
- A named `metric` of a cell is the weighted mean of the scores of its checked assertions that name it (a weight-0
  assertion counts with weight 1 there, so a report-only assertion still feeds its metric).
"""
from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .assertions import Assertion
    from .cells import CellResult
    from .checks import AssertionResult

__all__ = ["TOLERANCE", "agreement", "cell_score", "cell_verdict", "good", "metric_scores", "pass_rate", "pass_text",
           "unit_score"]


def unit_score(a: Assertion, result: AssertionResult) -> float | None:
    """The 0..1 score an assertion's result gives the cell (None: it could not be checked)."""
    from .checks import CHECKS
    if result.passed is None:
        return None
    entry = CHECKS.get(a.kind)
    if entry is not None and entry.graded and result.score is not None and not math.isnan(result.score):
        grade = min(1.0, max(0.0, float(result.score)))
        return 1.0 - grade if a.negate else grade
    return 1.0 if result.passed else 0.0


def _score_of(name: str, passed: bool | None, scores: Mapping[str, float]) -> float | None:
    if passed is None:
        return None
    got = scores.get(name)
    return float(got) if got is not None else (1.0 if passed else 0.0)


def cell_score(checks: Mapping[str, AssertionResult], weights: Mapping[str, float],
               scores: Mapping[str, float]) -> float | None:
    """The weighted score of a cell's checked assertions (None: none was checked, or all weigh 0)."""
    num = den = 0.0
    for name, r in checks.items():
        s, w = _score_of(name, r.passed, scores), weights.get(name, 1.0)
        if s is not None and w > 0:
            num, den = num + w * s, den + w
    return round(num / den, 6) if den else None


TOLERANCE = 1e-12       # a score this close under the threshold meets it (the float error of a weighted mean)


def cell_verdict(checks: Mapping[str, AssertionResult], weights: Mapping[str, float], threshold: float | None,
                 scores: Mapping[str, float]) -> bool | None:
    """Whether a cell passed (None: unchecked) by the rules in the module docstring; no checks: None."""
    if not checks:
        return None
    if threshold is None:
        verdicts = [r.passed for n, r in checks.items() if weights.get(n, 1.0) > 0]
        return False if False in verdicts else True if all(verdicts) else None
    lo = hi = den = 0.0
    for name, r in checks.items():
        w = weights.get(name, 1.0)
        if w <= 0:
            continue
        s = _score_of(name, r.passed, scores)
        den += w
        lo += w * (s if s is not None else 0.0)
        hi += w * (s if s is not None else 1.0)
    if not den:
        return True
    if lo / den >= threshold - TOLERANCE:
        return True
    if hi / den < threshold - TOLERANCE:
        return False
    return None


def metric_scores(asserts: Iterable[Assertion], checks: Mapping[str, AssertionResult],
                  scores: Mapping[str, float]) -> dict[str, float]:
    """Each named metric's score in one cell: the weighted mean of its checked assertions' scores."""
    sums: dict[str, list[float]] = {}
    for a in asserts:
        r = checks.get(a.name)
        if not a.metric or r is None:
            continue
        s = _score_of(a.name, r.passed, scores)
        if s is None:
            continue
        w = a.weight if a.weight > 0 else 1.0
        acc = sums.setdefault(a.metric, [0.0, 0.0])
        acc[0] += w * s
        acc[1] += w
    return {m: round(num / den, 6) for m, (num, den) in sums.items() if den}


def good(cell: CellResult) -> bool:
    """Whether a cell counts as passed for `--pass-rate`: its assertions passed (`passed` True), or it has none and
    completed. A failed or unchecked cell, and a cell that ended in error, count as not passed."""
    if cell.checks:
        return cell.passed is True
    return cell.status == "completed"


def pass_rate(cells: Iterable[CellResult]) -> float | None:
    """The share of cells that count as passed (`good`), over every cell, repeats included (None: no cell)."""
    cells = list(cells)
    return sum(good(c) for c in cells) / len(cells) if cells else None


def pass_text(passed: int, judged: int) -> str:
    """The running pass rate a progress bar shows, as dspy.Evaluate's "Average Metric: 7/10 (70%)": `passed 7/10
    (70%)`, over the cells finished so far that have assertions."""
    return f"passed {passed}/{judged} ({passed / judged:.0%})" if judged else "passed 0/0"


def _share_of_mode(values: list) -> float:
    return Counter(values).most_common(1)[0][1] / len(values)


def agreement(cells: Iterable[CellResult]) -> dict[tuple[str | None, str], dict]:
    """For each (variant, row) run more than once (`repeat`), how far its repeats agree: `repeats`, `agree_pass` (the
    share of repeats that say what most say of pass/fail, unchecked counting as its own answer) and `agree_output`
    (the share whose stripped output is the most common one)."""
    groups: dict[tuple[str | None, str], list[CellResult]] = {}
    for c in cells:
        groups.setdefault((c.variant, c.row), []).append(c)
    out = {}
    for key, group in groups.items():
        if len(group) < 2:
            continue
        out[key] = {"repeats": len(group),
                    "agree_pass": round(_share_of_mode([c.passed if c.checks else c.status for c in group]), 6),
                    "agree_output": round(_share_of_mode([str(c.output or "").strip() for c in group]), 6)}
    return out
