"""The Experiment's tables from rows alone: the summary's counts and rates, the differences between two variants
(the same rows whichever way round), quantiles, and reading back a folder with a cut last line."""
from __future__ import annotations

import json
import math

from hypothesis import given, settings
from hypothesis import strategies as st

from ladr_lab.experiments.results import Experiment, _quantile, load_experiment

_CELL = st.fixed_dictionaries({
    "passed": st.sampled_from([True, False, None]), "status": st.sampled_from(["completed", "error", "unsettled"]),
    "output": st.sampled_from(["x", "y"]), "llm_calls": st.integers(0, 5), "latency": st.floats(0, 10)})


def _experiment(cells_a, cells_b) -> Experiment:
    rows = []
    for i, (a, b) in enumerate(zip(cells_a, cells_b, strict=True)):
        for v, c in (("a", a), ("b", b)):
            checked = c["passed"] is not None
            rows.append({**c, "variant": v, "row": f"r{i}", "pos": i, "source": "run",
                         "asserts": ["contains:x"] if checked else [], **({"contains:x": c["passed"]} if checked
                                                                         else {})})
    return Experiment(__import__("pathlib").Path("."), rows, ["a", "b"])


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(_CELL, _CELL), min_size=1, max_size=12))
def test_summary_counts_and_rates_follow_the_cells(pairs):
    exp = _experiment([a for a, _ in pairs], [b for _, b in pairs])
    for s, cells in zip(exp.summary_rows(), ([a for a, _ in pairs], [b for _, b in pairs]), strict=True):
        judged = [c for c in cells if c["passed"] is not None]
        assert s["cells"] == len(cells) and s["passed"] == sum(c["passed"] is True for c in cells)
        if judged:
            assert s["pass_rate"] == sum(c["passed"] is True for c in judged) / len(judged) == s["contains:x"]
        else:
            assert math.isnan(s["pass_rate"])
        assert s["calls_mean"] == sum(c["llm_calls"] for c in cells) / len(cells)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(_CELL, _CELL), min_size=1, max_size=12))
def test_differences_are_the_same_rows_either_way_round(pairs):
    exp = _experiment([a for a, _ in pairs], [b for _, b in pairs])
    ab = [r["row"] for r in exp.difference_rows("a", "b")]
    ba = [r["row"] for r in exp.difference_rows("b", "a")]
    assert ab == ba
    expected = [f"r{i}" for i, (a, b) in enumerate(pairs)
                if (a["passed"], a["status"], a["output"]) != (b["passed"], b["status"], b["output"])]
    assert ab == expected


def test_quantile_interpolates_like_numpy():
    assert _quantile([1.0, 2.0, 3.0, 4.0], 0.5) == 2.5
    assert _quantile([0.0, 10.0], 0.95) == 9.5
    assert math.isnan(_quantile([], 0.5))


def test_reading_back_skips_a_cut_line_and_keeps_the_last_result_of_a_cell(tmp_path):
    lines = [{"variant": "a", "row": "1", "status": "error", "pos": 1},
             {"variant": "a", "row": "1", "status": "completed", "pos": 1},
             {"variant": "b", "row": "1", "status": "completed", "pos": 1}]
    (tmp_path / "results.jsonl").write_text("\n".join(json.dumps(x) for x in lines) + '\n{"variant": "a", "ro')
    (tmp_path / "experiment.json").write_text(json.dumps({"variants": [{"name": "b"}, {"name": "a"}]}))
    exp = load_experiment(tmp_path)
    assert [(r["variant"], r["status"]) for r in exp.rows] == [("b", "completed"), ("a", "completed")]
    assert exp.variants == ["b", "a"]


def test_an_unchecked_cell_counts_in_the_pass_rate_and_is_counted_apart():
    """Two cells pass what could be checked but a model-graded check had no grader (unchecked), one fails: the
    pass rate is of the three cells with assertions, not of the one that could be fully checked."""
    rows = [{"variant": "a", "row": f"r{i}", "pos": i, "status": "completed", "source": "run",
             "asserts": ["c", "g"], "c": c, "g": None, "passed": None if c else False} for i, c in enumerate(
                 [True, True, False])]
    s = Experiment(__import__("pathlib").Path("."), rows, ["a"]).summary_rows()[0]
    assert (s["passed"], s["unchecked"], s["pass_rate"], s["c"]) == (0, 2, 0.0, 2 / 3)
    assert math.isnan(s["g"])
