"""`ladr-lab trace rejudge | diff | prompt | tune | otel`: questions about recorded runs, answered without the model,
and their export as OpenTelemetry spans."""
from __future__ import annotations

import json
import sys
from pathlib import Path

from ..errors import LadrError
from ..trace import Trace
from ._common import USAGE_ERROR, _fail, _json_errors, _kv

__all__ = ["add_parser", "cmd_diff", "cmd_otel", "cmd_prompt", "cmd_rejudge", "cmd_tune"]


def cmd_rejudge(a) -> int:
    """Re-judge a trace (or every row of an evaluation folder) against an edited ladder; exit 1 if a verdict flips."""
    try:
        return _rejudge(a)
    except LadrError as exc:
        return _json_errors(a, exc)


def _rejudge(a) -> int:
    from ..analysis.rejudge import Edits, format_rows, rejudge_rows
    from ..experiments import load_evaluation
    from ..experiments.folder import RESULTS
    edits = Edits(a.ladder)
    slates = _kv(a.slate, "--slate") or None
    target = Path(a.trace)
    if target.is_dir():
        ev = load_evaluation(target)
        if not ev.rows:
            return _fail(a, f"{target} holds no evaluation results ({RESULTS})", 1)
        rows = ev.rejudge_rows(edits, step=a.step, slates=slates)
        flipping = [r for r in rows if r["flips"]]
        if a.json:
            print(json.dumps({"rows": len(rows), "flipping": len(flipping), "per_row": rows}, default=str))
        else:
            print(f"{len(flipping)} of {len(rows)} row(s) would flip under {a.ladder}")
            for r in flipping:
                print(f"  row {r['row']}: {r['flips']} flip(s), first {r['first_flip']}"
                      + (f"\n      → {r['effect']}" if r["effect"] else ""))
        return 1 if flipping else 0
    rows = rejudge_rows(a.trace, edits, step=a.step, slates=slates)
    if a.json:
        print(json.dumps(rows, ensure_ascii=False, default=str))
    else:
        print(format_rows(rows))
    return 1 if any(r["flipped"] for r in rows) else 0


def cmd_diff(a) -> int:
    """Compare two recorded runs; exit 0 when nothing diverges, 1 otherwise."""
    from ..analysis import diff_runs
    d = diff_runs(a.a, a.b)
    if a.json:
        print(json.dumps(d.to_dict(), ensure_ascii=False, default=str))
    else:
        print(d.format())
    return 0 if d.identical else 1


def cmd_prompt(a) -> int:
    """Print one call's prompt as named sections, or (--diff) what changed since the round before."""
    from ..analysis.prompts import diff_prompts, format_diffs
    trace = Trace.of(a.trace)
    try:
        call = trace.call(a.step, a.node, a.round, a.iteration)
    except KeyError as exc:
        print(f"ladr-lab: {exc.args[0]}", file=sys.stderr)
        return 1
    if a.diff:
        if a.round < 2:
            print("ladr-lab: --diff compares with the round before: give --round 2 or more", file=sys.stderr)
            return USAGE_ERROR
        before = trace.call(a.step, a.node, a.round - 1, a.iteration)
        diffs = diff_prompts(before, call, f"round {a.round - 1}", f"round {a.round}")
        if a.json:
            print(json.dumps([d.to_dict() for d in diffs], ensure_ascii=False))
        else:
            print(format_diffs(diffs))
        return 0
    sections = call.prompt_sections()
    if a.json:
        print(json.dumps([{"kind": s.kind, "name": s.name, "text": s.text} for s in sections], ensure_ascii=False))
    else:
        for s in sections:
            print(f"── {s.kind}: {s.name} ({len(s.text)} chars)")
            print(s.text)
    return 0


def cmd_otel(a) -> int:
    """Export a saved trace as OpenTelemetry spans over OTLP/HTTP; exit 1 if it could not be sent."""
    from ..otel import export
    from .otel_args import otel_options
    try:
        n = export(a.trace, endpoint=a.endpoint, **(otel_options(a) or {}))
    except LadrError as exc:
        return _fail(a, str(exc), 1, exc)
    if a.json:
        print(json.dumps({"spans": n}))
    else:
        print(f"{n} span(s) exported from {a.trace}")
    return 0


def _tune_variant(item: str):
    """`NAME=FILE` of `trace tune --variant`: a ladder file (it has `steps`) as a path, else the file's schema."""
    from ..config.standalone import read_schema
    name, sep, path = item.partition("=")
    if not sep or not name.strip() or not path.strip():
        print(f"ladr-lab: --variant takes NAME=FILE (a requestMatch schema or a ladder; got {item!r})",
              file=sys.stderr)
        raise SystemExit(USAGE_ERROR)
    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8")
    except OSError as exc:
        raise LadrError(f"--variant {name}: cannot read {file} ({exc.strerror or exc})") from None
    value, _, error = read_schema(text, "json" if file.suffix.lower() == ".json" else "yaml")
    if error is not None:
        raise LadrError(f"--variant {name}: {file}: {error}")
    return name.strip(), (str(file) if isinstance(value, dict) and "steps" in value else value)


