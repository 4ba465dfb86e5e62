#!/usr/bin/env python
"""Which file-system notification backend can keep a held slate listing current at read time?

    python benchmarks/watch_backends.py [--edits 300]

For each backend, a directory is watched; then, `--edits` times: a read-time drain with nothing
changed (its cost), an in-place edit of a file (`open(..., "r+")`, the directory untouched), and a
read-time drain right after it (its cost, and whether it saw the edit). A backend fit for the slate
cache must see every edit at the first drain without waiting. Backends: `inotify_simple`
(`INotify.read(timeout=0)`, what ladr_lab uses), watchfiles' lowest level (`RustNotify.watch` with
1 ms debounce/step/timeout, its smallest useful settings), and the re-stat fallback (`os.stat` of
the one file). Prints a table; writes benchmarks/results/watch_backends.json.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"


def _edit(path: str, i: int) -> None:
    with open(path, "r+") as fh:
        fh.write("x" * (i % 7 + 1))


def bench_inotify_simple(d: str, path: str, edits: int) -> dict:
    import inotify_simple as ino

    fd = ino.INotify(nonblocking=True)
    f = ino.flags
    fd.add_watch(d, f.MODIFY | f.ATTRIB | f.CLOSE_WRITE | f.CREATE | f.DELETE | f.MOVED_FROM | f.MOVED_TO)
    idle, after, caught = [], [], 0
    for i in range(edits):
        t0 = time.perf_counter()
        fd.read(timeout=0)
        idle.append(time.perf_counter() - t0)
        _edit(path, i)
        t0 = time.perf_counter()
        events = fd.read(timeout=0)
        after.append(time.perf_counter() - t0)
        caught += bool(events)
    fd.close()
    return {"idle": idle, "after": after, "caught": caught}


def bench_watchfiles(d: str, path: str, edits: int) -> dict:
    from watchfiles._rust_notify import RustNotify

    rn = RustNotify([d], False, False, 50, True, False)
    idle, after, caught = [], [], 0
    for i in range(edits):
        t0 = time.perf_counter()
        rn.watch(1, 1, 1, None)
        idle.append(time.perf_counter() - t0)
        _edit(path, i)
        t0 = time.perf_counter()
        r = rn.watch(1, 1, 1, None)
        after.append(time.perf_counter() - t0)
        if isinstance(r, set) and r:
            caught += 1
        else:
            rn.watch(5, 1, 50, None)  # let the late change arrive so the next round starts clean
    rn.close()
    return {"idle": idle, "after": after, "caught": caught}


def bench_restat(d: str, path: str, edits: int) -> dict:
    idle, after, caught = [], [], 0
    last = os.stat(path)
    for i in range(edits):
        t0 = time.perf_counter()
        os.stat(path)
        idle.append(time.perf_counter() - t0)
        _edit(path, i)
        t0 = time.perf_counter()
        st = os.stat(path)
        after.append(time.perf_counter() - t0)
        caught += (st.st_mtime_ns, st.st_size) != (last.st_mtime_ns, last.st_size)
        last = st
    return {"idle": idle, "after": after, "caught": caught,
            "note": "one file; a listing re-stats every file (O(files) per read)"}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--edits", type=int, default=300)
    args = ap.parse_args(argv)
    rows = {}
    for name, fn in (("inotify_simple", bench_inotify_simple), ("watchfiles", bench_watchfiles),
                     ("restat", bench_restat)):
        d = tempfile.mkdtemp(prefix="ladr-watch-")
        path = os.path.join(d, "a.md")
        with open(path, "w") as fh:
            fh.write("hello")
        try:
            r = fn(d, path, args.edits)
        except ImportError as exc:
            rows[name] = {"status": f"not installed ({exc.name})"}
            continue
        finally:
            shutil.rmtree(d, ignore_errors=True)
        rows[name] = {"caught": r["caught"], "edits": args.edits,
                      "idle_median_us": statistics.median(r["idle"]) * 1e6,
                      "after_edit_median_us": statistics.median(r["after"]) * 1e6,
                      **({"note": r["note"]} if "note" in r else {})}
    print(f"\nRead-time drain after an in-place edit ({args.edits} edits; medians in microseconds)")
    print(f"{'backend':>16} {'seen at first drain':>20} {'idle drain':>11} {'drain after edit':>17}")
    for name, r in rows.items():
        if "caught" not in r:
            print(f"{name:>16} {r['status']:>20}")
            continue
        print(f"{name:>16} {r['caught']:>12}/{r['edits']:<7} {r['idle_median_us']:>11.1f} "
              f"{r['after_edit_median_us']:>17.1f}")
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = {"benchmark": "watch_backends", "python": sys.version.split()[0], "platform": platform.platform(),
           "cpu_count": os.cpu_count(), "rows": rows}
    (RESULTS / "watch_backends.json").write_text(json.dumps(out, indent=2) + "\n")
    print("results written to benchmarks/results/watch_backends.json")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
