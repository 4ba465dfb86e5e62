"""Batch folders written before batch runs got one home (ladr_lab at 9ad41be, `tests/fixtures/batch_v1/`, made by its
`make_folders.py`) read with today's code: every results line comes back byte for byte, the tables are the same
bytes, and a resume into a copy of each folder calls the model for nothing."""
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


def test_resuming_into_old_folders_calls_the_model_for_nothing(tmp_path):
    make = _maker()
    calls = []

    def counted(messages, call):
        calls.append(1)
        return make.answer(messages, call)

    for name in ("evaluation", "experiment"):
        shutil.copytree(OLD / name, tmp_path / name)
    model = ScriptedModel(counted, reads_schemas=False)
    ev = evaluate(make.ladder(make.SMALL), [{k: v for k, v in r.items() if k != "assert"} for r in make.ROWS],
                  model=model, out=tmp_path / "evaluation", progress=False)
    exp = experiment({"a": make.ladder(make.SMALL), "loose": make.ladder(make.LOOSE),
                      "tight": make.ladder(make.TIGHT)}, make.ROWS, model=model, out=tmp_path / "experiment",
                     progress=False, asserts=["max-calls: 2", "contains: it says so"])
    assert calls == []
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
