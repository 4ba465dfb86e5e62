"""The typed cell: `CellSource` (run / re-judged / copied, and its base) in and out of the `source` column's text,
`CellResult` in and out of its results line, the one failed-cell constructor, and the table's columns derived
from the record's fields."""
from __future__ import annotations

import dataclasses
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ladr_lab.experiments import CellResult, CellSource
from ladr_lab.experiments.cells import RUN_COLUMNS, CellSpec
from ladr_lab.experiments.checks import AssertionResult
from ladr_lab.experiments.results import COLUMNS, EVALUATION_COLUMNS, HIDDEN

NAME = st.from_regex(r"[A-Za-z0-9][A-Za-z0-9._-]{0,20}", fullmatch=True)


@pytest.mark.parametrize("text, source", [
    (None, CellSource()),
    ("run", CellSource()),
    ("re-judged from a", CellSource("rejudged", "a")),
    ("re-judged from base-1, 3 call(s) live", CellSource("rejudged", "base-1", live_calls=3)),
    ("same as a: no verdict changes", CellSource("copied", "a")),
    ("run (the base cell a/r1 has no recording)", CellSource("run", "a", why="the base cell a/r1 has no recording")),
])
def test_a_source_text_says_its_kind_and_base(text, source):
    got = CellSource.parse(text)
    assert got == source
    assert got.text == (text or "run")
    assert got.rejudged is (source.kind != "run")


@given(kind=st.sampled_from(["run", "rejudged", "copied"]), base=NAME, live=st.integers(0, 50), row=NAME)
def test_every_source_reads_back_from_its_own_text(kind, base, live, row):
    source = CellSource(kind, base if kind != "run" or row.startswith("r") else None,
                        live_calls=live if kind == "rejudged" else 0,
                        why=f"the base cell {base}/{row} has no recording" if kind == "run" and row.startswith("r")
                        else "")
    if kind == "run" and source.why:
        source = dataclasses.replace(source, base=base)
    assert CellSource.parse(source.text) == source


@pytest.mark.parametrize("text", ["re-judged from x, 0 call(s) live", "run ()", "same as a/b: no verdict changes"])
def test_a_source_text_reads_back_as_itself_whatever_its_spelling(text):
    assert CellSource.parse(text).text == text


def test_the_base_of_a_cell_whose_row_id_has_a_slash_is_its_variant():
    got = CellSource.parse("run (the base cell v/r/x has no recording)")
    assert (got.kind, got.base) == ("run", "v")


def test_a_source_text_of_another_version_is_kept_and_judged_by_its_first_word():
    run, other = CellSource.parse("run again, differently"), CellSource.parse("borrowed from b")
    assert (run.kind, run.text) == ("run", "run again, differently")
    assert (other.rejudged, other.text) == (True, "borrowed from b")


def _spec(**kw) -> CellSpec:
    return CellSpec(row="r1", pos=2, fields={"context": "q"}, out="/x", trace="v/traces/r1.jsonl", fingerprint="fp",
                    variant="v", **kw)


def test_a_failed_cell_counts_nothing_and_names_its_error():
    cell = CellResult.failed(_spec(), "LadrError: no", error_type="LadrError", error_step="s", seconds=1.23456)
    d = cell.to_dict()
    assert d == {"row": "r1", "variant": "v", "input.context": "q", "status": "error", "output": "", "llm_calls": 0,
                 "tokens_in": 0, "tokens_out": 0, "cost": 0.0, "gates": "", "writes": 0, "latency": 0.0,
                 "error": "LadrError: no", "error_type": "LadrError", "error_step": "s", "seconds": 1.235,
                 "trace": "v/traces/r1.jsonl", "fingerprint": "fp", "pos": 2}
    unsettled = CellResult.failed(_spec(), "nothing to re-judge", status="unsettled",
                                  source=CellSource("rejudged", "a"), trace="")
    assert (unsettled.status, unsettled.trace, unsettled.to_dict()["source"]) == ("unsettled", "", "re-judged from a")


def test_checks_make_the_assertion_columns_passed_and_reasons():
    cell = CellResult.failed(_spec(), "x").replace(status="completed", source=CellSource())
    checked = cell.with_checks({"a": AssertionResult(True, "ok"), "b": AssertionResult(None, "no trace")}, "afp")
    d = checked.to_dict()
    assert list(d)[-7:] == ["source", "a", "b", "passed", "reasons", "asserts", "asserts_fp"]
    assert (d["a"], d["b"], d["passed"], d["reasons"]) == (True, None, None, {"b": "no trace"})
    failed = checked.with_checks({"a": AssertionResult(False, "no"), "b": AssertionResult(True, "ok")}, "afp")
    assert failed.passed is False and failed.check("a") is False and failed.check("zzz") is None
    assert checked.with_checks({}, "afp").passed is None
    assert CellResult.from_dict(d).to_dict() == d     # a passing assertion's reason is not kept: only why not


def test_a_line_with_columns_this_version_does_not_know_keeps_them():
    line = {**CellResult.failed(_spec(), "e").to_dict(), "a_future_column": [1, 2]}
    cell = CellResult.from_dict(line)
    assert cell.extra == {"a_future_column": [1, 2]} and cell.inputs == {"context": "q"}
    assert json.dumps(cell.to_dict()) == json.dumps(line)
    short = CellResult.from_dict({"row": "1", "status": "completed"})       # a line lacking columns: defaults
    assert (short.llm_calls, short.cost, short.trace, short.source) == (0, 0.0, "", None)
    with pytest.raises(dataclasses.FrozenInstanceError):
        cell.status = "error"  # type: ignore[misc]


def test_the_table_columns_come_from_the_record():
    fields = {f.name for f in dataclasses.fields(CellResult)}
    assert set(RUN_COLUMNS) <= fields
    assert set(COLUMNS) | set(HIDDEN) == set(CellResult.columns()) and not set(COLUMNS) & set(HIDDEN)
    assert set(EVALUATION_COLUMNS) <= set(CellResult.columns())
    every = set(CellResult.columns()) - {"source", "passed", "reasons", "asserts", "score"}   # derived from checks
    assert every <= fields


def test_a_rejudged_cells_live_model_answers_through_the_response_cache(tmp_path):
    """After a re-judged cell diverges from its recording, its live calls are a live model's like any cell's: the
    response cache wraps that model (the replay itself, which is recorded, is never cached)."""
    from pathlib import Path

    from ladr_lab.config.loader import load_ladder_text
    from ladr_lab.experiments.cells import _model
    from ladr_lab.models.cache import CachedModel
    from ladr_lab.models.replay import ReplayModel

    old = Path(__file__).resolve().parents[1] / "fixtures" / "batch_v1" / "experiment" / "a" / "traces" / "dedup.jsonl"
    lad = load_ladder_text("name: t\nsteps:\n  - id: s\n")
    spec = _spec(replay=str(old), then="openai/gpt-4o-mini", model_options={"mock_response": "hi"},
                 cache=str(tmp_path / "rc"))
    model, owned = _model(spec, lad, None)
    assert isinstance(model, ReplayModel) and isinstance(model.then, CachedModel) and owned
    uncached, _ = _model(dataclasses.replace(spec, cache=False), lad, None)
    assert not isinstance(uncached.then, CachedModel)
    model.close()
