#!/usr/bin/env python
"""How fast do the notebook views appear, and how much do they send to the browser, at scale?

    python benchmarks/widgets.py              # a 10,000-file slate, a 1,000-round trace (~1 min on 2 cores)
    python benchmarks/widgets.py --files 2000 --rounds 300 --reps 3

Data: a slate of `--files` files (200–400 bytes each) in 20 subfolders of a `docs` folder (a third of them
tagged with metatags), and a recorded-looking trace of `--rounds` model calls (steps of 5 nodes × 10 rounds,
looping; every 100th round's prompt holds a 400,000-character retrieved block).

What is measured, per view (the median of `--reps` fresh builds):
- **first paint**: building the view plus `_repr_mimebundle_()`, the work the kernel does before the browser
  can draw it (the browser's own drawing is not in this number; see docs/widgets.md for what was seen);
- **sent up front**: every byte the kernel sends for it: the widget models' opening states (recorded at the
  comm layer: `comm.create_comm` is replaced by a recorder, as the `comm` package intends) plus the display
  message's mimebundle (the static HTML fallback included);
- **actions**: opening one step, node or round, a 400,000-character prompt section, the next page, a filter,
  a tree level, a keystroke in the schema editor, a Step click: the time and the bytes sent.
Also the static HTML views (`to_html()`) of the trace, the folder, a run and the ladder.

Targets: first paint < 0.5 s, opening or paging < 0.1 s (a Reset, which is a new run, is a first paint),
nothing sends more than 1 MB up front (PASS / FAIL). The schema editor's re-judge has no target: it costs what
validating each recorded output costs, and runs once typing pauses (the keystroke itself is timed).
Prints a table; writes benchmarks/results/widgets.json.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import platform
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
RESULTS = Path(__file__).resolve().parent / "results"

FIRST_PAINT_S, ACTION_S, UP_FRONT_BYTES = 0.5, 0.1, 1_000_000


# ---- recording what goes to the browser ------------------------------------------------------------------
class Sent:
    """Counts the bytes of every comm message the widgets send (opening states and updates)."""

    bytes = 0
    messages = 0


def _install_recorder() -> None:
    import comm
    from comm.base_comm import BaseComm

    class Recording(BaseComm):
        def publish_msg(self, msg_type, data=None, metadata=None, buffers=None, **keys):  # noqa: D401
            Sent.messages += 1
            Sent.bytes += len(json.dumps(data, default=str)) + sum(len(b) for b in (buffers or ()))

    comm.create_comm = lambda *a, **kw: Recording(*a, **kw)


def _measure(fn):
    """(seconds, bytes sent, result) of `fn()`."""
    b0 = Sent.bytes
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, Sent.bytes - b0, out


def _first_paint(make):
    """Build a view and its display bundle: (seconds, bytes up front, view)."""
    b0 = Sent.bytes
    t0 = time.perf_counter()
    view = make()
    bundle = view._repr_mimebundle_()
    secs = time.perf_counter() - t0
    sent = Sent.bytes - b0 + len(json.dumps(bundle, default=str))
    return secs, sent, view, len(bundle.get("text/html", ""))


# ---- data ---------------------------------------------------------------------------------------------------
def make_slate(root: Path, files: int) -> Path:
    docs = root / "docs"
    rng = random.Random(7)
    words = "retrieve round dedup slate folder metatag glob files subfolders request schema gate write".split()
    tags = {}
    for i in range(files):
        sub = docs / f"dir{i % 20:02d}"
        sub.mkdir(parents=True, exist_ok=True)
        rel = f"dir{i % 20:02d}/note-{i:05d}.md"
        (docs / rel).write_text(" ".join(rng.choice(words) for _ in range(rng.randint(30, 60))))
        if i % 3 == 0:
            tags[rel] = {"tags": [rng.choice(words), rng.choice(words)], "summary": f"note {i}"}
    (docs / ".metatags.json").write_text(json.dumps(tags))
    return root


def make_trace(rounds: int, huge_every: int = 100, huge_chars: int = 400_000, label: str = "a"):
    from ladr_lab.trace import (
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
    t = Trace()

    def add(e):
        t.events.append(dataclasses.replace(e, seq=len(t.events), t=len(t.events) * 0.01))

    add(RunStart(ladder="big", model="script", inputs={"context": label}, budget={}))
    made, iteration, nodes, per_node = 0, 0, 5, 10
    system = "You are a careful researcher. " * 20
    field = "FileIndex:\n" + "- dir00/note-00000.md (300 bytes)\n" * 110
    while made < rounds:
        iteration += 1
        add(StepStart(step="research", step_type="normal", nodes=nodes, iteration=iteration))
        for node in range(1, nodes + 1):
            for r in range(1, per_node + 1):
                if made >= rounds:
                    break
                made += 1
                block = ("Docs 1:\n--- dir00/big.md [files] ---\n" + "lorem ipsum " * (huge_chars // 12)
                         if made % huge_every == 0 else f"Docs 1:\n--- dir00/note-{made:05d}.md [files] ---\nshort")
                user = f"Question:\n{label}\n\n" + field + "\n\n" + block
                final = r == per_node
                add(LlmCall(step="research", node=node, round=r, iteration=iteration,
                            messages=[{"role": "system", "content": system}, {"role": "user", "content": user}],
                            output="The answer." if final else f'{{"request": {{"files": ["dir00/note-{made:05d}.md"]}}}}',
                            forced_final=False, request_match="final" if final else "retrieval", model="script",
                            tokens_in=len(user) // 4, tokens_out=8, cost=0.0001, latency=0.01,
                            reason="JSON found (strict) and it matches requestMatch (wrapped form)",
                            request=None if final else {"files": [f"dir00/note-{made:05d}.md"]},
                            fetched=None if final else (Fetched(path=f"dir00/note-{made:05d}.md", mode="files",
                                                                status="fetched", chars=5),),
                            verdict=Judgement(test="requestMatch", matched=not final), provenance="scripted",
                            sections=[["field", "Question", len(label) + 10], ["field", "FileIndex", len(field)],
                                      ["retrieved", "Docs 1", len(block)]]))
            add(Gate(step="research", node=node, condition="equals", matched=True, branch="then", action="continue",
                     jump=None, reason="output equals 'The answer.'"))
            add(Write(step="research", node=node, mechanism="slateWrite", target="Memory/facts/notes.md",
                      policy="append", status="skipped", reason="no JSON found in the output"))
        add(StepEnd(step="research", survivors=nodes, nodes=nodes, jump=None, iteration=iteration))
    add(RunEnd(status="completed", output="The answer.", error=None, llm_calls=made, steps=iteration))
    return t


LADDER = """name: bench
slates:
  - title: Knowledge
    path: {slate}
    folders:
      - name: docs
        metatags: {{ tags: "string[]", summary: string }}