def cmd_tune(a) -> int:
    """Score requestMatch variants on every recorded retrieve output of an eval or experiment folder, or traces."""
    from ..experiments.tuning import tune_request_match
    try:
        variants = dict(_tune_variant(v) for v in a.variant)
        source: object = [Path(t) for t in a.source] if len(a.source) > 1 else Path(a.source[0])
        from ..experiments import Evaluation
        from ..experiments.folder import MANIFEST
        from ..experiments.results import is_results_folder, load_results
        batch = load_results(source) if isinstance(source, Path) and is_results_folder(source) else None
        if batch is not None and not isinstance(batch, Evaluation):
            exp = batch                         # one variant's cells: the others re-ran or re-judged the same rows
            of = a.of or (exp.variants[0] if exp.variants else "")
            if of not in exp.variants:
                raise LadrError(f"--of {of!r}: the experiment's variants are {', '.join(exp.variants) or 'none'}")
            source = exp.traces(of)
        elif a.of:
            raise LadrError(f"--of names a variant of an experiment folder (one holding {MANIFEST})")
        if a.next is not None and a.next < 1:
            raise LadrError(f"--next {a.next}: give how many outputs to list, 1 or more")
        if a.folds is not None and (a.folds < 0 or a.folds == 1):
            raise LadrError(f"--folds {a.folds}: give the cross-validation's folds, 2 or more (0: none)")
        if a.suggest_out and not a.suggest:
            raise LadrError("--suggest-out writes what --suggest suggests: give --suggest too")
        if not (variants or a.suggest or a.next or a.write_labels):
            raise LadrError("trace tune scores --variant NAME=FILE, or suggests one (--suggest), or says what to label "
                            "next (--next N), or writes the sheet to label (--write-labels FILE): give at least one")
        tuning = tune_request_match(source, variants, labels=a.labels, step=a.step)
        suggestion = None
        if a.suggest or a.next or a.suggest_out:
            from ..analysis import suggest_request_match
            suggestion = suggest_request_match(tuning, step=a.step, folds=a.folds)
            tuning = suggestion.tuning
            if a.suggest_out and suggestion.schema is not None:
                try:
                    saved = suggestion.save(a.suggest_out)
                except OSError as exc:
                    raise LadrError(f"--suggest-out {a.suggest_out}: cannot write it ({exc.strerror or exc})") from exc
                print(f"wrote the suggested requestMatch to {saved} (score it with "
                      f"--variant suggested={a.suggest_out})", file=sys.stderr)
            elif a.suggest_out:
                print(f"nothing written to {a.suggest_out}: no schema was suggested ({suggestion.why_none()})",
                      file=sys.stderr)
        nexts = suggestion.next_to_label(a.next) if suggestion is not None and a.next else []
        if a.write_labels:
            print(f"wrote {len(tuning.outputs)} output(s) to label to {tuning.save_label_sheet(a.write_labels)} "
                  "(fill the label column with request or answer; then --labels FILE)", file=sys.stderr)
        if a.json:
            scores = [{k: (None if isinstance(v, float) and v != v else v) for k, v in r.items()}
                      for r in tuning.score_rows()]
            wrong = {n: len([r for r in tuning.table_rows(n) if r["correct"] is False]) for n in tuning.variants}
            out = {"outputs": len(tuning.outputs), "labels": len(tuning.labels), "scores": scores, "wrong": wrong}
            if suggestion is not None:
                out["suggestion"] = suggestion.to_dict()
            if a.next:
                out["next"] = [{"row": o.row, "step": o.step, "node": o.node, "round": o.round,
                                "iteration": o.iteration, "output": o.output} for o in nexts]
            print(json.dumps(out, default=str))
            return 1 if a.suggest and suggestion is not None and suggestion.schema is None else 0
        print(tuning.to_text())
        if suggestion is not None and (a.suggest or a.suggest_out):
            print()
            print(suggestion.to_text())
        if a.next and not nexts:
            print("\nevery output is labelled: nothing to label next")
        elif a.next:
            print(f"\nlabel next ({len(nexts)} of the unlabelled output(s), the one whose label would most change the "
                  "suggestion first):")
            for o in nexts:
                text = " ".join(o.output.split())
                print(f"  {o.row} {o.step}/{o.node} r{o.round}" + (f" i{o.iteration}" if o.iteration != 1 else "")
                      + f"  {text[:100] + ('…' if len(text) > 100 else '')}")
        if a.wrong:
            rows = [r for r in tuning.table_rows(a.wrong) if r["correct"] is False]
            print(f"\n{len(rows)} labelled output(s) {a.wrong} judges against their label:")
            for r in rows:
                text = " ".join(str(r["output"]).split())
                print(f"  {r['row']} {r['step']}/{r['node']} r{r['round']}: {r['verdict']} (labelled {r['label']})"
                      f"  {text[:100] + ('…' if len(text) > 100 else '')}")
        return 1 if a.suggest and suggestion is not None and suggestion.schema is None else 0
    except (LadrError, KeyError) as exc:
        return _json_errors(a, exc if isinstance(exc, LadrError) else LadrError(str(exc).strip("'\"")))


