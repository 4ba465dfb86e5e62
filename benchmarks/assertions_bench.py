"""What an assertion costs per cell: `similar` (the offline hashing embedder, two texts embedded and compared) and
`levenshtein` (rapidfuzz's bit-parallel edit distance) against `contains`, at output sizes from a short answer to a
long report, and the pure-Python edit distance rapidfuzz replaces (the standard library has none: difflib's ratio is
not an edit distance), to say why the dependency is there.

    python benchmarks/assertions_bench.py [--sizes 200,2000,20000] [--repeat 5] [--out FILE]

Each figure is the median of --repeat timings of one `check_all` call on one cell (milliseconds), in a warm process
(the embedder made, rapidfuzz imported). The pure-Python distance runs only up to 2,000 characters (at 20,000 it
takes minutes). Writes benchmarks/results/assertions.json.
"""
from __future__ import annotations

import argparse
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

from ladr_lab.experiments.assertions import check_all, load_asserts  # noqa: E402

WORDS = ("dedup retrieval round file request answer slate folder gate schema write append merge key node step "
         "model call trace budget index glob metatag similar score weight").split()


def text(n: int, seed: int) -> str:
    """About `n` characters of handbook-like words."""
    rnd = random.Random(seed)
    out: list[str] = []
    size = 0
    while size < n:
        w = rnd.choice(WORDS)
        out.append(w)
        size += len(w) + 1
    return " ".join(out)[:n]


def python_distance(a: str, b: str) -> int:
    """The textbook dynamic programme: O(len(a) × len(b)) in pure Python."""
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i]
        for j, cb in enumerate(b, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb)))
        prev = cur
    return prev[-1]


def timed(fn, repeat: int) -> float:
    fn()                                   # warm: the embedder made, rapidfuzz imported
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1000)
    return round(statistics.median(times), 4)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="200,2000,20000")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "assertions.json"))
    a = ap.parse_args()
    sizes = [int(x) for x in a.sizes.split(",")]
    rows = []
    for n in sizes:
        out, want = text(n, 1), text(n, 2)
        cell = {"status": "completed", "output": out}
        row = {"chars": n}
        for name, spec in (("contains", f"contains: {want[:20]}"), ("similar", f"similar: {want}"),
                           ("levenshtein", f"levenshtein: {want}")):
            asserts = load_asserts(spec)
            row[f"{name}_ms"] = timed(lambda asserts=asserts, cell=cell: check_all(asserts, cell), a.repeat)
        row["python_distance_ms"] = timed(lambda out=out, want=want: python_distance(out, want), 1) if n <= 2000 else None
        rows.append(row)
    print(f"{'chars':>7} {'contains':>10} {'similar':>10} {'levenshtein':>12} {'pure-Python distance':>21}  (ms a cell)")
    for r in rows:
        py = "—" if r["python_distance_ms"] is None else f"{r['python_distance_ms']:.1f}"
        print(f"{r['chars']:>7} {r['contains_ms']:>10.3f} {r['similar_ms']:>10.3f} {r['levenshtein_ms']:>12.3f} "
              f"{py:>21}")
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                                text=True).stdout.strip()
    except OSError:
        commit = ""
    doc = {"rows": rows, "repeat": a.repeat, "python": platform.python_version(), "platform": platform.platform(),
           "cpus": os.cpu_count(), "commit": commit, "when": time.strftime("%Y-%m-%dT%H:%M:%S")}
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps(doc, indent=2) + "\n")


if __name__ == "__main__":
    main()
