"""Scores, not only pass/fail (experiments/scoring.py): a cell's weighted score and its verdict under a threshold,
promptfoo's rules counted by hand; weight 0 never fails a cell; named metrics several assertions feed, averaged per
variant; unchecked assertions decide a thresholded cell only when they could; the results line keeps it all; and an
experiment without weights, metrics or a threshold is checked and written as before."""
from __future__ import annotations

import json

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from ladr_lab import experiment
from ladr_lab.experiments import CellResult
from ladr_lab.experiments.assertions import load_asserts
from ladr_lab.experiments.cells import asserts_fingerprint, check_cell
from ladr_lab.experiments.checks import AssertionResult
from ladr_lab.experiments.scoring import (
    TOLERANCE,
    cell_score,
    cell_verdict,
    metric_scores,
    pass_rate,
    pass_text,
    unit_score,
)
from ladr_lab.models import ScriptedModel

LADDER = "name: t\nsteps:\n  - id: a\n    fields: [{ name: Q, type: text, from: input.context }]\n"

# the output "Goodbye world" of promptfoo's own example: equals fails, contains passes
CELL = CellResult(row="r", variant="v", status="completed", output="Goodbye world", llm_calls=2)


def _checked(asserts, threshold=None, cell=CELL):
    return check_cell(cell, tuple(load_asserts(asserts)), "/nonexistent", threshold=threshold)


def test_promptfoos_weighted_example_scores_one_third_by_hand():
    """equals (weight 2) fails and contains (weight 1) passes: (2×0 + 1×1) / (2 + 1) = 1/3 — promptfoo's docs."""
    asserts = [{"type": "equals", "value": "Hello world", "weight": 2}, {"type": "contains", "value": "world"}]
    plain = _checked(asserts)
    assert plain.score == pytest.approx(1 / 3, abs=1e-6)
    assert plain.passed is False                              # no threshold: one failed assertion fails the cell
    assert _checked(asserts, threshold=0.5).passed is False   # 0.33 < 0.5
    assert _checked(asserts, threshold=0.2).passed is True    # 0.33 ≥ 0.2: the threshold overrides the failure
    assert _checked(asserts, threshold=1 / 3 - 1e-9).passed is True     # at the threshold: passes
    assert _checked(asserts, threshold=0).passed is True      # 0 collects scores and never fails


def test_weights_counted_by_hand_with_graded_scores():
    """contains passes (1), max-calls:1 fails (0, 2 calls), a python score of 0.4 counts as 0.4:
    (3×1 + 1×0 + 2×0.4) / 6 = 3.8 / 6."""
    asserts = [{"type": "contains", "value": "world", "weight": 3}, {"type": "max-calls", "value": 1},
               {"type": "python", "value": lambda out: 0.4, "weight": 2, "name": "py"}]
    cell = _checked(asserts, threshold=0.6)
    assert cell.scores == {"contains:world": 1.0, "max-calls:1": 0.0, "py": pytest.approx(0.4)}
    assert cell.score == pytest.approx(3.8 / 6, abs=1e-6) and cell.passed is True      # 0.633 ≥ 0.6
    assert _checked(asserts, threshold=0.65).passed is False


def test_weight_zero_is_reported_and_never_fails_the_cell():
    asserts = [{"type": "contains", "value": "world"}, {"type": "equals", "value": "nope", "weight": 0}]
    cell = _checked(asserts)
    assert cell.check("equals:nope") is False          # its own column still says it failed
    assert cell.passed is True and cell.score == 1.0   # ... but the cell passes, and it is not in the score
    assert _checked([{"type": "equals", "value": "nope", "weight": 0}]).passed is True   # all weigh 0: passes


def test_a_negated_graded_assertion_scores_one_minus_its_grade():
    (a,) = load_asserts({"type": "not-python", "value": lambda out: 0.3})
    assert unit_score(a, AssertionResult(True, "x", score=0.3)) == pytest.approx(0.7)
    (b,) = load_asserts("not-contains: x")
    assert unit_score(b, AssertionResult(True, "x")) == 1.0 and unit_score(b, AssertionResult(None, "x")) is None


