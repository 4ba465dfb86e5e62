"""An experiment's cells as traces (issue 30): each cell's run exported once its assertions are checked, its root
span tagged with the experiment, variant, row, status and assertion results (`experiments/telemetry.py`), the trace
id kept in the cell's results line; options and a missing receiver said before any cell runs."""
from __future__ import annotations

import json
import socket
import sys

import pytest

from ladr_lab.errors import LadrError


def _attrs(span) -> dict:
    out = {}
    for a in span.attributes:
        v = a.value
        kind = v.WhichOneof("value")
        out[a.key] = [x.string_value for x in v.array_value.values] if kind == "array_value" else getattr(v, kind)
    return out


def test_each_cells_root_span_is_tagged_with_its_experiment_variant_row_and_results(receiver, tmp_path):
    from ladr_lab.experiments import experiment, load_experiment
    from ladr_lab.experiments.folder import RESULTS
    from ladr_lab.experiments.results import COLUMNS
    from ladr_lab.models import ScriptedModel
    from tests.experiments.test_experiment import ROWS, SMALL, TIGHT, _answers, _ladder
    out = tmp_path / "tagged"
    exp = experiment({"tight": _ladder(TIGHT), "small": _ladder(SMALL)}, ROWS, model=ScriptedModel(_answers()),
                     asserts=["contains: retrieve/"], out=out, rejudge="off", progress=False, concurrency=2,
                     otel={"endpoint": receiver.url})
    roots = {bytes(s.trace_id).hex(): _attrs(s) for s in receiver.spans if not s.parent_span_id}
    assert len(roots) == 6 == len(exp.cells)
    for cell in exp.cells:
        root = roots[cell.otel_trace]
        meta = json.loads(root["metadata"])
        assert meta == {"experiment": "tagged", "variant": cell.variant, "row": cell.row, "status": cell.status,
                        "passed": cell.passed, "assertions": {n: r.passed for n, r in cell.checks.items()}}
        assert root["ladr.experiment.variant"] == cell.variant and root["ladr.experiment.row"] == cell.row
        assert root["ladr.experiment.passed"] is cell.passed
        assert root["ladr.experiment.failed"] == [n for n, r in cell.checks.items() if r.passed is False]
        assert root["tag.tags"] == ["experiment:tagged", f"variant:{cell.variant}", f"row:{cell.row}",
                                    "passed" if cell.passed else "failed"]
    # every span of a cell is in its trace, and the cell's results line names it
    assert {bytes(s.trace_id).hex() for s in receiver.spans} == {c.otel_trace for c in exp.cells}
    lines = [json.loads(line) for line in (out / RESULTS).read_text().splitlines()]
    assert sorted(line["otel_trace"] for line in lines) == sorted(c.otel_trace for c in exp.cells)
    assert "otel_trace" not in COLUMNS and "otel_trace" not in exp.results.columns      # not a column of the table
    assert {c.otel_trace for c in load_experiment(out).cells} == set(roots)
    # a resumed experiment keeps its finished cells, and their traces: nothing is exported again
    before = len(receiver.spans)
    again = experiment({"tight": _ladder(TIGHT), "small": _ladder(SMALL)}, ROWS, model=ScriptedModel(_answers()),
                       asserts=["contains: retrieve/"], out=out, rejudge="off", progress=False,
                       otel={"endpoint": receiver.url})
    assert len(receiver.spans) == before and {c.otel_trace for c in again.cells} == set(roots)


def test_an_evaluations_rows_are_tagged_without_a_variant(receiver, tmp_path):
    from ladr_lab.experiments import evaluate
    from ladr_lab.models import ScriptedModel
    from tests.experiments.test_experiment import ROWS, SMALL, _answers, _ladder
    rows = [{"id": r["id"], "context": r["context"]} for r in ROWS]
    ev = evaluate(_ladder(SMALL), rows, model=ScriptedModel(_answers()), out=tmp_path / "ev", progress=False,
                  otel={"endpoint": receiver.url, "content": False})
    roots = [_attrs(s) for s in receiver.spans if not s.parent_span_id]
    assert len(roots) == 3 and all(c.otel_trace for c in ev.cells)
    meta = sorted((json.loads(r["metadata"]) for r in roots), key=lambda m: m["row"])
    assert meta[0] == {"experiment": "ev", "row": "dedup", "status": "completed", "passed": None, "assertions": {}}
    assert all("input.value" not in r and "output.value" not in r for r in roots)     # content: False
    assert all(r["tag.tags"][-1] == "unchecked" for r in roots)
    assert "otel_trace" not in ev.results.columns            # the trace id is in the results line, not the table


def test_a_receiver_that_does_not_answer_is_said_before_any_cell_runs(sdk, tmp_path):
    from ladr_lab.experiments import experiment
    from ladr_lab.models import ScriptedModel
    from tests.experiments.test_experiment import ROWS, SMALL, _answers, _ladder
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead = s.getsockname()[1]
    with pytest.raises(LadrError, match=f"no OTLP/HTTP receiver answers at http://127.0.0.1:{dead}/v1/traces"):
        experiment([_ladder(SMALL)], ROWS, model=ScriptedModel(_answers()), out=tmp_path / "x", progress=False,
                   otel={"endpoint": f"http://127.0.0.1:{dead}"})
    assert not (tmp_path / "x" / "results.jsonl").exists()


