#!/usr/bin/env python
"""Engine benchmark: retrieve-round overhead vs the unavoidable work, and index-after-write vs rescan.

    python benchmarks/engine.py                  # slates of 100, 10,000 and 100,000 files
    python benchmarks/engine.py --quick          # 100 and 10,000 only
    python benchmarks/engine.py --sizes 100,5000
    python benchmarks/engine.py --sizes 10000 --profile 10000  # + cProfile (cold round, warm runs)

What is measured, side by side in one process (see benchmarks/README.md for the reasoning):

* Runtime's own time per retrieve round. A one-step ladder (fields Question and FileIndex = the
  folder's `index`; `retrieve` with maxRounds R and the wrapped requestMatch schema) runs against a
  zero-latency ScriptedModel that asks, in rounds 1..R, for 5 distinct existing files (different
  each round), then answers. The run is driven with `Run.step()` and every step is timed with
  `perf_counter`, excluding nothing (model call, judging, fetching, trace events, building the
  next prompt). Step k (k <= R) is retrieve round k. The first Run of a size is created the
  documented way (`slates={...}`, so it builds its own store) and its first round is the *cold*
  round (it scans the folder). Later Runs share that store (`store=`), so their index cache is warm.
* Unavoidable work of the same round, measured interleaved with the runtime (before every Run):
  an `os.scandir` walk of the folder with a stat of every file (names + sizes + subfolder totals:
  what any index needs) plus reading the 5 requested files' bytes.
* Index read after one write through the folder (`write_text`, then `index()` is timed) versus a
  full rescan (`refresh()` + `index()`), on a warm store.

Results are printed and saved to benchmarks/results/engine.json (other size sets: engine-<sizes>.json;
profiles: engine-profile-<size>.txt).
"""
from __future__ import annotations

import argparse
import cProfile
import datetime as _dt
import gc
import io
import json
import os
import platform
import pstats
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / "benchmarks" / "results"
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

DEFAULT_SIZES = (100, 10_000, 100_000)
QUICK_SIZES = (100, 10_000)
ROUNDS = 5             # maxRounds R
FILES_PER_ROUND = 5
SUBFOLDERS = ("notes", "reports", "archive", "research")
SUB_SHARE = 0.25       # share of the files that live in subfolders
TAG_SHARE = 0.10       # share of the files with metatags in .metatags.json
INDEX_PAIRS = 20       # write + index() pairs
RESCANS = 3            # refresh() + index() repetitions
FRESH_STORE_RESCANS = 2

ROUND_TARGET = 2.0     # round overhead <= 2x the unavoidable work, at 10,000 files
ROUND_TARGET_SIZE = 10_000
INDEX_TARGET = 20.0    # rescan >= 20x the after-write index read, at 100,000 files
INDEX_TARGET_SIZE = 100_000

REQUEST_SCHEMA = {
    "type": "object", "required": ["request"], "additionalProperties": False,
    "properties": {"request": {"type": "object", "additionalProperties": False, "properties": {
        "files": {"type": "array", "items": {"type": "string"}},
        "subfolders": {"type": "array", "items": {"type": "string"}},
        "metatag": {"type": "object", "properties": {"name": {"type": "string"}, "contains": {"type": "string"}}},
        "glob": {"type": "string"}}}, "topK": {"type": "integer"}},
}

LADDER = """\
name: engine-benchmark
slates:
  - title: Knowledge
    folders:
      - name: docs
        metatags: { tags: "string[]", priority: number, summary: string }
steps:
  - id: research
    fields:
      - { name: Question, type: text, from: input.context }
      - { name: FileIndex, type: slateRead, from: { slate: Knowledge, folder: docs, metatag: index } }
    retrieve:
      to: { slate: Knowledge, folder: docs }
      as: RetrievedDocuments
      maxRounds: %d
      requestMatch: %s
    systemPrompt: Research the question using the files of the index.
"""

WORDS = ("slate ladder retrieval index metatag folder round model prompt answer budget gate node step "
         "trace cache scan write atomic lock embedding vector glob subfolder request schema field "
         "alpha beta gamma delta epsilon theta lambda sigma omega kernel tensor matrix integral "
         "derivative theorem lemma proof report summary quarterly revenue security policy audit "
         "latency throughput replica shard queue stream batch window checkpoint snapshot").split()