def test_named_metrics_are_weighted_means_of_the_assertions_that_feed_them():
    asserts = [{"type": "contains", "value": "world", "metric": "content", "weight": 3},
               {"type": "equals", "value": "x", "metric": "content"},                     # fails
               {"type": "python", "value": lambda out: 0.5, "metric": "style", "weight": 0, "name": "py"},
               {"type": "max-calls", "value": 5}]                                          # feeds no metric
    cell = _checked(asserts)
    # content: (3×1 + 1×0) / 4; style: a weight-0 assertion still feeds its metric (counted with weight 1)
    assert cell.metrics == {"content": pytest.approx(0.75), "style": pytest.approx(0.5)}


@pytest.mark.parametrize("scores, threshold, verdict", [
    ({"a": True, "b": None}, 0.5, True),                # at worst 1/2 ≥ 0.5: passes whatever b says
    ({"a": True, "b": None}, 0.75, None),               # 1/2 or 2/2: b decides, and b was not checked
    ({"a": False, "b": None}, 0.5, None),               # 0/2 or 1/2
    ({"a": False, "b": False, "c": None}, 0.5, False),  # at best 1/3 < 0.5: fails whatever c says
    ({"a": True, "b": True, "c": None}, 0.5, True),     # at worst 2/3
])
def test_an_unchecked_assertion_decides_a_thresholded_cell_only_when_it_could(scores, threshold, verdict):
    checks = {n: AssertionResult(p, "") for n, p in scores.items()}
    assert cell_verdict(checks, {}, threshold, {}) is verdict


@given(st.lists(st.sampled_from([True, False, None]), min_size=1, max_size=6))
def test_without_weights_or_threshold_the_verdict_is_the_old_rule(verdicts):
    checks = {f"a{i}": AssertionResult(v, "") for i, v in enumerate(verdicts)}
    old = False if False in verdicts else True if all(verdicts) else None
    assert cell_verdict(checks, {}, None, {}) is old


@given(st.lists(st.tuples(st.sampled_from([True, False]), st.integers(0, 4)), min_size=1, max_size=6),
       st.floats(0, 1))
@example([(False, 1)], 3.352539582535234e-11)     # a threshold just above 0: a score of 0 does not meet it
def test_with_a_threshold_the_verdict_is_the_weighted_score_against_it(items, threshold):
    checks = {f"a{i}": AssertionResult(p, "") for i, (p, _) in enumerate(items)}
    weights = {f"a{i}": float(w) for i, (_, w) in enumerate(items)}
    total = sum(w for _, w in items)
    score = cell_score(checks, weights, {})
    if total == 0:
        assert score is None and cell_verdict(checks, weights, threshold, {}) is True
    else:
        assert score == pytest.approx(sum(w for p, w in items if p) / total, abs=1e-6)
        assert cell_verdict(checks, weights, threshold, {}) is (score >= threshold - TOLERANCE)


def test_the_results_line_keeps_the_scores_and_reads_back_the_same():
    cell = _checked([{"type": "equals", "value": "Hello world", "weight": 2, "metric": "m"}, "contains: world"],
                    threshold=0.2)
    line = cell.to_dict()
    assert line["score"] == pytest.approx(1 / 3, abs=1e-6) and line["threshold"] == 0.2 and line["passed"] is True
    assert line["weights"] == {"equals:Hello world": 2.0} and line["metrics"] == {"m": 0.0}
    back = CellResult.from_dict(json.loads(json.dumps(line)))
    assert back.passed is True and back.score == cell.score and back.metrics == cell.metrics and not back.extra
    assert json.dumps(back.to_dict()) == json.dumps(line)


def test_without_scoring_options_lines_and_fingerprints_are_as_before():
    asserts = tuple(load_asserts(["contains: world", "max-calls: 3"]))
    line = _checked(list(asserts)).to_dict()
    assert not {"score", "scores", "weights", "threshold", "metrics", "repeat"} & set(line)
    # the fingerprint a cell checked before weights existed had: kind, value, name, negate, threshold + the grader
    old = json.dumps([[a.kind, a.value, a.name, a.negate, a.threshold] for a in asserts] + [None], sort_keys=True)
    import hashlib
    assert asserts_fingerprint(asserts, None) == hashlib.sha256(old.encode()).hexdigest()[:16]
    assert asserts_fingerprint(asserts, None, 0.5) != asserts_fingerprint(asserts, None)
    weighted = tuple(load_asserts([{"type": "contains", "value": "world", "weight": 2}, "max-calls: 3"]))
    assert asserts_fingerprint(weighted, None) != asserts_fingerprint(asserts, None)


