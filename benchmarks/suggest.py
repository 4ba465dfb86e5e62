"""requestMatch suggestion benchmark (issue 32): how fast a suggestion is, and how good, on the recorded data sets.

    python benchmarks/suggest.py [--outputs 1000] [--repeat 5] [--data notebooks/recorded/tuning] [--no-data]

1. Speed: `suggest_request_match` over `--outputs` distinct synthetic outputs (bare and wrapped requests with 1-4
   paths and a topK, JSON answers, fenced JSON, prose), every one labelled, no cross-validation (`folds=0`), and with
   5 folds. cold: the first suggestion in the process (jsonschema imported before, outside the timing); warm: the
   next, after one label changed (what a click in the TuningView asks). Target: warm under 1 s at 1,000 outputs.
2. Quality, per recorded data set (a folder of traces with its labels.csv, from notebooks/recorded/tuning/): the F1
   of the examples' hand-written requestMatch schemas (research_small, research, pitfall_loose, pitfall_tight), of
   the suggestion (on all the labels, and cross-validated over 5 folds: each fold's schema fitted without the labels
   it is judged on), and of genson's schema inferred from the request-labelled outputs' JSON (the positive-only
   baseline), all scored by `tune_request_match` the same way.
3. Labels needed: labelling from nothing, one output at a time, until the schema suggested from the labels so far
   reaches the full-label suggestion's F1 on all the labels: in the order `next_to_label` proposes (`--next`) vs in
   the data set's own order (row, then round).

Prints a table; writes benchmarks/results/suggest.json.
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
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ladr_lab import load_labels, suggest_request_match, tune_request_match  # noqa: E402
from ladr_lab.analysis.suggest import genson_schema  # noqa: E402
from ladr_lab.config import load_ladder  # noqa: E402
from ladr_lab.round.verdict import extraction  # noqa: E402
from ladr_lab.trace import LlmCall, RunStart, Trace  # noqa: E402

EXAMPLES = ["research_small.yaml", "research.yaml", "pitfall_loose.yaml", "pitfall_tight.yaml"]


def synthetic(n: int) -> tuple[list[tuple[str, Trace]], dict]:
    """`n` distinct outputs over n/2 rows of two rounds, labelled."""
    rnd = random.Random(11)
    traces, labels = [], {}
    for i in range(n // 2):
        t = Trace()
        t.emit(RunStart(ladder="bench", model="script", inputs={"context": f"q{i}"}, budget={}))
        paths = [f"d{rnd.randint(0, 40)}/f{i}.md" for _ in range(rnd.randint(1, 4))]
        req = rnd.choice([{"files": paths}, {"request": {"files": paths}, "topK": rnd.randint(1, 8)},
                          {"request": {"glob": f"d{i}/*.md"}}, {"files": paths, "glob": "x/*.md"}])
        request = json.dumps(req) if rnd.random() < 0.7 else f"```json\n{json.dumps(req)}\n```"
        answer = rnd.choice([f"Answer {i}: the handbook says dedup runs per round [{paths[0]}].",
                             json.dumps({"answer": f"a{i}", "source": paths[0]}),
                             f"Here:\n```json\n{{\"result\": {i}, \"files\": [\"{paths[0]}\"]}}\n```"])
        for n_, (text, verdict, lab) in enumerate([(request, "retrieval", "request"), (answer, "final", "answer")], 1):
            t.emit(LlmCall(step="research", node=1, round=n_, iteration=1, messages=[], output=text,
                           forced_final=False, request_match=verdict, model="script"))
            labels[(f"r{i}", "research", n_)] = lab
        traces.append((f"r{i}", t))
    return traces, labels


def timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return (time.perf_counter() - t0) * 1000


def speed(n: int, repeat: int) -> dict:
    traces, labels = synthetic(n)
    tune_request_match(traces[:2], {"x": {"type": "object"}})           # imports jsonschema outside the timings
    samples: dict[str, list[float]] = {"cold": [], "warm": [], "warm_cv5": []}
    import ladr_lab.analysis.suggest as sug
    for k in range(repeat):
        sug._SCHEMAS.clear()
        sug._JUDGE = type(sug._JUDGE)()
        extraction.cache_clear()
        samples["cold"].append(timed(lambda: suggest_request_match(traces, labels=labels, folds=0)))
        labels[("r0", "research", 2)] = "request" if k % 2 == 0 else "answer"        # one label changed
        samples["warm"].append(timed(lambda: suggest_request_match(traces, labels=labels, folds=0)))
        samples["warm_cv5"].append(timed(lambda: suggest_request_match(traces, labels=labels, folds=5)))
    return {name: {"best_ms": round(min(xs), 1), "median_ms": round(statistics.median(xs), 1)}
            for name, xs in samples.items()}


def _f1(t, name: str) -> float | None:
    r = next(r for r in t.score_rows() if r["variant"] == name)
    return None if r["f1"] != r["f1"] else round(r["f1"], 3)


def _reach(base, labels: dict, order: list, target: float | None, active: bool, limit: int) -> int | None:
    """Labels given one at a time (in `order`, or as next_to_label proposes: from nothing, its first pick too)
    until the suggestion from them reaches `target` F1 on all the labels; None when it never does within `limit`.
    `base`: the data set's SchemaTuning without labels (read once)."""
    if target is None:
        return None
    from ladr_lab import SchemaTuning
    scored = SchemaTuning(base.outputs, {"recorded": base.verdicts["recorded"]}, dict(labels))
    given: dict = {}
    remaining = list(order)
    s = suggest_request_match(base, labels={}, folds=0)
    for n in range(1, min(limit, len(order)) + 1):
        pick = None
        if active:
            picks = [o.key for o in s.next_to_label(len(remaining)) if o.key in labels and o.key not in given]
            pick = picks[0] if picks else None
        pick = pick or remaining[0]
        remaining.remove(pick)
        given[pick] = labels[pick]
        s = suggest_request_match(base, labels=given, folds=0)
        if s.schema is None:
            continue
        scored.add_variant("s", s.schema)
        got = _f1(scored, "s")
        if got is not None and got >= target - 1e-9:
            return n
    return None


