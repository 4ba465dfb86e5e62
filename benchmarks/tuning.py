"""requestMatch tuning benchmark: `tune_request_match` over a data set of recorded runs, with a few variants.

    python benchmarks/tuning.py [--rows 200] [--variants 4] [--repeat 7]

Each row is one recorded run of a retrieve step: round 1 a bare request (`{"files": [...]}`, distinct per row),
round 2 a final answer (prose, a JSON answer object, or fenced JSON), every output labelled through the rows'
`labels` input. Timed (best and median of --repeat, milliseconds), in a warm process (jsonschema imported):
- cold: the extraction cache emptied first and new schema objects (the first tuning of a data set);
- warm: new schema objects again, outputs already extracted (the next set of variants);
- scores: `SchemaTuning.score_rows()` after a label changes (what TuningView does at each click);
- frames: `scores()`, `table()` and `disagreements()` as pandas DataFrames.

Target: cold under 500 ms at 200 rows × 4 variants. Writes benchmarks/results/tuning.json.
"""
from __future__ import annotations

import argparse
import copy
import importlib
import json
import os
import platform
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ladr_lab import tune_request_match  # noqa: E402
from ladr_lab.trace import LlmCall, RunStart, Trace  # noqa: E402

SCHEMAS = [
    {"type": "object", "required": ["files"], "additionalProperties": False,
     "properties": {"files": {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 3}}},
    {"type": "object"},
    {"type": "object", "required": ["request"]},
    {"type": "object", "required": ["files"], "properties": {"files": {"type": "array", "maxItems": 1}}},
]


def data(rows: int) -> list[tuple[str, Trace]]:
    """`rows` recorded runs of two rounds each, labelled by their `labels` input."""
    rnd = random.Random(7)
    out = []
    for i in range(rows):
        t = Trace()
        t.emit(RunStart(ladder="bench", model="script", inputs={"context": f"q{i}", "labels": '["request", "answer"]'},
                        budget={}))
        request = json.dumps({"files": [f"doc{i}.md"] + [f"x{rnd.randint(0, 9)}.md"] * rnd.randint(0, 3)})
        answer = rnd.choice([f"Answer {i}: the handbook says dedup runs per round.", json.dumps({"answer": f"a{i}"}),
                             f"Here it is:\n```json\n{{\"result\": {i}}}\n```"])
        for n, (text, verdict) in enumerate([(request, "retrieval"), (answer, "final")], 1):
            t.emit(LlmCall(step="research", node=1, round=n, iteration=1, messages=[], output=text,
                           forced_final=False, request_match=verdict, model="script"))
        out.append((f"r{i}", t))
    return out


def timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return (time.perf_counter() - t0) * 1000


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=200)
    ap.add_argument("--variants", type=int, default=4)
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--out", type=Path, help="results JSON (default benchmarks/results/tuning.json)")
    a = ap.parse_args()
    traces = data(a.rows)
    verdict_module = importlib.import_module("ladr_lab.round.verdict")

    def variants() -> dict:           # new schema objects at each call, as a user's next cell makes
        return {f"v{k}": copy.deepcopy(SCHEMAS[k % len(SCHEMAS)]) for k in range(a.variants)}

    got = tune_request_match(traces, variants())        # imports jsonschema and pandas, outside the timings
    got.scores()
    samples: dict[str, list[float]] = {"cold": [], "warm": [], "scores": [], "frames": []}
    for _ in range(a.repeat):
        verdict_module.extraction.cache_clear()
        samples["cold"].append(timed(lambda: tune_request_match(traces, variants())))
        samples["warm"].append(timed(lambda: tune_request_match(traces, variants())))
        got.set_label("r0", "research", 1, "answer")
        samples["scores"].append(timed(got.score_rows))
        got.set_label("r0", "research", 1, "request")
        samples["frames"].append(timed(lambda: (got.scores(), got.table(), got.disagreements())))
    results = {name: {"best_ms": round(min(xs), 2), "median_ms": round(statistics.median(xs), 2)}
               for name, xs in samples.items()}
    print(f"{a.rows} rows, {len(got.outputs)} outputs, {a.variants} variants; best and median of {a.repeat}")
    for name, r in results.items():
        print(f"{name:<8} {r['best_ms']:>9.1f} {r['median_ms']:>10.1f}")
    target_ok = results["cold"]["median_ms"] < 500
    print(f"target (cold under 500 ms, median): {'met' if target_ok else 'NOT met'}")
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                                text=True).stdout.strip()
    except OSError:
        commit = None
    out = {"rows": a.rows, "outputs": len(got.outputs), "variants": a.variants, "repeat": a.repeat,
           "results": results, "targets_met": target_ok, "python": platform.python_version(),
           "platform": platform.platform(), "cpus": os.cpu_count(), "commit": commit,
           "timestamp": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    dest = a.out or ROOT / "benchmarks" / "results" / "tuning.json"
    dest.write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