def test_an_experiment_with_a_threshold_and_metrics_summarises_them_per_variant(tmp_path):
    (tmp_path / "l.yaml").write_text(LADDER)

    def answer(messages, call):
        return "alpha beta" if "one" in messages[-1]["content"] else "alpha"

    exp = experiment({"v": str(tmp_path / "l.yaml")}, [{"id": "one", "context": "one"}, {"id": "two", "context": "two"}],
                     model=ScriptedModel(answer, reads_schemas=False), out=tmp_path / "x", progress=False,
                     asserts=[{"type": "contains", "value": "alpha", "metric": "words"},
                              {"type": "contains", "value": "beta", "metric": "words", "weight": 3}],
                     threshold=0.5)
    # one: (1 + 3) / 4 = 1 → pass; two: (1 + 0) / 4 = 0.25 → fail
    assert [(c.row, c.score, c.passed) for c in exp.cells] == [("one", 1.0, True), ("two", 0.25, False)]
    (s,) = exp.summary_rows()
    assert s["pass_rate"] == 0.5 and s["score_mean"] == pytest.approx(0.625) and s["metric.words"] == 0.625
    table = exp.to_dataframe()
    assert list(table["score"]) == [1.0, 0.25] and list(table["metric.words"]) == [1.0, 0.25]
    assert "score 0.62, words 0.62" in exp.format()
    assert json.loads((tmp_path / "x" / "experiment.json").read_text())["threshold"] == 0.5
    assert exp.pass_rate() == 0.5


def test_the_pass_rate_counts_errors_and_unchecked_cells_as_not_passed():
    ok = CellResult(row="a", status="completed", checks={"x": AssertionResult(True, "")})
    failed = CellResult(row="b", status="completed", checks={"x": AssertionResult(False, "")})
    unchecked = CellResult(row="c", status="completed", checks={"x": AssertionResult(None, "no grader")})
    error = CellResult(row="d", status="error", error="down")
    plain = CellResult(row="e", status="completed")         # no assertions: completed is a pass
    assert pass_rate([ok, failed, unchecked, error, plain]) == 2 / 5
    assert pass_rate([]) is None
    assert pass_text(7, 10) == "passed 7/10 (70%)"


def test_metric_scores_skip_unchecked_assertions():
    (a, b) = load_asserts([{"type": "contains", "value": "x", "metric": "m"},
                           {"type": "model-graded", "value": "rubric", "metric": "m"}])
    checks = {a.name: AssertionResult(True, ""), b.name: AssertionResult(None, "no grader")}
    assert metric_scores([a, b], checks, {}) == {"m": 1.0}


def test_the_progress_bar_shows_the_pass_rate_as_cells_finish(tmp_path):
    """Each finished cell with assertions updates the bar's postfix: passed 1/1 (100%), then 1/2 (50%), ..."""
    import io

    from tqdm import tqdm

    from ladr_lab.experiments.runner import _Batch
    batch = _Batch(tmp_path, resume=False, by_variant=True, total=3, desc="x", unit="cell", progress=False)
    seen = []
    batch.bar = tqdm(total=3, file=io.StringIO(), mininterval=0)
    batch.bar.set_postfix_str = lambda text, refresh=True: seen.append(text)    # type: ignore[method-assign]
    for passed in (True, False, None):
        batch.finish(CellResult(row=str(passed), variant="v", status="completed",
                                checks={"a": AssertionResult(passed, "")}))
    batch.finish(CellResult(row="plain", variant="v", status="completed"))      # no assertions: not counted
    assert seen == ["passed 1/1 (100%)", "passed 1/2 (50%)", "passed 1/3 (33%)"]