# --- imports (another engineer may be editing ladr_lab/slate: retry a broken import) ---------------
def import_ladr(retries: int = 3, wait: float = 60.0):
    last: BaseException | None = None
    for attempt in range(retries + 1):
        try:
            from ladr_lab.config import load_ladder_text
            from ladr_lab.engine import Run
            from ladr_lab.models import ScriptedModel
            from ladr_lab.slate import SlateStore
            return load_ladder_text, Run, ScriptedModel, SlateStore
        except Exception as exc:  # SyntaxError, ImportError, ... from a half-edited module
            last = exc
            for name in [m for m in sys.modules if m == "ladr_lab" or m.startswith("ladr_lab.")]:
                del sys.modules[name]
            if attempt < retries:
                print(f"import of ladr_lab failed ({type(exc).__name__}: {exc}); retrying in {wait:.0f}s",
                      file=sys.stderr)
                time.sleep(wait)
    raise SystemExit(f"cannot import ladr_lab: {last}")


# --- slate generation ------------------------------------------------------------------------------
def _paragraphs(rng: random.Random, count: int = 512) -> list[str]:
    out = []
    for _ in range(count):
        words = rng.choices(WORDS, k=rng.randint(28, 90))
        out.append(" ".join(words).capitalize() + ".")
    return out


def generate_slate(root: Path, n: int, seed: int = 7) -> dict:
    """Write `n` small files (200-600 bytes) into root/docs, a share in subfolders, plus metatags."""
    rng = random.Random(seed + n)
    paras = _paragraphs(rng)
    docs = root / "docs"
    docs.mkdir(parents=True)
    for sub in SUBFOLDERS:
        (docs / sub).mkdir()
    n_sub = int(n * SUB_SHARE)
    rels: list[str] = []
    tags: dict[str, dict] = {}
    t0 = time.perf_counter()
    for i in range(n):
        if i < n_sub:
            rel = f"{SUBFOLDERS[i % len(SUBFOLDERS)]}/note-{i:06d}.md"
        else:
            rel = f"doc-{i:06d}.md"
        target = rng.randint(200, 600)
        text = f"# Document {i}\n\n{paras[i % len(paras)]} {paras[(i * 7 + 3) % len(paras)]}"
        data = text.encode()[:target]
        with open(os.path.join(docs, rel), "wb") as fh:
            fh.write(data)
        rels.append(rel)
        if rng.random() < TAG_SHARE:
            entry: dict = {"tags": rng.sample(WORDS, 2)}
            if rng.random() < 0.5:
                entry["priority"] = rng.randint(1, 5)
            tags[rel] = entry
    (docs / ".metatags.json").write_text(json.dumps(tags))
    return {"root": root, "docs": docs, "files": rels, "n": n, "top_level": n - n_sub,
            "generate_s": time.perf_counter() - t0}


class SlateCache:
    """Generated slates of this run, by size, under one temp dir removed at the end."""

    def __init__(self) -> None:
        self.base = Path(tempfile.mkdtemp(prefix="ladr-engine-bench-"))
        self._slates: dict[int, dict] = {}

    def get(self, n: int) -> dict:
        if n not in self._slates:
            self._slates[n] = generate_slate(self.base / f"slate-{n}", n)
        return self._slates[n]

    def drop(self, n: int) -> None:
        s = self._slates.pop(n, None)
        if s is not None:
            shutil.rmtree(s["root"], ignore_errors=True)

    def close(self) -> None:
        shutil.rmtree(self.base, ignore_errors=True)


# --- the unavoidable work ----------------------------------------------------------------------------
def list_folder(path: str) -> list[tuple[str, int]]:
    """Every non-hidden entry below `path` with its size: scandir walk + one stat per file."""
    out: list[tuple[str, int]] = []
    stack = [path]
    while stack:
        p = stack.pop()
        with os.scandir(p) as it:
            for e in it:
                if e.name.startswith("."):
                    continue
                if e.is_dir(follow_symlinks=False):
                    stack.append(e.path)
                else:
                    out.append((e.path, e.stat(follow_symlinks=False).st_size))
    return out


def list_top(path: str) -> list[tuple[str, int]]:
    """Only the folder's direct entries (for reference: the index without subfolder totals)."""
    with os.scandir(path) as it:
        return [(e.name, e.stat(follow_symlinks=False).st_size) for e in it if not e.name.startswith(".")]


def unavoidable_round(docs: str, rels: list[str]) -> float:
    t0 = time.perf_counter()
    list_folder(docs)
    for rel in rels:
        with open(os.path.join(docs, rel), "rb") as fh:
            fh.read()
    return time.perf_counter() - t0


