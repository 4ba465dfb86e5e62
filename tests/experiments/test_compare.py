"""`Experiment.compare(other)` on two real experiment folders run offline with a scripted model whose answers
changed on known rows (tests/helpers_experiments.py): each changed cell is named with its change, by variant,
with counts per variant, and its two traces diff; two evaluations compare the same way."""
from __future__ import annotations

import json
import math

import pytest

from ladr_lab.errors import LadrError
from ladr_lab.experiments import Comparison, Experiment, evaluate, load_results
from ladr_lab.experiments.compare import CHANGES, is_passing
from ladr_lab.models import ScriptedModel
from tests.helpers_experiments import EXPECTED, two_runs


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """The experiment before and after (2 variants × 7 rows each), run once for the module."""
    before, after = two_runs(tmp_path_factory.mktemp("cmp"))
    return load_results(before), load_results(after)


def test_each_changed_cell_is_named_by_its_change_and_variant(runs):
    before, after = runs
    cmp = before.compare(after)
    assert isinstance(cmp, Comparison)
    assert {(r["variant"], r["row"]): r["change"] for r in cmp.changes} == EXPECTED
    # in variant order, then row order; unchanged cells are not listed
    assert [(r["variant"], r["row"]) for r in cmp.changes][:3] == [("terse", "regress"), ("terse", "fix"),
                                                                   ("terse", "down")]
    regress = next(r for r in cmp.changes if (r["variant"], r["row"]) == ("terse", "regress"))
    assert regress["before"] == "✓ pass" and regress["after"] == "✗ fail"
    assert regress["differs"] == "passed, assertions, output" and regress["assertions"] == "fetched:core.md"
    assert regress["output.before"] == "ANSWER: from the docs" and regress["output.after"] == "ANSWER: from memory"
    worse = next(r for r in cmp.changes if (r["variant"], r["row"]) == ("terse", "worse"))
    assert (worse["status.before"], worse["status.after"]) == ("completed", "error")    # failing on both sides
    assert [r["row"] for r in cmp.regressions] == ["regress", "down", "down"] and not cmp.identical


def test_counts_per_variant_are_those_counted_by_hand(runs):
    before, after = runs
    rows = {s["variant"]: s for s in before.compare(after).summary_rows()}
    assert [rows["terse"][k] for k in (*CHANGES, "unchanged")] == [2, 1, 1, 0, 1, 1, 1, 1]
    assert [rows["long"][k] for k in (*CHANGES, "unchanged")] == [1, 1, 1, 0, 1, 1, 1, 2]
    assert rows["terse"]["cells.before"] == rows["terse"]["cells.after"] == 7
    # pass rates: 5 of 7 passed before in both variants; after, terse 4 of 7 and long 5 of 7
    assert rows["terse"]["pass_rate.before"] == pytest.approx(5 / 7)
    assert rows["terse"]["pass_rate.after"] == pytest.approx(4 / 7)
    assert rows["terse"]["Δ pass_rate"] == pytest.approx(-1 / 7) and rows["long"]["Δ pass_rate"] == 0
    assert before.compare(after).counts() == {"pass→fail": 3, "fail→pass": 2, "status": 2, "assertions": 0,
                                              "output": 2, "new": 2, "missing": 2}


def test_the_other_way_round_swaps_fixes_and_regressions_new_and_missing(runs):
    before, after = runs
    back = after.compare(before)
    swap = {"pass→fail": "fail→pass", "fail→pass": "pass→fail", "new": "missing", "missing": "new"}
    assert {(r["variant"], r["row"]): r["change"] for r in back.changes} == \
        {k: swap.get(v, v) for k, v in EXPECTED.items()}


def test_a_run_compared_with_itself_is_identical(runs):
    before, _ = runs
    same = before.compare(load_results(before.out))
    assert same.identical and same.changes == [] and same.regressions == []
    assert [s["unchanged"] for s in same.summary_rows()] == [7, 7]
    assert "no cell changed" in same.format() and "no cell changed" in same.to_html()


def test_one_variant_each_is_paired_whatever_its_name_and_variants_pairs_others(runs):
    before, after = runs
    only = Experiment(after.out, [c.replace(variant="terse2") for c in after.cells if c.variant == "terse"],
                      ["terse2"])
    mine = Experiment(before.out, [c for c in before.cells if c.variant == "terse"], ["terse"])
    cmp = mine.compare(only)
    assert [p.name for p in cmp.pairs] == ["terse → terse2"]
    assert {r["row"]: r["change"] for r in cmp.changes} == {row: ch for (v, row), ch in EXPECTED.items()
                                                            if v == "terse"}
    # several variants: matched by name, unless paired
    crossed = before.compare(after, variants={"terse": "long", "long": "terse"})
    assert [p.name for p in crossed.pairs] == ["terse → long", "long → terse"]
    assert {r["row"] for r in crossed.changes if r["variant"] == "terse → long"} >= {"fix", "down", "new", "gone"}
    with pytest.raises(KeyError, match="no variant 'nope' after"):
        before.compare(after, variants={"terse": "nope"})
    # a variant only one run has: all its cells new (or missing)
    fewer = Experiment(after.out, [c for c in after.cells if c.variant == "terse"], ["terse"])
    lost = before.compare(fewer, variants={"terse": "terse"})
    assert {r["change"] for r in lost.changes if r["variant"] == "long"} == {"missing"}