def test_the_options_are_checked(sdk, tmp_path):
    from ladr_lab.experiments import experiment
    from tests.experiments.test_experiment import ROWS, SMALL, _ladder
    with pytest.raises(LadrError, match='unknown option.*document_char.*did you mean "document_chars"'):
        experiment([_ladder(SMALL)], ROWS, out=tmp_path / "x", progress=False, otel={"document_char": 10})
    with pytest.raises(LadrError, match="phoenix: unknown option"):
        experiment([_ladder(SMALL)], ROWS, out=tmp_path / "x", progress=False, phoenix={"urls": "x"})


def test_without_phoenixs_client_the_upload_names_the_install(sdk, tmp_path, monkeypatch):
    from ladr_lab.experiments import experiment
    from tests.experiments.test_experiment import ROWS, SMALL, _ladder
    monkeypatch.setitem(sys.modules, "phoenix.client", None)
    with pytest.raises(LadrError, match="pip install arize-phoenix-client"):
        experiment([_ladder(SMALL)], ROWS, out=tmp_path / "x", progress=False, phoenix="http://127.0.0.1:1")


def test_the_cli_exports_each_cell_with_otel(receiver, tmp_path, monkeypatch, capsys):
    from ladr_lab.cli import main
    from tests.experiments.test_experiment import EXAMPLES, ROWS
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.url)
    inputs = tmp_path / "rows.jsonl"
    inputs.write_text("".join(json.dumps({"id": r["id"], "context": r["context"]}) + "\n" for r in ROWS))
    code = main(["eval", str(EXAMPLES / "research_small.yaml"), "--inputs", str(inputs), "--out", str(tmp_path / "o"),
                 "--assert", "contains: retrieve/", "--otel", "--otel-no-content", "--json"])
    assert code in (0, 1), capsys.readouterr().err
    roots = [_attrs(s) for s in receiver.spans if not s.parent_span_id]
    assert sorted(json.loads(r["metadata"])["row"] for r in roots) == ["dedup", "hard", "rounds"]
    assert not [k for s in receiver.spans for k in _attrs(s) if k.startswith(("input.", "output."))]


class _FakePhoenix:
    """The few calls of Phoenix's client the upload makes, recorded (the real round trip: test_otel_phoenix.py)."""

    def __init__(self):
        self.evaluations: list[dict] = []
        self.runs: list[dict] = []
        outer = self

        class Datasets:
            def list(self):
                return []

            def create_dataset(self, *, name, inputs, outputs, metadata, dataset_description):
                from types import SimpleNamespace
                return SimpleNamespace(id="ds", name=name, version_id="v1",
                                       examples=[{"id": f"ex-{m['row']}", "metadata": m} for m in metadata])

        class Experiments:
            def create(self, **kw):
                return {"id": f"exp-{kw['experiment_name']}"}

            def log_run(self, **kw):
                outer.runs.append(kw)
                return {"id": f"run-{len(outer.runs)}"}

            def log_evaluation(self, **kw):
                outer.evaluations.append(kw)

        self.datasets, self.experiments = Datasets(), Experiments()


def test_a_scored_cell_reaches_phoenix_and_its_span_with_its_score_metrics_and_run_number(tmp_path):
    """With weights, metrics and a cell threshold, Phoenix gets what the summary and the exit code count — the
    weighted score labelled with the cell's verdict, each metric, a graded assertion's grade — and the root span's
    metadata says the score and which run of a repeated cell it is (issue 30: repeats and scores reach Phoenix)."""
    pytest.importorskip("phoenix.client")
    from ladr_lab.experiments import AssertionResult, CellResult, Experiment
    from ladr_lab.experiments.phoenix import upload
    from ladr_lab.experiments.telemetry import cell_attributes
    checks = {"a": AssertionResult(True, ""), "b": AssertionResult(False, "no b"),
              "g": AssertionResult(False, "similarity 0.30 < 0.75", 0.3)}
    cell = CellResult(row="r1", variant="v", status="completed", output="x", repeat=2, scored=True,
                      weights={"b": 0.5}, threshold=0.5, scores={"a": 1.0, "b": 0.0, "g": 0.3},
                      metrics={"style": 0.3}).with_checks(checks, None)
    assert cell.passed is True and cell.score == 0.52          # (1 + 0.5×0 + 0.3) / 2.5: over the threshold
    fake = _FakePhoenix()
    upload(Experiment(tmp_path, [cell], ["v"]), client=fake, url="http://127.0.0.1:1")
    got = {e["name"]: (e.get("score"), e.get("label")) for e in fake.evaluations}
    assert got == {"status": (1.0, "completed"), "a": (1.0, "pass"), "b": (0.0, "fail"), "g": (0.3, "fail"),
                   "score": (0.52, "pass"), "metric.style": (0.3, None)}
    assert fake.runs[0]["repetition_number"] == 2
    attrs = cell_attributes(cell, "exp")
    meta = attrs["metadata"]
    assert (meta["repeat"], meta["score"], meta["metrics"], meta["passed"]) == (2, 0.52, {"style": 0.3}, True)
    assert (attrs["ladr.experiment.repeat"], attrs["ladr.experiment.score"]) == (2, 0.52)
    plain = CellResult(row="r1", variant="v", status="completed").with_checks({"a": AssertionResult(True, "")}, None)
    assert set(cell_attributes(plain, "exp")["metadata"]) == {"experiment", "variant", "row", "status", "passed",
                                                              "assertions"}