def add_parser(sub) -> None:
    """Register `trace` and its subcommands."""
    t = sub.add_parser("trace", help="re-judge, diff or inspect recorded runs without calling the model")
    tsub = t.add_subparsers(dest="trace_cmd", required=True)
    r = tsub.add_parser("rejudge", help="re-judge a trace (or an eval folder) against an edited ladder")
    r.add_argument("trace", help="a JSONL trace, or the --out folder of ladr-lab eval")
    r.add_argument("--ladder", required=True, metavar="EDITED.yaml")
    r.add_argument("--step", metavar="ID", help="only this step's verdicts")
    r.add_argument("--slate", action="append", default=[], metavar="TITLE=DIR",
                   help="bind a slate to compute what a would-be request fetches (default: the ladder's path)")
    r.add_argument("--json", action="store_true", help="print the rows as JSON")
    r.set_defaults(fn=cmd_rejudge)
    d = tsub.add_parser("diff", help="compare two recorded runs")
    d.add_argument("a")
    d.add_argument("b")
    d.add_argument("--json", action="store_true", help="print the comparison as one JSON object")
    d.set_defaults(fn=cmd_diff)
    p = tsub.add_parser("prompt", help="a call's prompt as named sections, or its diff from the round before")
    p.add_argument("trace")
    p.add_argument("--step", required=True, metavar="ID")
    p.add_argument("--node", type=int, default=1, metavar="N")
    p.add_argument("--round", type=int, default=1, metavar="R")
    p.add_argument("--iteration", type=int, default=1, metavar="I")
    p.add_argument("--diff", action="store_true", help="what changed since round R-1, section by section")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(fn=cmd_prompt)
    u = tsub.add_parser("tune", help="score requestMatch variants on every recorded retrieve output (no model): "
                                     "precision and recall of request detection on labelled outputs")
    u.add_argument("source", nargs="+", help="an eval or experiment --out folder, a folder of traces, or trace files")
    u.add_argument("--of", metavar="VARIANT", help="in an experiment folder, whose cells' outputs (default: the first "
                                                   "variant's)")
    u.add_argument("--variant", action="append", default=[], metavar="NAME=FILE",
                   help="a requestMatch schema (.json or .yaml) or an edited ladder; repeat for each variant")
    u.add_argument("--suggest", action="store_true",
                   help="suggest a requestMatch from the labels: the frontier, each constraint explained, the "
                        "cross-validated figures, or the outputs that collide (exit 1 when none can be suggested)")
    u.add_argument("--suggest-out", metavar="FILE.json", help="write the suggested schema to FILE.json")
    u.add_argument("--next", type=int, metavar="N", help="list the N unlabelled outputs to label next")
    u.add_argument("--folds", type=int, default=5, metavar="K", help="cross-validation folds of --suggest (0: none)")
    u.add_argument("--labels", metavar="FILE.csv", help="labels: row, step, round[, node], label (request|answer)")
    u.add_argument("--step", metavar="ID", help="only this retrieve step's rounds")
    u.add_argument("--write-labels", metavar="FILE.csv",
                   help="also write every output to FILE.csv with its label (blank where none) to fill in by hand")
    u.add_argument("--wrong", metavar="NAME", help="also list the labelled outputs variant NAME gets wrong")
    u.add_argument("--json", action="store_true", help="print the scores as JSON")
    u.set_defaults(fn=cmd_tune)
    o = tsub.add_parser("otel", help="export a saved trace as OpenTelemetry spans (OTLP/HTTP; the otel extra)")
    o.add_argument("trace")
    o.add_argument("--endpoint", metavar="URL", help="the OTLP/HTTP base URL (default: OTEL_EXPORTER_OTLP_ENDPOINT, "
                                                     "else http://localhost:4318)")
    o.add_argument("--json", action="store_true", help="print {\"spans\": N}")
    from .otel_args import add_otel_options
    add_otel_options(o, export_flag=False)
    o.set_defaults(fn=cmd_otel)