def test_a_changed_cells_traces_diff_and_a_new_cell_has_nothing_to_diff(runs):
    before, after = runs
    cmp = before.compare(after)
    d = cmp.diff("terse", "regress")
    assert not d.identical and d.a == "before terse/regress" and d.b == "after terse/regress"
    # round 1: a request before, an answer after
    assert d.first_divergence is not None and "output" in d.first_divergence["changes"]
    a, b = cmp.traces("terse", "regress")
    assert [c.output for c in a.calls()] == ['{"request": {"files": ["core.md"]}}', "ANSWER: from the docs"]
    assert [c.output for c in b.calls()] == ["ANSWER: from memory"]
    with pytest.raises(KeyError, match="only in the run after"):
        cmp.traces("terse", "new")
    with pytest.raises(KeyError, match="no variant 'x'"):
        cmp.cells("x", "ok")


def test_tables_json_and_views(runs):
    before, after = runs
    cmp = before.compare(after)
    df = cmp.to_dataframe()
    assert len(df) == len(EXPECTED) and list(df.columns[:3]) == ["variant", "row", "change"]
    assert cmp.table.equals(df) and list(cmp.summary()["variant"]) == ["terse", "long"]
    doc = json.loads(json.dumps(cmp.to_dict(), allow_nan=False))      # NaN-free
    assert doc["regressions"] == 3 and doc["counts"]["new"] == 2 and len(doc["changes"]) == len(EXPECTED)
    html = cmp._repr_html_()
    assert "ladr-comparison" in html and html.count('class="ladr-change"') >= len(EXPECTED)
    page = cmp.to_page()
    assert page.startswith("<!DOCTYPE html>") and page.count('class="ladr-cmp-change"') == len(EXPECTED)
    # each changed cell that both runs have carries its run diff; a new or missing one says what it was
    assert page.count("Run diff") == len(EXPECTED) - 4 and 'href="#change-1"' in page and 'id="change-1"' in page
    assert "<Comparison: 13 cell(s) changed" in repr(cmp)


def test_compare_takes_a_folder_and_refuses_one_without_results(runs, tmp_path):
    before, after = runs
    assert before.compare(after.out).counts() == before.compare(after).counts()
    with pytest.raises(LadrError, match="holds no results"):
        before.compare(tmp_path)


def test_two_evaluations_compare_by_row(ladder, slates, tmp_path):
    lad = ladder("""
        - id: a
          fields:
            - { name: Q, type: text, from: input.context }
        """)
    inputs = [{"id": f"r{i}", "context": f"q{i}"} for i in range(4)]

    def model(after):
        def answer(messages, **hints):
            text = messages[-1]["content"]
            if after and "q1" in text:
                raise RuntimeError("model down")
            return "fine" + (" again" if after and "q2" in text else "")
        return ScriptedModel(answer)

    a = evaluate(lad, inputs, model=model(False), slates=slates, out=tmp_path / "a", progress=False, cache=False)
    b = evaluate(lad, inputs[:3], model=model(True), slates=slates, out=tmp_path / "b", progress=False, cache=False)
    cmp = a.compare(b)
    assert [p.name for p in cmp.pairs] == [""]
    assert {r["row"]: r["change"] for r in cmp.changes} == {"r1": "pass→fail", "r2": "output", "r3": "missing"}
    (row,) = cmp.summary_rows()
    assert row["unchanged"] == 1 and math.isnan(row["pass_rate.before"])     # no assertions: no pass rate
    assert cmp.diff("", "r2").first_divergence is not None and "(evaluation)" in cmp.format()


def test_passing_is_what_the_exit_code_counts():
    from ladr_lab.experiments import AssertionResult, CellResult
    ok = CellResult(row="r", status="completed")
    assert is_passing(ok) and not is_passing(None) and not is_passing(ok.replace(status="aborted"))
    assert is_passing(ok.with_checks({"x": AssertionResult(None, "no grader")}, None))       # unchecked
    assert not is_passing(ok.with_checks({"x": AssertionResult(False, "no")}, None))
