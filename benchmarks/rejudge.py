"""Re-judge benchmark: 1,000 recorded outputs re-judged against an edited requestMatch, side by side with
the bare work (extracting the JSON with jsonx.extract and validating it with a compiled jsonschema
validator's is_valid).

    python benchmarks/rejudge.py [--n 1000] [--repeat 9]

The outputs are all distinct (no help from caching equal outputs): a quarter wrapped requests, a
quarter prose final answers, a quarter fenced JSON inside prose, a quarter near misses (a string where
a list is wanted, a misspelt mode, the bare form, an extra key). They are recorded as the `llm_call`
events of one execution of a retrieve step with 1,000 one-round nodes, judged by the engine against the original
schema, so no output comes after a flip (re-judging leaves rounds after a flip unknown and does not validate them:
`--rounds-per-node 10` shows that shape, which is faster).
The edited schema adds `maxItems: 2` to `files` and `minLength: 3` to `glob`, so some rounds flip; it is a
new object with new content (a `$comment`) at every call, as an editor's keystrokes make, so its compiled
validator is never reused from an earlier call.

Timed (best and median of --repeat, milliseconds; and the median ratio to the bare run made just before,
which cancels the load drift of a shared machine):
- bare: extract + is_valid for each output (validator compiled outside the timing);
- rejudge cold: `rejudge_rows(trace, {step: edited})` with the extraction cache emptied first, so every
  output is extracted again (the first re-judge of a trace);
- rejudge warm: the same with the outputs already extracted once (the next keystroke of a schema editor);
  a new schema object each time, so its metaschema check and validator are built again;
- rejudge DataFrame: `rejudge(...)`, the pandas DataFrame the API returns, warm;
- (schema check alone): the edited schema checked against its metaschema (`config.keywords.schema_ok`:
  subschema by subschema, each result cached, so an edit re-checks only what it changed), a fixed cost per
  edit that the cold and warm figures include.

Writes benchmarks/results/rejudge.json.
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

from ladr_lab.analysis import rejudge, rejudge_rows  # noqa: E402
from ladr_lab.jsonx import extract  # noqa: E402
from ladr_lab.round.verdict import judge, validator  # noqa: E402
from ladr_lab.trace import LlmCall, StepEnd, StepStart, Trace  # noqa: E402

SCHEMA = {
    "type": "object", "required": ["request"], "additionalProperties": False,
    "properties": {"request": {"type": "object", "minProperties": 1, "additionalProperties": False, "properties": {
        "files": {"type": "array", "items": {"type": "string"}},
        "subfolders": {"type": "array", "items": {"type": "string"}},
        "metatag": {"type": "object", "required": ["name"], "properties": {
            "name": {"type": "string"}, "contains": {"type": "string"}, "similarTo": {"type": "string"}}},
        "glob": {"type": "string"}}},
        "topK": {"type": "integer", "minimum": 1, "maximum": 8}},
}


_EDIT = [0]


def edited_schema() -> dict:
    """The edited schema, a new object with new content each time (as each keystroke of an editor makes)."""
    _EDIT[0] += 1
    s = copy.deepcopy(SCHEMA)
    s["$comment"] = f"edit {_EDIT[0]}"
    s["properties"]["request"]["properties"]["files"]["maxItems"] = 2
    s["properties"]["request"]["properties"]["glob"]["minLength"] = 3
    return s


WORDS = ("retrieval", "dedup", "round", "slate", "gate", "write", "schema", "index", "folder", "answer")


def outputs(n: int, seed: int = 7) -> list[str]:
    rnd = random.Random(seed)
    out = []
    for i in range(n):
        files = [f"docs/{rnd.choice(WORDS)}-{i}-{k}.md" for k in range(rnd.randint(1, 4))]
        kind = i % 4
        if kind == 0:
            req = rnd.choice([{"files": files}, {"glob": f"n{i}*.md"}, {"subfolders": [f"sub{i}"]},
                              {"metatag": {"name": "tags", "contains": f"{rnd.choice(WORDS)} {i}"}},
                              {"files": files[:1]}, {"glob": "*"}])
            body = {"request": req}
            if rnd.random() < 0.2:
                body["topK"] = rnd.randint(1, 8)
            out.append(json.dumps(body))
        elif kind == 1:
            sentences = " ".join(f"The {rnd.choice(WORDS)} of step {i} follows from {rnd.choice(WORDS)}."
                                 for _ in range(rnd.randint(3, 25)))
            out.append(sentences + f" See [{files[0]}].")
        elif kind == 2:
            out.append(f"I need more context for question {i}.\n```json\n"
                       + json.dumps({"request": {"files": files}}, indent=2) + "\n```\n")
        else:
            miss = rnd.choice([{"request": {"files": files[0]}}, {"request": {"file": files}},
                               {"files": files}, {"request": {"files": files}, "answer": f"draft {i}"}])
            out.append("Requesting: " + json.dumps(miss))
    return out


def recorded_trace(texts: list[str], per_exec: int = 1) -> Trace:
    """One step execution of len(texts) // per_exec nodes, per_exec rounds each. With one round per node (the
    default) no output comes after a flip in its own node or upstream, so every output is re-judged: the
    measure of judging cost. With more rounds per node, the rounds after a flip are unknown and not
    judged (`--rounds-per-node`)."""
    t = Trace()
    seq = 0

    def add(e):
        nonlocal seq
        t.events.append(type(e)(**{**{f: getattr(e, f) for f in e.own_fields()}, "seq": seq}))
        seq += 1
    add(StepStart(step="research", step_type="normal", nodes=len(texts) // per_exec))
    for start in range(0, len(texts), per_exec):
        node = start // per_exec + 1
        for k, text in enumerate(texts[start:start + per_exec], 1):
            v = judge(text, SCHEMA)
            add(LlmCall(step="research", node=node, round=k, iteration=1, messages=[], output=text,
                        forced_final=False, request_match="retrieval" if v.is_request else "final", model="bench",
                        reason=v.reason, request=v.request if v.is_request else None, verdict=v.judgement))
    add(StepEnd(step="research", survivors=len(texts) // per_exec, nodes=len(texts) // per_exec, jump=None))
    return t


def timed(fn, repeat: int) -> list[float]:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1000)
    return times


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=9)
    ap.add_argument("--rounds-per-node", type=int, default=1,
                    help="1 (default): every output is judged; more: rounds after a flip are unknown, not judged")
    a = ap.parse_args()
    texts = outputs(a.n)
    trace = recorded_trace(texts, a.rounds_per_node)
    verdict_module = importlib.import_module("ladr_lab.round.verdict")     # its `extraction` cache
    compiled = validator(copy.deepcopy(edited_schema()))

    def bare():
        for text in texts:
            ext = extract(text)
            if ext.found:
                compiled.is_valid(ext.value)

    def cold():
        rejudge_rows(trace, {"research": edited_schema()})

    def warm():
        rejudge_rows(trace, {"research": edited_schema()})

    def frame():
        rejudge(trace, {"research": edited_schema()})

    def schema_check():
        from ladr_lab.config.keywords import schema_ok
        schema_ok(edited_schema())

    warm()  # import jsonschema, pandas and build the metaschema validators once, outside every timing
    frame()
    results = {}
    # interleave the measures so machine noise (2 shared cores) hits them alike
    samples: dict[str, list[float]] = {"bare": [], "rejudge cold": [], "rejudge warm": [], "rejudge DataFrame": [],
                                       "(schema check alone)": []}
    for _ in range(a.repeat):
        samples["bare"] += timed(bare, 1)
        verdict_module.extraction.cache_clear()    # (outside the timing) every output must be extracted again
        samples["rejudge cold"] += timed(cold, 1)
        samples["rejudge warm"] += timed(warm, 1)
        samples["rejudge DataFrame"] += timed(frame, 1)
        samples["(schema check alone)"] += timed(schema_check, 1)
    rows = rejudge_rows(trace, {"research": edited_schema()})
    flips = sum(r["flipped"] for r in rows)
    base = min(samples["bare"])
    print(f"{a.n} recorded outputs ({len(set(texts))} distinct), {flips} flip under the edited schema; "
          f"best and median of {a.repeat}")
    print(f"{'measure':<20} {'best ms':>9} {'median ms':>10} {'x bare (best)':>14} {'x bare (paired)':>16}")
    for name, xs in samples.items():
        best, med = min(xs), statistics.median(xs)
        # the median of the ratios of runs made back to back: load on the 2 shared cores drifts, pairs share it
        paired = statistics.median(x / y for x, y in zip(xs, samples["bare"], strict=True))
        results[name] = {"best_ms": round(best, 2), "median_ms": round(med, 2), "ratio_to_bare": round(best / base, 2),
                         "paired_ratio": round(paired, 2), "all_ms": [round(x, 2) for x in xs]}
        print(f"{name:<20} {best:>9.1f} {med:>10.1f} {best / base:>14.2f} {paired:>16.2f}")
    cold = results["rejudge cold"]
    target_ok = cold["paired_ratio"] <= 1.5 and cold["best_ms"] < 100
    print(f"targets (cold: within 1.5x of bare (paired) and under 100 ms (best)): {'met' if target_ok else 'NOT met'}")
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                                text=True).stdout.strip()
    except OSError:
        commit = None
    out = {"n": a.n, "rounds_per_node": a.rounds_per_node, "distinct": len(set(texts)), "flips": flips,
           "repeat": a.repeat, "results": results,
           "targets_met": target_ok, "python": platform.python_version(), "platform": platform.platform(),
           "cpus": os.cpu_count(), "load_average": list(os.getloadavg()) if hasattr(os, "getloadavg") else None,
           "commit": commit, "timestamp": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    dest = ROOT / "benchmarks" / "results" / "rejudge.json"
    dest.write_text(json.dumps(out, indent=2) + "\n")
    print(f"wrote {dest.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
