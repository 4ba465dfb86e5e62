"""The real round trip: Phoenix (arize-phoenix) serves on 127.0.0.1, a run is exported to it over OTLP/HTTP, and
its spans are read back through Phoenix's own REST API (names, parent links, token counts, ladr attributes)."""
from __future__ import annotations

import json
import time
import urllib.request

from tests.otel.conftest import SPAN_TREE


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