steps:
  - id: research
    fields:
      - {{ name: Question, type: text, from: input.context }}
      - {{ name: FileIndex, type: slateRead, from: {{ slate: Knowledge, folder: docs, metatag: index }} }}
      - {{ name: FolderTree, type: slateRead, from: {{ slate: Knowledge, folder: docs, metatag: tree, depth: 2 }} }}
    retrieve:
      to: {{ slate: Knowledge, folder: docs }}
      as: RetrievedDocuments
      maxRounds: 3
      requestMatch:
        type: object
        required: [request]
        properties:
          request:
            type: object
            properties:
              files: {{ type: array, items: {{ type: string }} }}
"""


# ---- the measurements ---------------------------------------------------------------------------------------
def bench_views(slate_root: Path, trace, trace_b, ladder, eval_dir: Path, reps: int) -> list[dict]:
    from ladr_lab.models import ScriptedModel
    from ladr_lab.slate import SlateStore
    from ladr_lab.widgets import DiffView, EvaluationView, RequestMatchEditor, SlateView, Stepper, TraceView
    rows: list[dict] = []

    def view_row(name, make, actions):
        paints, sents, statics = [], [], []
        view = None
        for _ in range(reps):
            secs, sent, view, static = _first_paint(make)
            paints.append(secs)
            sents.append(sent)
            statics.append(static)
        row = {"view": name, "first_paint_s": statistics.median(paints), "sent_up_front_bytes": max(sents),
               "static_fallback_bytes": max(statics), "actions": []}
        for label, act, *target in actions:
            secs, sent, _ = _measure(lambda act=act: act(view))
            row["actions"].append({"action": label, "s": secs, "sent_bytes": sent,
                                   "target_s": target[0] if target else ACTION_S})
        rows.append(row)
        return view

    def store():
        s = SlateStore()
        s.bind("Knowledge", slate_root)
        return s

    warm = store()
    warm.slate("Knowledge").folder("docs").file_stats()      # the listing read once (a notebook's store is warm)

    view_row("SlateView (10k files)", lambda: SlateView(warm, slate="Knowledge", folder="docs"), [
        ("next page", lambda v: v.next.click()),
        ("filter 'dir07/note-0'", lambda v: setattr(v.filter, "value", "dir07/note-0")),
        ("preview a file", lambda v: setattr(v.preview_pick, "value", v.preview_pick.options[0])),
        ("open the Tree tab", lambda v: setattr(v.tabs, "selected_index", 1)),
        ("expand a 500-file folder", lambda v: v.tree.children[0].children[0].children[0].click()),
        ("light a round", lambda v: v.light(trace, "research", 1, 1)),
    ])

    def huge_round(v):
        # round 100 of the run (iteration 2, node 5, round 10) has a 400,000-character retrieved block
        return v._round_folds[id(v._rows[((), "research", 2)].bodies[5].rounds.items[-1].event)]

    view_row(f"TraceView ({len(trace.calls()):,} rounds)", lambda: TraceView(trace, live=False), [
        ("open a step", lambda v: v.step_fold("research", 2).set_open(True)),
        ("open a node (10 rounds)", lambda v: v._rows[((), "research", 2)].node_folds[5].set_open(True)),
        ("open a round (400k-char prompt)", lambda v: huge_round(v).set_open(True)),
        ("open its 400k-char section", lambda v: huge_round(v).body.children[-1].children[0].children[0].click()),
        ("show 20k more of it", lambda v: huge_round(v).body.children[-1].children[1].children[0]
         .children[1].click()),
        ("next page of steps", lambda v: v.steps.next.click()),
    ])

    def stepper():
        return Stepper(ladder, input="How does dedup work?",
                       model=ScriptedModel(lambda m, **h: '{"request": {"files": ["dir01/note-00001.md"]}}'
                                           if h["round"] == 1 else "done"))

    from ladr_lab.engine import Run

    def engine_only():
        # the run's own first prompt (fields: a 10,000-file FolderTree), which the Stepper must show
        t0 = time.perf_counter()
        Run(ladder, model=ScriptedModel(lambda m, **h: "done"), input="How does dedup work?").pending  # noqa: B018
        return time.perf_counter() - t0

    engine_s = statistics.median(engine_only() for _ in range(reps))
    view_row("Stepper (10k-file FolderTree field)", stepper, [
        ("Step", lambda v: v.step_button.click()),
        ("open the FolderTree section", lambda v: v.pending_box.children[3].children[0].children[0].click()),
        ("Step (to the end)", lambda v: v.step_button.click()),
        ("Reset (a new run: a first paint)", lambda v: v.reset_button.click(), FIRST_PAINT_S),
        ("open the Slate tab (reads 10k files)", lambda v: setattr(v.tabs, "selected_index", 1)),
    ])
    rows[-1]["engine_first_prompt_s"] = engine_s

    def editor():
        return RequestMatchEditor(ladder, "research", trace=trace)

    flip = "items: { type: string }, maxItems: 0 }"
    view_row(f"RequestMatchEditor ({len(trace.calls()):,} rounds)", editor, [
        ("keystroke (judged when typing pauses)", lambda v: setattr(v.text, "value", v.text.value.replace(
            "items: { type: string } }", flip))),
        ("the re-judge: every round flips", lambda v: v.flush(), None),
        ("keystroke: a syntax error", lambda v: v.set_text(v.text.value + "\n  oops: [")),
        ("keystroke: undo (judged before)", lambda v: v.set_text(v.original_text)),
    ])

    view_row(f"DiffView ({len(trace.calls()):,} vs {len(trace_b.calls()):,} rounds)",
             lambda: DiffView(trace, trace_b), [
                 ("open a row", lambda v: setattr(v.row_pick, "value", 0)),
                 ("all rows", lambda v: setattr(v.only, "value", False)),
                 ("next page", lambda v: v.next.click()),
             ])
    view_row("EvaluationView (1,000 rows)", lambda: EvaluationView(eval_dir), [
        ("next page", lambda v: v.next.click()),
        ("open a row's trace", lambda v: setattr(v.row_pick, "value", v.row_pick.options[1])),
    ])
    return rows


def bench_static(slate_root: Path, trace, ladder) -> list[dict]:
    from ladr_lab.engine import Run
    from ladr_lab.models import ScriptedModel
    from ladr_lab.slate import SlateStore
    store = SlateStore()
    store.bind("Knowledge", slate_root)
    folder = store.slate("Knowledge").folder("docs")
    run = Run(ladder, model=ScriptedModel(lambda m, **h: "done"), input="q")
    run.pending  # noqa: B018 - started, so the view shows its first prompt (FileIndex of 10k files)
    out = []
    for name, fn in (("Trace.to_html", trace.to_html), ("Folder.to_html", folder.to_html),
                     ("Run.to_html (pending)", run.to_html), ("Ladder.to_html", ladder.to_html)):
        t0 = time.perf_counter()
        h = fn()
        out.append({"view": name, "s": time.perf_counter() - t0, "bytes": len(h.encode())})
    return out


def make_evaluation(root: Path, trace, rows: int) -> Path:
    (root / "traces").mkdir(parents=True)
    small = make_trace(20, huge_every=10_000)
    small.to_jsonl(root / "traces" / "r1.jsonl")
    with open(root / "results.jsonl", "w") as fh:
        for i in range(rows):
            fh.write(json.dumps({"row": f"r{i}", "input.context": f"question {i}", "status": "completed" if i % 17
                                 else "error", "output": "answer " * 20, "llm_calls": 3, "tokens_in": 900,
                                 "tokens_out": 40, "cost": 0.0, "gates": "", "writes": 0,
                                 "error": None if i % 17 else "ModelError: boom", "seconds": 0.1,
                                 "trace": "traces/r1.jsonl", "pos": i + 1}) + "\n")
    return root


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    ap.add_argument("--files", type=int, default=10_000)
    ap.add_argument("--rounds", type=int, default=1_000)
    ap.add_argument("--reps", type=int, default=3)
    a = ap.parse_args()
    _install_recorder()
    import ipywidgets  # noqa: F401 - imported once before timing, as in a notebook
    import jsonschema  # noqa: F401

    from ladr_lab.config import load_ladder_text
    tmp = Path(tempfile.mkdtemp(prefix="ladr-bench-widgets-"))
    try:
        t0 = time.perf_counter()
        slate_root = make_slate(tmp / "slate", a.files)
        trace = make_trace(a.rounds)
        trace_b = make_trace(a.rounds + 10, label="b")
        ladder = load_ladder_text(LADDER.format(slate=slate_root), base_dir=tmp)
        eval_dir = make_evaluation(tmp / "eval", trace, 1000)
        print(f"data made in {time.perf_counter() - t0:.1f} s ({a.files:,} files, {a.rounds:,} rounds)\n")
        views = bench_views(slate_root, trace, trace_b, ladder, eval_dir, a.reps)
        static = bench_static(slate_root, trace, ladder)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    def verdict(ok: bool) -> str:
        return "PASS" if ok else "FAIL"

    print(f"{'view':<40} {'first paint':>11} {'sent up front':>14} {'(static part)':>13}")
    for r in views:
        r["pass"] = r["first_paint_s"] < FIRST_PAINT_S and r["sent_up_front_bytes"] < UP_FRONT_BYTES
        print(f"{r['view']:<40} {r['first_paint_s'] * 1000:>9.0f}ms {r['sent_up_front_bytes'] / 1000:>11.1f} KB "
              f"{r['static_fallback_bytes'] / 1000:>10.1f} KB  {verdict(r['pass'])}")
        if "engine_first_prompt_s" in r:
            print(f"    {'(the run itself: Run + run.pending)':<36} {r['engine_first_prompt_s'] * 1000:>9.0f}ms")
        for x in r["actions"]:
            x["pass"] = None if x["target_s"] is None else x["s"] < x["target_s"]
            mark = "(no target)" if x["pass"] is None else verdict(x["pass"])
            print(f"    {x['action']:<36} {x['s'] * 1000:>9.1f}ms {x['sent_bytes'] / 1000:>11.1f} KB"
                  f"{'':>15}{mark}")
    print(f"\n{'static view':<40} {'time':>11} {'size':>14}")
    for r in static:
        r["pass"] = r["bytes"] < UP_FRONT_BYTES
        print(f"{r['view']:<40} {r['s'] * 1000:>9.0f}ms {r['bytes'] / 1000:>11.1f} KB  {verdict(r['pass'])}")
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                                text=True).stdout.strip()
    except OSError:
        commit = ""
    RESULTS.mkdir(exist_ok=True)
    out = {"machine": {"python": sys.version.split()[0], "platform": platform.platform(), "cpus": os.cpu_count(),
                       "when": time.strftime("%Y-%m-%dT%H:%M:%S"), "commit": commit},
           "files": a.files, "rounds": a.rounds, "reps": a.reps,
           "targets": {"first_paint_s": FIRST_PAINT_S, "action_s": ACTION_S, "up_front_bytes": UP_FRONT_BYTES},
           "views": views, "static": static}
    name = "widgets.json" if (a.files, a.rounds) == (10_000, 1_000) else f"widgets-{a.files}-{a.rounds}.json"
    (RESULTS / name).write_text(json.dumps(out, indent=2))
    print(f"\nwrote {RESULTS / name}")


if __name__ == "__main__":
    main()