def time_top_listing(docs: str) -> float:
    t0 = time.perf_counter()
    list_top(docs)
    return time.perf_counter() - t0


# --- runtime rounds ----------------------------------------------------------------------------------
def round_plan(slate: dict, rep: int) -> list[list[str]]:
    """R rounds of 5 distinct existing files, all different, a mix of top-level and subfolder files."""
    rng = random.Random(1000 + slate["n"] * 10 + rep)
    need = ROUNDS * FILES_PER_ROUND
    picks = rng.sample(slate["files"], min(need, len(slate["files"])))
    return [picks[i * FILES_PER_ROUND:(i + 1) * FILES_PER_ROUND] for i in range(ROUNDS)]


def make_model(ScriptedModel, plan: list[list[str]]):
    def answer(messages, **hints):
        r = hints.get("round") or 0
        if not hints.get("forced_final") and 1 <= r <= len(plan):
            return json.dumps({"request": {"files": plan[r - 1]}})
        return "Final answer: the documents agree."
    return ScriptedModel(answer)


def timed_run(Run, ladder, model, *, slates=None, store=None) -> tuple[object, list[float], float]:
    t0 = time.perf_counter()
    run = Run(ladder, model=model, input="What do the documents say about latency?",
              slates=slates, store=store)
    construct = time.perf_counter() - t0
    steps: list[float] = []
    while not run.done:
        t0 = time.perf_counter()
        run.step()
        steps.append(time.perf_counter() - t0)
        if len(steps) > ROUNDS + 5:
            raise RuntimeError("run did not end after maxRounds + 1 calls")
    return run, steps, construct


def check_run(run, plan: list[list[str]]) -> int:
    """The run must have made R retrieval rounds of 5 fetched files then one final call; returns prompt chars."""
    calls = run.trace.calls()
    if run.status != "completed" or len(calls) != ROUNDS + 1:
        raise RuntimeError(f"unexpected run: status={run.status} calls={len(calls)} error={run.error}")
    for k, call in enumerate(calls[:ROUNDS]):
        got = [(f.path, f.status) for f in call.fetched]
        if got != [(p, "fetched") for p in plan[k]]:
            raise RuntimeError(f"round {k + 1} fetched {got}, expected {plan[k]}")
    return max(len(m["content"]) for c in calls for m in c.messages)


