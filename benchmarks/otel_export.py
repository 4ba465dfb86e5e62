"""OpenTelemetry export cost: a synthetic 1,000-round trace exported in-process, as a ratio to writing its JSONL.

    python benchmarks/otel_export.py [--rounds 1000] [--repeat 7] [--quick]

The trace is one run of 100 steps × 5 nodes × 2 rounds (1,000 `llm_call` events, each with a system and a user
message of about 2 kB, its output, token counts, a verdict and, on each node's first round, one fetched file, whose
1,800 characters the second round's prompt shows: the fetch span's document content is read back from there),
with a gate and a write per node, as `Trace` records them. Timed (best and median of --repeat, milliseconds):
- jsonl: `Trace.to_jsonl(path)`, the file a run writes (to a temporary folder);
- plan: `otel.plan_spans`, the span tree in plain Python (no OpenTelemetry);
- export (in-memory): `otel.export(trace, exporter=InMemorySpanExporter())`: the plan, the SDK's spans, and the
  exporter's `export()` of them, in-process; no network and no protobuf encoding;
- export (OTLP encode): the same with an exporter that encodes each batch to the OTLP/HTTP protobuf body
  (`encode_spans(...).SerializeToString()`), as `OTLPSpanExporter` does before its POST, and sends nothing.
Ratios are to the JSONL write. Prints a table and writes benchmarks/results/otel_export.json.
"""
from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ladr_lab.otel import export, plan_spans  # noqa: E402
from ladr_lab.round.records import SectionSpan  # noqa: E402
from ladr_lab.trace import (  # noqa: E402
    Fetched,
    Gate,
    Judgement,
    LlmCall,
    RunEnd,
    RunStart,
    StepEnd,
    StepStart,
    Trace,
    Write,
)

DOC = "A retrieved document's line of text. " * 50       # 1,800 characters, the content of each fetched file


def synthetic(rounds: int, nodes: int = 5, per_node: int = 2) -> Trace:
    """A recorded-looking trace of `rounds` model calls (steps of `nodes` nodes × `per_node` rounds)."""
    t = Trace()
    t.emit(RunStart(ladder="bench", model="gpt-x", inputs={"context": "q"}, budget={}, run_id="bench0000001"))
    system = "You answer from the slate. " * 40
    steps = max(1, rounds // (nodes * per_node))
    for s in range(steps):
        step = f"step{s}"
        t.emit(StepStart(step=step, step_type="normal", nodes=nodes))
        for n in range(1, nodes + 1):
            for r in range(1, per_node + 1):
                last = r == per_node
                user = f"Question:\n{s}/{n}/{r}: " + "context line of the prompt. " * 70
                sections = [SectionSpan("field", "Question", len(user))]
                for k in range(1, r):  # the node's earlier rounds' documents, as the prompt shows them (and records)
                    block = f"RetrievedDocuments {k}:\n--- docs/d{s}_{n}.md [files] ---\n" + DOC
                    user += "\n\n" + block
                    sections.append(SectionSpan("retrieved", f"RetrievedDocuments {k}", len(block)))
                fetched = None if last else (Fetched(path=f"docs/d{s}_{n}.md", mode="files", status="fetched",
                                                     chars=len(DOC)),)
                t.emit(LlmCall(step=step, node=n, round=r, iteration=1,
                               messages=[{"role": "system", "content": system}, {"role": "user", "content": user}],
                               output='{"answer": "yes", "confidence": 0.9}' if last else
                               '{"request": {"files": ["d.md"]}}',
                               forced_final=False, request_match="final" if last else "retrieval", model="gpt-x",
                               tokens_in=700, tokens_out=12, cost=0.0004, latency=0.8,
                               reason="JSON found (strict) and it matches requestMatch", fetched=fetched,
                               request=None if last else {"files": ["d.md"]}, sections=tuple(sections),
                               verdict=Judgement(test="requestMatch", matched=not last, extraction="strict",
                                                 keyword="required" if last else None)))
            t.emit(Gate(step=step, node=n, condition="jsonMatches", matched=True, branch="then", action="continue",
                        jump=None, reason="matches"))
            t.emit(Write(step=step, node=n, mechanism="slateWrite", target="Memory/trace/out.md", policy="append",
                         status="written", chars=40))
        t.emit(StepEnd(step=step, survivors=nodes, nodes=nodes, jump=None))
    t.emit(RunEnd(status="completed", output="done", error=None, llm_calls=steps * nodes * per_node, steps=steps))
    return t


class EncodingExporter:
    """An exporter that encodes each batch as OTLP/HTTP's protobuf body and sends nothing."""

    def __init__(self) -> None:
        self.bytes = 0

    def export(self, spans):
        from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
        from opentelemetry.sdk.trace.export import SpanExportResult
        self.bytes += len(encode_spans(spans).SerializeToString())
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        pass


def timed(fn, repeat: int) -> tuple[float, float]:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1000)
    return min(times), statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--quick", action="store_true", help="100 rounds, 2 repeats")
    ap.add_argument("--out", type=Path, help="results JSON (default benchmarks/results/otel_export.json)")
    a = ap.parse_args()
    if a.quick:
        a.rounds, a.repeat = 100, 2
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    trace = synthetic(a.rounds)
    events = list(trace)
    spans = len(plan_spans(events, 0.0))
    encoder = EncodingExporter()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "trace.jsonl"
        trace.to_jsonl(path)
        jsonl_bytes = path.stat().st_size
        cases = {
            "jsonl": lambda: trace.to_jsonl(path),
            "plan": lambda: plan_spans(events, 0.0),
            "export (in-memory)": lambda: export(trace, exporter=InMemorySpanExporter(), start=0.0),
            "export (OTLP encode)": lambda: export(trace, exporter=encoder, start=0.0),
        }
        timed(cases["export (in-memory)"], 1)         # warm: the SDK's first import is not the export's cost
        results = {}
        for name, fn in cases.items():
            best, med = timed(fn, a.repeat)
            results[name] = {"best_ms": round(best, 2), "median_ms": round(med, 2)}
    base = results["jsonl"]["median_ms"]
    for r in results.values():
        r["ratio_to_jsonl"] = round(r["median_ms"] / base, 2)
    print(f"{a.rounds} rounds, {len(events)} events, {spans} spans; JSONL {jsonl_bytes / 1e6:.1f} MB, "
          f"OTLP body {encoder.bytes / max(1, a.repeat) / 1e6:.1f} MB")
    print(f"{'case':<24}{'best ms':>10}{'median ms':>12}{'× jsonl':>10}")
    for name, r in results.items():
        print(f"{name:<24}{r['best_ms']:>10.1f}{r['median_ms']:>12.1f}{r['ratio_to_jsonl']:>10.2f}")
    out = {"rounds": a.rounds, "events": len(events), "spans": spans, "repeat": a.repeat, "jsonl_bytes": jsonl_bytes,
           "otlp_bytes": encoder.bytes // max(1, a.repeat), "results": results, "python": platform.python_version(),
           "machine": platform.machine(), "cpus": __import__("os").cpu_count()}
    dest = a.out or ROOT / "benchmarks" / "results" / "otel_export.json"
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
