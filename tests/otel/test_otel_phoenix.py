"""The real round trip: Phoenix (arize-phoenix) serves on 127.0.0.1, a run is exported to it over OTLP/HTTP, and
its spans are read back through Phoenix's own REST API (names, parent links, token counts, ladr attributes)."""
from __future__ import annotations

import json
import time
import urllib.request

from tests.otel.conftest import SPAN_TREE, need


def _get(url: str):
    with urllib.request.urlopen(url, timeout=5) as r:
        return json.loads(r.read())


def test_a_run_exported_to_phoenix_reads_back_through_its_api(phoenix, make_run, monkeypatch):
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", phoenix)
    run = make_run(otel=True)
    assert run.run().status == "completed"
    assert run.otel.spans == 11 and not run.trace.listener_errors
    spans: list = []
    deadline = time.monotonic() + 30            # Phoenix writes received spans in the background
    while len(spans) < 11 and time.monotonic() < deadline:
        spans = _get(phoenix + "/v1/projects/default/spans?limit=100")["data"]
        time.sleep(0.3)
    assert len(spans) == 11
    by_id = {s["context"]["span_id"]: s for s in spans}
    tree = sorted((s["name"], by_id[s["parent_id"]]["name"] if s["parent_id"] else None, s["span_kind"])
                  for s in spans)
    assert tree == sorted(SPAN_TREE)
    assert len({s["context"]["trace_id"] for s in spans}) == 1
    r2 = next(s for s in spans if s["name"] == "round 2")
    attrs = r2["attributes"]
    assert (attrs["llm.token_count.prompt"], attrs["llm.token_count.completion"], attrs["llm.token_count.total"]) \
        == (200, 20, 220)
    assert attrs["llm.model_name"] == "scripted-gpt"
    assert (attrs["ladr.verdict"], attrs["ladr.verdict.keyword"]) == ("final", "required")
    write = next(s for s in spans if s["name"].startswith("write "))
    assert write["attributes"]["ladr.write.status"] == "written"
    fetch = next(s for s in spans if s["name"] == "fetch")
    assert fetch["attributes"]["ladr.fetched.paths"] == ["retrieve/max-rounds.md"]


def _wait_spans(phoenix: str, n: int) -> list:
    spans: list = []
    deadline = time.monotonic() + 30            # Phoenix writes received spans in the background
    while len(spans) < n and time.monotonic() < deadline:
        spans = _get(phoenix + "/v1/projects/default/spans?limit=1000")["data"]
        time.sleep(0.3)
    return spans


def test_the_documents_content_reads_back_through_phoenixs_client(phoenix, make_run, monkeypatch):
    """What Phoenix's RAG evals read (issue 30: `get_input_output_context` returned None): the fetch span's documents
    with their content, and the run's question, answer and context, through Phoenix's own client helpers."""
    need("phoenix.client", "pip install arize-phoenix-client")
    from phoenix.client import Client
    from phoenix.client.helpers.spans import get_input_output_context, get_retrieved_documents

    from tests.otel.test_otel_openinference import DOC
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", phoenix)
    run = make_run(otel=True)
    assert run.run().status == "completed" and not run.trace.listener_errors
    spans = _wait_spans(phoenix, 11)
    assert {s["status_code"] for s in spans} == {"OK"}
    client = Client(base_url=phoenix)
    text = DOC.read_text(encoding="utf-8").strip("\n")
    docs = get_retrieved_documents(client, project_name="default")
    assert list(docs["document"]) == [text]
    assert json.loads(docs["input"].iloc[0]) == {"files": ["retrieve/max-rounds.md"]}
    qa = get_input_output_context(client, project_name="default")
    assert qa is not None and len(qa) == 1
    row = qa.iloc[0]
    assert row["context"] == text
    assert json.loads(row["input"]) == {"context": "How many calls per node?"}
    assert "maxRounds + 1" in row["output"]


