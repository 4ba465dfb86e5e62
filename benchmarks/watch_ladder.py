#!/usr/bin/env python
"""How should `ladr_lab.watch(path)` notice that a ladder file changed: re-stat it from a thread, or watchfiles?

    python benchmarks/watch_ladder.py [--edits 30] [--idle 5]

For each backend a ladder file is watched (`WatchedLadder`, the poll backend at its default 0.25 s interval
and at 0.05 s); then `--edits` times the file is edited, alternately in place (`open(path, "w")`, as some
editors save) and by renaming a new file over it (as vim and most IDEs save), and the time from the end of
the write to the `changed` callback is measured (a change not reported within 3 s counts as missed). Idle
cost: CPU time (process time, all threads) used over `--idle` seconds of watching an unchanged file, minus
the same with no watcher. Prints a table; writes benchmarks/results/watch_ladder.json.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
RESULTS = Path(__file__).resolve().parent / "results"

LADDER = """name: watched-{n}
slates:
  - title: K
    path: .
    folders: [{{name: docs}}]
steps:
  - id: s{n}
"""


def _write(path: Path, n: int, rename: bool) -> None:
    text = LADDER.format(n=n)
    if rename:
        tmp = path.with_suffix(".tmp")
        tmp.write_text(text)
        os.replace(tmp, path)
    else:
        with open(path, "w") as fh:
            fh.write(text)


def bench(backend: str, interval: float, edits: int, idle: float) -> dict:
    from ladr_lab.config.watched import WatchedLadder
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "ladder.yaml"
        _write(path, 0, False)
        seen = threading.Event()
        w = WatchedLadder(path, interval=interval, backend=backend)
        w.changed.append(lambda _w: seen.set())
        time.sleep(0.3)                         # let the watcher settle (watchfiles starts its thread)
        c0, t0 = time.process_time(), time.perf_counter()
        time.sleep(idle)
        cpu = (time.process_time() - c0) / (time.perf_counter() - t0)
        lat, missed = [], 0
        for i in range(1, edits + 1):
            seen.clear()
            _write(path, i, rename=bool(i % 2))
            t = time.perf_counter()
            if seen.wait(3.0):
                lat.append(time.perf_counter() - t)
            else:
                missed += 1
            if w.ladder is None or w.ladder.name != f"watched-{i}":
                w.check()                       # catch up before the next edit, so edits never overlap
            time.sleep(0.05)
        w.close()
    return {"backend": backend, "interval": interval, "latency_ms": [round(x * 1000, 2) for x in lat],
            "missed": missed, "idle_cpu_fraction": cpu}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    ap.add_argument("--edits", type=int, default=30)
    ap.add_argument("--idle", type=float, default=5.0)
    a = ap.parse_args()
    c0, t0 = time.process_time(), time.perf_counter()
    time.sleep(a.idle)
    base = (time.process_time() - c0) / (time.perf_counter() - t0)
    rows = [bench("poll", 0.25, a.edits, a.idle), bench("poll", 0.05, a.edits, a.idle),
            bench("watchfiles", 0.25, a.edits, a.idle)]
    print(f"{'backend':<12} {'interval':>8} {'p50 ms':>8} {'p90 ms':>8} {'max ms':>8} {'missed':>6} {'idle CPU %':>10}")
    for r in rows:
        lat = sorted(r["latency_ms"]) or [float("nan")]
        r["p50_ms"] = statistics.median(lat)
        r["p90_ms"] = lat[min(len(lat) - 1, int(len(lat) * 0.9))]
        r["idle_cpu_percent"] = round(max(0.0, r["idle_cpu_fraction"] - base) * 100, 3)
        print(f"{r['backend']:<12} {r['interval']:>8} {r['p50_ms']:>8.1f} {r['p90_ms']:>8.1f} {max(lat):>8.1f} "
              f"{r['missed']:>6} {r['idle_cpu_percent']:>10.3f}")
    RESULTS.mkdir(exist_ok=True)
    out = {"machine": {"python": sys.version.split()[0], "platform": platform.platform(), "cpus": os.cpu_count(),
                       "when": time.strftime("%Y-%m-%dT%H:%M:%S")},
           "edits": a.edits, "idle_s": a.idle, "baseline_idle_cpu_fraction": base, "rows": rows}
    (RESULTS / "watch_ladder.json").write_text(json.dumps(out, indent=2))
    print(f"wrote {RESULTS / 'watch_ladder.json'}")


if __name__ == "__main__":
    main()
