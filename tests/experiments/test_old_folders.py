"""Batch folders written before batch runs got one home (ladr_lab at 9ad41be, `tests/fixtures/batch_v1/`, made by its
`make_folders.py`) read with today's code: every results line comes back byte for byte, the tables are the same
bytes, and a resume into a copy of each folder calls the model for nothing when told to keep its error rows
(`retry_errors=False`), or for those rows only (the default: an error is not a result)."""
from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path

import pytest

from ladr_lab import evaluate, experiment, load_evaluation, load_experiment
from ladr_lab.experiments import CellResult, CellSource, Evaluation
from ladr_lab.experiments.results import load_results
from ladr_lab.models import ScriptedModel

OLD = Path(__file__).resolve().parents[1] / "fixtures" / "batch_v1"


def _maker():
    spec = importlib.util.spec_from_file_location("make_folders", OLD / "make_folders.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize("folder", ["evaluation", "experiment"])
def test_every_old_results_line_reads_back_byte_for_byte(folder):
    lines = (OLD / folder / "results.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(lines) == (4 if folder == "evaluation" else 12)
    for line in lines:
        cell = CellResult.from_dict(json.loads(line))
        assert json.dumps(cell.to_dict(), ensure_ascii=False, default=str) == line


def test_an_old_evaluation_loads_with_its_table_and_traces():
    ev = load_evaluation(OLD / "evaluation")
    assert isinstance(ev, Evaluation) and isinstance(load_results(OLD / "evaluation"), Evaluation)
    assert [c.row for c in ev.cells] == ["dedup", "rounds", "down", "nocontext"]
    assert ev.counts() == {"completed": 2, "error": 2}
    assert all(c.variant is None and c.source is None and c.checks is None for c in ev.cells)
    assert ev.trace("dedup").of_type("run_end")[0].status == "completed" and [r for r, _ in ev.traces()] == ["dedup", "rounds",
                                                                                               "down"]
    assert "model is down" in ev.find("down").error and ev.find("nocontext").error_type == "LadrError"
    assert ev.to_dataframe().to_csv(index=False) == (OLD / "evaluation" / "results.csv").read_text(encoding="utf-8")
    assert "4 row(s): 2 completed, 2 error" in ev.format()


def test_an_old_experiment_loads_with_its_sources_summary_and_tables():
    exp = load_experiment(OLD / "experiment")
    assert exp.variants == ["a", "loose", "tight"] and len(exp.cells) == 12
    src = {(c.variant, c.row): c.source for c in exp.cells}
    assert src[("a", "dedup")] == CellSource()
    assert src[("loose", "dedup")] == CellSource("copied", "a")
    assert src[("loose", "rounds")] == CellSource("rejudged", "a", live_calls=1)
    assert src[("tight", "rounds")] == CellSource("rejudged", "a")
    assert src[("tight", "down")].kind == "run" and src[("tight", "down")].base == "a"
    assert {s["variant"]: s["rejudged"] for s in exp.summary_rows()} == {"a": 0, "loose": 2, "tight": 2}
    assert exp.find("a", "dedup").check("fetched:retrieve/dedup.md") is True
    assert exp.find("a", "rounds").check("fetched:retrieve/dedup.md") is None      # that row's own assertion
    assert exp.to_dataframe().to_csv(index=False) == (OLD / "experiment" / "results.csv").read_text(encoding="utf-8")
    assert exp.summary().to_csv(index=False) == (OLD / "experiment" / "summary.csv").read_text(encoding="utf-8")
    assert exp.trace("loose", "rounds").of_type("run_end")[0].status == "completed"


def _resume(make, tmp_path, model, **kw):
    for name in ("evaluation", "experiment"):
        shutil.copytree(OLD / name, tmp_path / name)
    ev = evaluate(make.ladder(make.SMALL), [{k: v for k, v in r.items() if k != "assert"} for r in make.ROWS],
                  model=model, out=tmp_path / "evaluation", progress=False, **kw)
    exp = experiment({"a": make.ladder(make.SMALL), "loose": make.ladder(make.LOOSE),
                      "tight": make.ladder(make.TIGHT)}, make.ROWS, model=model, out=tmp_path / "experiment",
                     progress=False, asserts=["max-calls: 2", "contains: it says so"], **kw)
    return ev, exp


def test_resuming_into_old_folders_without_retrying_errors_calls_the_model_for_nothing(tmp_path):
    """The old folders hold error rows (the model was down for `down`; `nocontext` lacks the column the ladder
    reads): with `retry_errors=False` they are kept as they are, like every other cell."""
    make = _maker()
    calls = []

    def counted(messages, call):
        calls.append(1)
        return make.answer(messages, call)

    ev, exp = _resume(make, tmp_path, ScriptedModel(counted, reads_schemas=False), retry_errors=False)
    assert calls == [] and ev.retried == 0 and exp.retried == 0
    assert [c.to_dict() for c in ev.cells] == [c.to_dict() for c in load_evaluation(OLD / "evaluation").cells]
    assert [c.to_dict() for c in exp.cells] == [c.to_dict() for c in load_experiment(OLD / "experiment").cells]
    # nothing was appended: every cell was finished, with the same assertions
    for name in ("evaluation", "experiment"):
        assert (tmp_path / name / "results.jsonl").read_bytes() == (OLD / name / "results.jsonl").read_bytes()


def test_schema_tuning_reads_a_batch_folder_through_experiments_only():
    """`analysis` stands below `experiments` and reads no batch folder: given one it says what reads it;
    `ladr_lab.tune_request_match` reads it with `load_results` (rows by id, in input order)."""
    from ladr_lab.analysis import tune_request_match as analysis_tune
    from ladr_lab.errors import LadrError
    from ladr_lab.experiments import tune_request_match

    loose = {"type": "object"}
    for name in ("evaluation", "experiment"):
        with pytest.raises(LadrError, match=r"batch run's folder .*load_results"):
            analysis_tune(OLD / name, {"loose": loose})
    ev = tune_request_match(OLD / "evaluation", {"loose": loose})
    assert list(dict.fromkeys(o.row for o in ev.outputs)) == ["dedup", "rounds"]
    assert ev.score_rows() == analysis_tune(load_evaluation(OLD / "evaluation"), {"loose": loose}).score_rows()
    exp = tune_request_match(OLD / "experiment", {"loose": loose})
    assert {o.row.split("/")[0] for o in exp.outputs} == {"a", "loose", "tight"}
    import ladr_lab
    assert ladr_lab.tune_request_match is tune_request_match


def test_resuming_into_old_folders_retries_only_their_error_cells(tmp_path):
    """By default an error is not a result: a resume runs the old folders' error cells again (the model is still
    down for `down`, which calls it once per cell; `nocontext` fails before any call) and nothing else; the
    completed cells' lines are kept byte for byte, and each retried cell's new line says `retried`."""
    make = _maker()
    calls = []

    def counted(messages, call):
        calls.append(next(r["id"] for r in make.ROWS if r.get("context") and r["context"] in messages[-1]["content"]))
        return make.answer(messages, call)

    old_ev, old_exp = load_evaluation(OLD / "evaluation"), load_experiment(OLD / "experiment")
    errors = {(c.variant, c.row) for c in [*old_ev.cells, *old_exp.cells] if c.status == "error"}
    assert {r for _, r in errors} == {"down", "nocontext"}
    ev, exp = _resume(make, tmp_path, ScriptedModel(counted, reads_schemas=False))
    assert set(calls) == {"down"} and len(calls) == sum(r == "down" for _, r in errors)
    assert ev.retried == sum(v is None for v, _ in errors) == 2 and exp.retried == len(errors) - 2
    for old, new in ((old_ev, ev), (old_exp, exp)):
        for was, now in zip(old.cells, new.cells, strict=True):
            assert (now.variant, now.row) == (was.variant, was.row)
            if was.status == "error":      # run again, and still an error: the model is still down
                assert now.retried == 1 and now.status == "error" and now.error_type == was.error_type
            else:
                assert now.to_dict() == was.to_dict()
    assert f"{exp.retried} error cell(s) of the last run retried ({exp.retried} an error again)" in exp.format()
    assert "2 error cell(s) of the last run retried" in ev.format()
    for name in ("evaluation", "experiment"):
        lines = (tmp_path / name / "results.jsonl").read_bytes()
        before = (OLD / name / "results.jsonl").read_bytes()
        assert lines.startswith(before)        # the old lines stay; one line appended per retried cell
        added = [json.loads(x) for x in lines[len(before):].decode().splitlines()]
        assert sorted((d.get("variant"), d["row"]) for d in added) == sorted(k for k in errors
                                                                            if (k[0] is None) == (name == "evaluation"))
        assert all(d["retried"] == 1 for d in added)
        back = load_results(tmp_path / name)       # read back: which cells ran again, not what "the last run" did
        assert back.retried == len(added) and "ran again after an error in an earlier run" in back.format()
        assert "of the last run" not in back.format()
