"""Reports benchmark: what `--html`, `--junit`, `--json` and `eval compare` cost on a large run, with no model.

    python benchmarks/reports.py [--rows 5000] [--variants 2] [--reps 3] [--out FILE.json]

Two results folders of `rows × variants` cells are written with the folder's own `Recorder` (each cell completed
with two assertions and a 300-character output; the second folder has every 10th row's output changed and every
20th row failing), with no traces (the compare's run diffs, which read traces, are per click and not measured here).
Timed, median of `--reps`, each from a folder read afresh:
- load: `load_results` of the folder;
- junit: `to_junit()` (the document, a string);
- page: `to_page()` (the standalone HTML page, capped at `PAGE_CELLS` cell parts);
- json: `cell_reports()` and `json.dumps` of them (what `--json` adds);
- compare: `before.compare(after)` and its `format()`.
Printed as a table with the size of each document; written to benchmarks/results/reports.json.
"""
from __future__ import annotations

import argparse
import json
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ladr_lab.experiments import AssertionResult, CellResult, load_results  # noqa: E402
from ladr_lab.experiments.folder import Recorder, write_manifest  # noqa: E402


class _Variant:
    def __init__(self, name: str) -> None:
        self.name, self.source, self.knobs, self.base = name, "bench.yaml", {}, None
        self.ladder = type("L", (), {"name": "bench"})()


def _write(out: Path, rows: int, variants: list[str], after: bool) -> None:
    out.mkdir(parents=True)
    write_manifest(out, [_Variant(v) for v in variants], [], "offline", None, [f"r{i}" for i in range(rows)], [])
    rec = Recorder(out / "results.jsonl")
    text = "The answer, from the handbook, with a citation [retrieve/dedup.md]. " * 5
    for i in range(rows):
        for v in variants:
            fails = after and i % 20 == 0
            output = text[:300] + (" (changed)" if after and i % 10 == 0 else "")
            cell = CellResult(row=f"r{i}", variant=v, inputs={"context": f"question {i}"}, status="completed",
                              output=output, llm_calls=2, tokens_in=900, tokens_out=80, seconds=0.4,
                              trace=f"{v}/traces/r{i}.jsonl", pos=i, fingerprint="f")
            rec.add(cell.with_checks({"fetched": AssertionResult(not fails, "never fetched x" if fails else ""),
                                      "mentions": AssertionResult(True, "")}, "fp"))


def _median(fn, reps: int) -> tuple[float, object]:
    times, got = [], None
    for _ in range(reps):
        t0 = time.perf_counter()
        got = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), got


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=5000)
    ap.add_argument("--variants", type=int, default=2)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "reports.json"))
    a = ap.parse_args()
    variants = [f"v{i + 1}" for i in range(a.variants)]
    with tempfile.TemporaryDirectory() as tmp:
        before, after = Path(tmp) / "before", Path(tmp) / "after"
        _write(before, a.rows, variants, False)
        _write(after, a.rows, variants, True)
        exp = load_results(before)
        other = load_results(after)
        rows = []
        for name, fn in (("load", lambda: load_results(before)),
                         ("junit", exp.to_junit),
                         ("page", exp.to_page),
                         ("json", lambda: json.dumps(exp.cell_reports(), default=str)),
                         ("compare", lambda: exp.compare(other).format())):
            secs, got = _median(fn, a.reps)
            size = len(got.encode("utf-8")) if isinstance(got, str) else None
            rows.append({"what": name, "seconds": round(secs, 3), "bytes": size})
        changed = len(exp.compare(other).changes)
    cells = a.rows * a.variants
    print(f"{cells:,} cells ({a.rows:,} rows × {a.variants} variants), median of {a.reps}; compare: {changed:,} "
          "changed cells")
    print(f"{'what':<10}{'seconds':>10}{'MB':>10}")
    for r in rows:
        mb = "" if r["bytes"] is None else f"{r['bytes'] / 1e6:.1f}"
        print(f"{r['what']:<10}{r['seconds']:>10.3f}{mb:>10}")
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps({"cells": cells, "rows": a.rows, "variants": a.variants, "reps": a.reps,
                                       "changed": changed, "results": rows, "python": platform.python_version(),
                                       "platform": platform.platform(), "commit": commit.strip(),
                                       "timestamp": time.strftime("%Y-%m-%dT%H:%M:%S")}, indent=2) + "\n")


if __name__ == "__main__":
    main()