def test_an_experiment_reaches_phoenix_as_a_dataset_and_an_experiment_per_variant(phoenix, tmp_path, monkeypatch,
                                                                                   capsys):
    """`experiment(..., phoenix=URL)`: each cell's run is exported there tagged with its variant, row and assertion
    results (filterable by `metadata`), and the experiment is uploaded as a Phoenix dataset of its rows and an
    experiment per variant whose runs (linked to their traces) and evaluations are the cells' — read back through
    Phoenix's client."""
    need("phoenix.client", "pip install arize-phoenix-client")
    from phoenix.client import Client
    from phoenix.client.types.spans import SpanQuery

    from ladr_lab.experiments import experiment
    from ladr_lab.models import ScriptedModel
    from tests.experiments.test_experiment import ROWS, SMALL, TIGHT, _answers, _ladder
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_ENDPOINT", raising=False)
    exp = experiment({"tight": _ladder(TIGHT), "small": _ladder(SMALL)}, ROWS, model=ScriptedModel(_answers()),
                     asserts=["contains: retrieve/"], out=tmp_path / "phx-exp", rejudge="off", progress=False,
                     concurrency=2, phoenix=phoenix)
    assert exp.phoenix_error is None
    up = exp.phoenix
    assert (up.runs, len(up.experiments), up.reused) == (6, 2, False)
    assert all(c.otel_trace and len(c.otel_trace) == 32 for c in exp.cells)
    client = Client(base_url=phoenix)
    ds = client.datasets.get_dataset(dataset=up.dataset_id)
    assert ds.name == "phx-exp"
    rows = {e["metadata"]["row"]: e for e in ds.examples}
    assert sorted(rows) == ["dedup", "hard", "rounds"]
    assert rows["dedup"]["input"] == {"context": "How does deduplication work?"}
    cells = {(c.variant, c.row): c for c in exp.cells}
    for variant, eid in up.experiments.items():
        ran = client.experiments.get_experiment(experiment_id=eid)
        assert len(ran["task_runs"]) == 3
        by_example = {r["dataset_example_id"]: r for r in ran["task_runs"]}
        evals = {}
        for ev in ran["evaluation_runs"]:
            evals.setdefault(ev.experiment_run_id, {})[ev.name] = ev.result
        for row, example in rows.items():
            cell = cells[(variant, row)]
            run = by_example[example["id"]]
            assert run["output"] == cell.output and run["trace_id"] == cell.otel_trace
            got = evals[run["id"]]
            assert got["status"]["label"] == cell.status
            for name, result in (cell.checks or {}).items():
                want = "unchecked" if result.passed is None else "pass" if result.passed else "fail"
                assert got[name]["label"] == want, (variant, row, name)
                if result.passed is not None:
                    assert got[name]["score"] == (1.0 if result.passed else 0.0)
    # the tight variant's requestMatch never matches a bare request: its `fetched` assertions fail, small's pass
    assert cells[("tight", "dedup")].passed is False and cells[("small", "dedup")].passed is True
    spans = _wait_spans(phoenix, 6)
    roots = client.spans.get_spans_dataframe(query=SpanQuery().where("metadata['variant'] == 'small'"),
                                             project_name="default")
    assert sorted(roots["context.trace_id"]) == sorted(c.otel_trace for c in exp.cells if c.variant == "small")
    failing = client.spans.get_spans_dataframe(query=SpanQuery().where("metadata['passed'] == False"),
                                               project_name="default")
    assert sorted(failing["context.trace_id"]) == sorted(c.otel_trace for c in exp.cells if c.passed is False)
    assert spans
    # a second upload of the same rows adds experiments to the same dataset
    again = exp.to_phoenix(phoenix)
    assert again.reused and again.dataset_id == up.dataset_id and set(again.experiments) == {"tight", "small"}
    # the command line: `ladr-lab eval ... --phoenix URL` (an evaluation of one ladder: one Phoenix experiment)
    from ladr_lab.cli import main
    inputs = tmp_path / "rows.jsonl"
    inputs.write_text("".join(json.dumps({"id": r["id"], "context": r["context"]}) + "\n" for r in ROWS))
    from tests.experiments.test_experiment import EXAMPLES
    code = main(["eval", str(EXAMPLES / "research_small.yaml"), "--inputs", str(inputs), "--out",
                 str(tmp_path / "cli-eval"), "--model", "offline", "--json", "--phoenix", phoenix])
    assert code == 0
    said = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert (said["phoenix"]["dataset"], said["phoenix"]["runs"], said["rows"]) == ("cli-eval", 3, 3)
    from ladr_lab.experiments.results import load_evaluation
    ev = load_evaluation(tmp_path / "cli-eval")
    assert all(c.otel_trace for c in ev.cells)
    names = {d["name"] for d in client.datasets.list()}
    assert "cli-eval" in names