def pct(values: list[float], q: float) -> float:
    xs = sorted(values)
    if not xs:
        return float("nan")
    pos = (len(xs) - 1) * q
    lo = int(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def bench_rounds(libs, ladder, slate: dict, reps: int) -> dict:
    _, Run, ScriptedModel, _ = libs
    docs = str(slate["docs"])
    cold = None
    warm: list[float] = []
    warm_first: list[float] = []
    final_steps: list[float] = []
    unavoid: list[float] = []
    top_only: list[float] = []
    constructs: list[float] = []
    per_run: list[dict] = []
    store = None
    prompt_chars = 0
    for rep in range(reps):
        plan = round_plan(slate, rep)
        gc.collect()
        # unavoidable work of each round of this run, measured right before it
        u = [unavoidable_round(docs, files) for files in plan]
        unavoid.extend(u)
        top_only.append(time_top_listing(docs))
        model = make_model(ScriptedModel, plan)
        if store is None:  # the documented way: the Run builds its own store, cold
            run, steps, construct = timed_run(Run, ladder, model, slates={"Knowledge": slate["root"]})
            store = run.store
            cold = steps[0]
            warm.extend(steps[1:ROUNDS])
        else:              # later runs share the store: warm index cache
            run, steps, construct = timed_run(Run, ladder, model, store=store)
            warm.extend(steps[:ROUNDS])
            warm_first.append(steps[0])
        final_steps.append(steps[ROUNDS])
        constructs.append(construct)
        prompt_chars = check_run(run, plan)
        per_run.append({"steps_ms": [round(s * 1e3, 4) for s in steps], "unavoidable_ms": [round(x * 1e3, 4) for x in u],
                        "construct_ms": round(construct * 1e3, 4), "cold": rep == 0})
        del run, model
    unavoid_med = statistics.median(unavoid)
    warm_med = statistics.median(warm)
    return {
        "files": slate["n"], "top_level_files": slate["top_level"], "reps": reps, "rounds_per_run": ROUNDS,
        "files_per_round": FILES_PER_ROUND, "max_prompt_chars": prompt_chars,
        "cold_round_ms": cold * 1e3,
        "warm_round_median_ms": warm_med * 1e3,
        "warm_round_p90_ms": pct(warm, 0.9) * 1e3,
        "warm_round_min_ms": min(warm) * 1e3,
        "warm_first_round_median_ms": statistics.median(warm_first) * 1e3 if warm_first else None,
        "warm_round_samples": len(warm),
        "final_call_step_median_ms": statistics.median(final_steps) * 1e3,
        "run_construct_median_ms": statistics.median(constructs) * 1e3,
        "unavoidable_median_ms": unavoid_med * 1e3,
        "unavoidable_p90_ms": pct(unavoid, 0.9) * 1e3,
        "top_level_listing_median_ms": statistics.median(top_only) * 1e3,
        "ratio_warm": warm_med / unavoid_med,
        "ratio_cold": cold / unavoid_med,
        "runs": per_run,
    }


# --- index after write vs rescan ----------------------------------------------------------------------
def bench_index(libs, slate: dict) -> dict:
    SlateStore = libs[3]
    from ladr_lab.slate import FolderSpec

    def fresh_folder():
        store = SlateStore()
        store.bind("Knowledge", slate["root"], [FolderSpec(name="docs")])
        return store.slate("Knowledge").folder("docs")

    folder = fresh_folder()
    folder.index()                                        # warm the cache
    folder.write_text("bench-warmup.md", "warm-up write (creates .ladr/)\n")
    folder.index()
    after_write: list[float] = []
    writes: list[float] = []
    for i in range(INDEX_PAIRS):
        rel = f"bench-write-{i:03d}.md" if i % 2 == 0 else f"{SUBFOLDERS[i % len(SUBFOLDERS)]}/bench-write-{i:03d}.md"
        t0 = time.perf_counter()
        folder.write_text(rel, f"benchmark write {i}\n" * 12)
        writes.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        idx = folder.index()
        after_write.append(time.perf_counter() - t0)
        if i % 2 == 0 and not any(e["name"] == rel for e in idx):
            raise RuntimeError(f"index() after writing {rel} does not list it")
    incremental = [dict(e) for e in folder.index()]
    rescans: list[float] = []
    for _ in range(RESCANS):
        gc.collect()
        t0 = time.perf_counter()
        folder.refresh()
        idx = folder.index()
        rescans.append(time.perf_counter() - t0)
    if [dict(e) for e in idx] != incremental:
        raise RuntimeError("the index kept up to date by writes differs from a rescan")
    fresh: list[float] = []
    for _ in range(FRESH_STORE_RESCANS):
        gc.collect()
        t0 = time.perf_counter()
        fresh_folder().index()
        fresh.append(time.perf_counter() - t0)
    aw, rs = statistics.median(after_write), statistics.median(rescans)
    return {
        "files": slate["n"] + INDEX_PAIRS + 1, "pairs": INDEX_PAIRS, "rescans": RESCANS,
        "index_entries": len(incremental),
        "after_write_index_median_ms": aw * 1e3,
        "after_write_index_p90_ms": pct(after_write, 0.9) * 1e3,
        "write_text_median_ms": statistics.median(writes) * 1e3,
        "rescan_median_ms": rs * 1e3,
        "fresh_store_index_median_ms": statistics.median(fresh) * 1e3,
        "speedup": rs / aw,
    }


# --- profile ------------------------------------------------------------------------------------------
def profile_runs(libs, ladder, slate: dict, runs: int = 3, top: int = 25) -> str:
    """cProfile of the cold first round (a Run building its own store) and of `runs` warm runs."""
    _, Run, ScriptedModel, _ = libs
    buf = io.StringIO()

    def dump(prof: cProfile.Profile, title: str) -> None:
        st = pstats.Stats(prof, stream=buf).strip_dirs()
        buf.write(f"=== {title}: by cumtime\n")
        st.sort_stats("cumulative").print_stats(top)
        buf.write(f"=== {title}: by tottime\n")
        st.sort_stats("tottime").print_stats(top)

    first = Run(ladder, model=make_model(ScriptedModel, round_plan(slate, 99)), input="q",
                slates={"Knowledge": slate["root"]})
    prof = cProfile.Profile()
    prof.enable()
    first.step()
    prof.disable()
    dump(prof, f"cold first round at {slate['n']:,} files")
    first.run()
    store = first.store
    prof = cProfile.Profile()
    for rep in range(runs):
        run = Run(ladder, model=make_model(ScriptedModel, round_plan(slate, 100 + rep)), input="q", store=store)
        prof.enable()
        while not run.done:
            run.step()
        prof.disable()
    dump(prof, f"{runs} warm runs ({runs * (ROUNDS + 1)} steps) at {slate['n']:,} files")
    return buf.getvalue()


# --- reporting ----------------------------------------------------------------------------------------
def machine_info() -> dict:
    def git(*args):
        try:
            return subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True, timeout=10).stdout.rstrip("\n")
        except Exception:
            return None
    dirty = git("status", "--porcelain", "--", "ladr_lab")
    return {
        "python": sys.version.split()[0], "implementation": platform.python_implementation(),
        "platform": platform.platform(), "machine": platform.machine(), "processor": platform.processor(),
        "cpu_count": os.cpu_count(),
        "affinity_cpus": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "timestamp": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "git_commit": git("rev-parse", "HEAD"), "ladr_lab_dirty": bool(dirty),
        "ladr_lab_dirty_files": dirty.splitlines() if dirty else [],
        "tempdir": tempfile.gettempdir(),
    }