def quality(folder: Any, limit: int, labels: dict | None = None, name: str | None = None) -> dict:
    labels = load_labels(folder / "labels.csv") if labels is None else labels
    from ladr_lab.analysis.labels import to_labels
    labels = to_labels(labels)
    hand = {Path(e).stem: load_ladder(ROOT / "examples" / e).step(
        "research").retrieve.request_match for e in EXAMPLES}
    s = suggest_request_match(folder, labels=labels, folds=5)
    t = tune_request_match(folder, hand, labels=labels)
    base = tune_request_match(folder, {}, labels=labels)
    values = [extraction(o.output).value for o in base.outputs
              if labels.get(o.key) == "request" and extraction(o.output).found]
    gen = genson_schema(values) if values else None
    variants = {**hand, **({"genson": gen} if gen else {}), **({"suggested": s.schema} if s.schema else {})}
    t = tune_request_match(folder, variants, labels=labels)
    target = _f1(t, "suggested") if s.schema else None
    order = [o.key for o in base.outputs if o.key in labels]
    unlabelled = tune_request_match(folder, {})
    counts = {"request": sum(v == "request" for v in labels.values()),
              "answer": sum(v == "answer" for v in labels.values())}
    cv = s.cross_validated() if s.folds else None
    return {"data_set": name or folder.name, "outputs": len(base.outputs), "labels": counts,
            "unreachable_requests": len(s.unreachable), "collisions": len(s.collisions),
            "hand_written_f1": {k: _f1(t, k) for k in hand}, "recorded_f1": _f1(t, "recorded"),
            "suggested_f1": target, "suggested_schema": s.schema,
            "suggested_cv_f1": None if cv is None or cv["f1"] != cv["f1"] else round(cv["f1"], 3),
            "fold_f1": [None if f.f1 != f.f1 else round(f.f1, 3) for f in s.folds],
            "genson_f1": _f1(t, "genson") if gen else None, "genson_schema": gen,
            "labels_needed_next": _reach(unlabelled, labels, order, target, True, limit),
            "labels_needed_in_order": _reach(unlabelled, labels, order, target, False, limit)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--outputs", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--data", type=Path, default=ROOT / "notebooks" / "recorded" / "tuning")
    ap.add_argument("--no-data", action="store_true", help="only the speed")
    ap.add_argument("--limit", type=int, default=400, help="at most this many labels in the labels-needed runs")
    ap.add_argument("--out", type=Path, help="results JSON (default benchmarks/results/suggest.json)")
    a = ap.parse_args()
    sp = speed(a.outputs, a.repeat)
    print(f"suggest over {a.outputs} labelled outputs (best / median of {a.repeat}, ms)")
    for name, r in sp.items():
        print(f"  {name:<9} {r['best_ms']:>9.1f} {r['median_ms']:>9.1f}")
    ok = sp["warm"]["median_ms"] < 1000
    print(f"target (warm under 1 s at 1,000 outputs, median): {'met' if ok else 'NOT met'}")
    sets = []
    if not a.no_data and a.data.is_dir():
        for folder in sorted(p for p in a.data.iterdir() if (p / "labels.csv").is_file()):
            sets.append(quality(folder, a.limit))
    if not a.no_data:           # a synthetic set whose JSON answers carry `files` too: a key set must separate them
        traces, labels = synthetic(200)
        sets.append(quality(traces, a.limit, labels, "synthetic-200"))
    if sets:
        names = list(sets[0]["hand_written_f1"])
        head = f"{'data set':<24} {'out':>4} {'req':>4} {'unr':>4} " + " ".join(f"{n[:13]:>13}" for n in names) + \
            f" {'genson':>7} {'suggested':>9} {'cv':>5} {'--next':>6} {'order':>6}"
        print("\nF1 on all the labels (cv: suggested, cross-validated over 5 folds); labels needed to reach "
              "the full-label suggestion's F1")
        print(head)

        def f(x):
            return "-" if x is None else f"{x:.2f}"
        for r in sets:
            print(f"{r['data_set']:<24} {r['outputs']:>4} {r['labels']['request']:>4} "
                  f"{r['unreachable_requests']:>4} " + " ".join(f"{f(r['hand_written_f1'][n]):>13}" for n in names)
                  + f" {f(r['genson_f1']):>7} {f(r['suggested_f1']):>9} {f(r['suggested_cv_f1']):>5} "
                  f"{str(r['labels_needed_next'] or '-'):>6} {str(r['labels_needed_in_order'] or '-'):>6}")
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                                text=True).stdout.strip()
    except OSError:
        commit = None
    out = {"outputs": a.outputs, "repeat": a.repeat, "speed": sp, "targets_met": ok, "data_sets": sets,
           "python": platform.python_version(), "platform": platform.platform(), "cpus": os.cpu_count(),
           "commit": commit, "timestamp": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    dest = a.out or ROOT / "benchmarks" / "results" / "suggest.json"
    dest.write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