def fmt(x, nd=2) -> str:
    if x is None:
        return "-"
    return f"{x:,.{nd}f}"


def print_tables(rounds: list[dict], index: list[dict], gens: dict) -> None:
    print()
    print(f"Retrieve rounds (R={ROUNDS}, {FILES_PER_ROUND} files/round, zero-latency scripted model; ms)")
    hdr = (f"{'files':>9} {'gen s':>6} {'reps':>4} {'cold round':>11} {'warm median':>12} {'warm p90':>9} "
           f"{'unavoidable':>12} {'ratio':>7} {'cold ratio':>10} {'prompt chars':>13}")
    print(hdr)
    print("-" * len(hdr))
    for r in rounds:
        print(f"{r['files']:>9,} {gens.get(r['files'], 0):>6.1f} {r['reps']:>4} {fmt(r['cold_round_ms']):>11} "
              f"{fmt(r['warm_round_median_ms']):>12} {fmt(r['warm_round_p90_ms']):>9} "
              f"{fmt(r['unavoidable_median_ms']):>12} {fmt(r['ratio_warm']):>6}x {fmt(r['ratio_cold']):>9}x "
              f"{r['max_prompt_chars']:>13,}")
    print()
    print(f"Index read after one write_text vs full rescan (warm store; median of {INDEX_PAIRS} / {RESCANS}; ms)")
    hdr = (f"{'files':>9} {'after-write index':>18} {'p90':>7} {'rescan':>9} {'fresh store':>12} "
           f"{'speedup':>9} {'write_text':>11}")
    print(hdr)
    print("-" * len(hdr))
    for x in index:
        print(f"{x['files']:>9,} {fmt(x['after_write_index_median_ms'], 3):>18} {fmt(x['after_write_index_p90_ms'], 3):>7} "
              f"{fmt(x['rescan_median_ms']):>9} {fmt(x['fresh_store_index_median_ms']):>12} "
              f"{fmt(x['speedup'], 1):>8}x {fmt(x['write_text_median_ms'], 3):>11}")
    print()


def verdicts(rounds: list[dict], index: list[dict]) -> dict:
    out = {}
    r = next((x for x in rounds if x["files"] == ROUND_TARGET_SIZE), None)
    if r is None:
        out["round_overhead"] = {"status": "NOT MEASURED", "target": f"ratio <= {ROUND_TARGET} at {ROUND_TARGET_SIZE:,}"}
    else:
        ok = r["ratio_warm"] <= ROUND_TARGET
        out["round_overhead"] = {"status": "PASS" if ok else "FAIL", "ratio": r["ratio_warm"],
                                 "target": f"warm round median / unavoidable <= {ROUND_TARGET} at {ROUND_TARGET_SIZE:,} files"}
    x = next((i for i in index if i["files"] - INDEX_PAIRS - 1 == INDEX_TARGET_SIZE), None)
    if x is None:
        out["index_after_write"] = {"status": "NOT MEASURED", "target": f"speedup >= {INDEX_TARGET} at {INDEX_TARGET_SIZE:,}"}
    else:
        ok = x["speedup"] >= INDEX_TARGET
        out["index_after_write"] = {"status": "PASS" if ok else "FAIL", "speedup": x["speedup"],
                                    "target": f"rescan / after-write index >= {INDEX_TARGET} at {INDEX_TARGET_SIZE:,} files"}
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="slates of 100 and 10,000 files only")
    ap.add_argument("--sizes", help="comma-separated slate sizes, e.g. 100,10000")
    ap.add_argument("--reps", type=int, help="runs per size (default: 5, or 3 from 50,000 files)")
    ap.add_argument("--profile", type=int, metavar="SIZE",
                    help="also cProfile the cold round and warm runs at this size (saved to results/)")
    ap.add_argument("--out", help="results JSON (default benchmarks/results/engine.json for the default sizes)")
    args = ap.parse_args(argv)
    if args.sizes:
        sizes = tuple(int(s.replace("_", "")) for s in args.sizes.split(",") if s.strip())
    else:
        sizes = QUICK_SIZES if args.quick else DEFAULT_SIZES
    if args.profile and args.profile not in sizes:
        sizes = tuple(sorted(set(sizes) | {args.profile}))
    if any(n < ROUNDS * FILES_PER_ROUND for n in sizes):
        ap.error(f"every size must be at least {ROUNDS * FILES_PER_ROUND} files")
    out_path = Path(args.out) if args.out else RESULTS / (
        "engine.json" if sizes == DEFAULT_SIZES else f"engine-{'-'.join(map(str, sizes))}.json")

    libs = import_ladr()
    load_ladder_text = libs[0]
    ladder = load_ladder_text(LADDER % (ROUNDS, json.dumps(REQUEST_SCHEMA)))
    info = machine_info()
    try:  # listings kept current by inotify, or by the re-stat fallback (LADR_SLATE_WATCH=0)?
        from ladr_lab.slate.watch import get_hub
        info["slate_notifications"] = get_hub().available
    except ImportError:  # a ladr_lab from before notifications
        info["slate_notifications"] = None
    print(f"ladr_lab engine benchmark — Python {info['python']} on {info['platform']}, {info['cpu_count']} CPUs"
          + (" (ladr_lab/ has uncommitted changes)" if info["ladr_lab_dirty"] else "")
          + {True: "; slate listings: inotify", False: "; slate listings: re-stat", None: ""}[info["slate_notifications"]])
    cache = SlateCache()
    rounds: list[dict] = []
    index: list[dict] = []
    gens: dict[int, float] = {}
    profile_text = None
    started = time.perf_counter()
    try:
        for n in sizes:
            slate = cache.get(n)
            gens[n] = slate["generate_s"]
            print(f"[{n:,} files] generated in {slate['generate_s']:.1f}s; timing rounds...", flush=True)
            reps = args.reps or (3 if n >= 50_000 else 5)
            rounds.append(bench_rounds(libs, ladder, slate, reps))
            rounds[-1]["generate_s"] = slate["generate_s"]
            if args.profile == n:
                print(f"[{n:,} files] profiling cold round and warm runs...", flush=True)
                profile_text = profile_runs(libs, ladder, slate)
            print(f"[{n:,} files] timing index after write vs rescan...", flush=True)
            index.append(bench_index(libs, slate))  # last: it adds files to the slate
            cache.drop(n)
    finally:
        cache.close()
    total = time.perf_counter() - started
    print_tables(rounds, index, gens)
    v = verdicts(rounds, index)
    for name, res in v.items():
        val = res.get("ratio", res.get("speedup"))
        print(f"{res['status']:>12}  {name}: {res['target']}" + (f" (measured {val:.2f}x)" if val is not None else ""))
    print(f"\ntotal benchmark time {total:.1f}s")
    result = {"benchmark": "engine", "machine": info, "settings": {
        "sizes": list(sizes), "rounds": ROUNDS, "files_per_round": FILES_PER_ROUND, "subfolders": list(SUBFOLDERS),
        "subfolder_share": SUB_SHARE, "tag_share": TAG_SHARE, "index_pairs": INDEX_PAIRS, "rescans": RESCANS},
        "rounds": rounds, "index": index, "verdicts": v, "total_s": total}
    out_path.parent.mkdir(parents=True, exist_ok=True)
    if profile_text:
        prof_path = out_path.with_name(f"engine-profile-{args.profile}.txt")
        prof_path.write_text(profile_text)
        result["profile_file"] = prof_path.name
        print(f"profile written to {prof_path}")
    out_path.write_text(json.dumps(result, indent=2) + "\n")
    print(f"results written to {out_path.relative_to(REPO) if out_path.is_relative_to(REPO) else out_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
