"""`ladr-lab eval LADDER [LADDER...] --inputs FILE --out DIR`: one run per input row, with a progress bar,
resumable; with several ladders, knob sets, assertions or Ray, an experiment (variants × rows, `experiments`)."""
from __future__ import annotations

import json
import sys
from pathlib import Path

from ..errors import LadrError, ModelError
from ..experiments.folder import RESULTS, TABLE
from ._common import USAGE_ERROR, _json_errors, _kv
from .model_args import add_cache_options, add_model_options, cache_arg, model_options
from .otel_args import add_otel_options, otel_options
from .run import _positive

__all__ = ["add_parser", "cmd_eval", "cmd_experiment"]


def _model_arg(model: str | None) -> str | None:
    # a script or replay path typed on the command line is relative to where the command runs
    if model and ":" in model and model.split(":", 1)[0] in ("script", "replay"):
        kind, rel = model.split(":", 1)
        if not Path(rel).is_absolute() and Path(rel).exists():
            return f"{kind}:{Path(rel).resolve()}"
    return model


def _is_experiment(a) -> bool:
    """Several ladders, knob sets, assertions, Ray, or an inputs file with assertion or label columns."""
    if len(a.ladder) > 1 or a.knob_set or a.assertion or a.ray is not None or a.rate_limit or a.grader \
            or a.share_slates:
        return True
    from ..experiments.inputs import load_inputs
    from ..experiments.runner import RESERVED
    try:
        return any(k in fields for _, fields in load_inputs(a.inputs) for k in RESERVED)
    except LadrError:
        return False      # evaluate says what is wrong with the file


def _variants(items: list[str]) -> dict | list:
    """LADDER arguments: `PATH` (named by its file stem) or `NAME=PATH`; a name given twice is a LadrError."""
    if not any("=" in item and not Path(item).exists() for item in items):
        return list(items)        # load_variants names them by stem (a repeated stem gets -2)
    named: dict[str, str] = {}
    for item in items:
        name, sep, path = item.partition("=")
        if not (sep and name) or Path(item).exists():
            name, path = Path(item).stem, item
        if name in named:
            raise LadrError(f"variant name {name!r} is given twice (LADDER arguments are FILE or NAME=FILE)")
        named[name] = path
    return named


def _knob_sets(items: list[str]) -> dict:
    """`--knob-set NAME:K=V[,K=V...]` options as {name: knobs}."""
    out = {}
    for item in items or []:
        name, sep, rest = item.partition(":")
        if not sep or not name.strip():
            print(f"ladr-lab: --knob-set takes NAME:K=V[,K=V...] (got {item!r})", file=sys.stderr)
            raise SystemExit(USAGE_ERROR)
        out[name.strip()] = _kv([kv for kv in rest.split(",") if kv.strip()], "--knob")
    return out


def _rate_limit(items: list[str]):
    """`--rate-limit [PROVIDER=]RATE` options: one rate for every provider, or rates by provider."""
    if not items:
        return None
    rates = {}
    for item in items:
        provider, sep, rate = item.rpartition("=")
        rates[provider.strip() if sep else "*"] = rate.strip()
    return rates


def cmd_experiment(a) -> int:
    """Run every variant on every row; exit 0 when every cell completed and no assertion failed, 1 otherwise."""
    from ..experiments import experiment
    try:
        exp = experiment(_variants(a.ladder), a.inputs, model=_model_arg(a.model), asserts=a.assertion or None,
                         out=a.out, knob_sets=_knob_sets(a.knob_set) or None, knobs=_kv(a.knob, "--knob") or None,
                         concurrency=a.concurrency, backend="ray" if a.ray is not None else "local",
                         ray_address=a.ray or None, rate_limit=_rate_limit(a.rate_limit), rejudge=a.rejudge,
                         grader=a.grader, slates=_kv(a.slate, "--slate") or None,
                         isolate_slates=not a.share_slates,
                         resume=not a.restart, progress=not a.no_progress and not a.json,
                         model_options=model_options(a), retry_errors=not a.no_retry_errors,
                         cache=cache_arg(a), **_telemetry(a))
    except LadrError as exc:
        return _json_errors(a, exc)
    counts = exp.counts()
    failed = sum(r.get("passed") is False for r in exp.rows)
    if a.json:
        summary = [{k: (None if isinstance(v, float) and v != v else v) for k, v in s.items()}   # NaN: no JSON
                   for s in exp.summary_rows()]
        print(json.dumps({"cells": len(exp.rows), "variants": exp.variants, "counts": counts, "failed": failed,
                          "summary": summary, "notes": exp.notes, "retried": exp.retried, "out": str(exp.out),
                          "results": str(exp.out / TABLE), **_telemetry_json(exp)}, default=str))
    else:
        print(exp.format())
    return _telemetry_said(a, exp, 0 if set(counts) <= {"completed"} and not failed else 1)


def cmd_eval(a) -> int:
    """Evaluate a ladder over an inputs file; exit 0 when every row completed, 1 otherwise, 130 if interrupted."""
    from ..experiments import evaluate
    from ..models import key_problem
    problem = key_problem(a.model, model_options(a)) if a.model else None
    if problem:     # a missing API key: said at once, from the name, not as every cell's error
        return _json_errors(a, ModelError(problem))
    if _is_experiment(a):
        return cmd_experiment(a)
    a.ladder = a.ladder[0]
    try:
        ev = evaluate(a.ladder, a.inputs, model=_model_arg(a.model), concurrency=a.concurrency, out=a.out,
                      slates=_kv(a.slate, "--slate") or None, knobs=_kv(a.knob, "--knob") or None,
                      isolate_slates=a.isolate_slates, resume=not a.restart,
                      progress=not a.no_progress and not a.json, model_options=model_options(a),
                      retry_errors=not a.no_retry_errors, cache=cache_arg(a), **_telemetry(a))
    except LadrError as exc:
        return _json_errors(a, exc)
    counts = ev.counts()
    if a.json:
        print(json.dumps({"rows": len(ev.rows), "counts": counts, "retried": ev.retried, "out": str(ev.out),
                          "results": str(ev.out / TABLE), **_telemetry_json(ev)}))
    else:
        print(ev.format())
    return _telemetry_said(a, ev, 0 if set(counts) <= {"completed"} else 1)


def _telemetry(a) -> dict:
    """`otel=` and `phoenix=` of evaluate / experiment from the OpenTelemetry flags (otel_args.py)."""
    opts = otel_options(a)
    return {"otel": False if opts is None else (opts or True),
            "phoenix": False if a.phoenix is None else (a.phoenix or True)}


def _telemetry_json(res) -> dict:
    """The `phoenix` (what the upload made, or `phoenix_error`) and `otel_errors` keys of `--json`, when any."""
    out: dict = {}
    if res.phoenix is not None:
        out["phoenix"] = res.phoenix.to_dict()
    if res.phoenix_error:
        out["phoenix_error"] = res.phoenix_error
    failed = sum(1 for c in res.cells if c.extra.get("otel_error"))
    if failed:
        out["otel_errors"] = failed
    return out


def _telemetry_said(a, res, code: int) -> int:
    """Print what the upload made (or why it failed, then exit 1) and how many cells' spans could not be sent."""
    if not a.json:
        if res.phoenix is not None:
            print(res.phoenix.format())
        failed = [c for c in res.cells if c.extra.get("otel_error")]
        if failed:
            print(f"ladr-lab: the spans of {len(failed)} cell(s) could not be exported: "
                  f"{failed[0].extra['otel_error']}", file=sys.stderr)
        if res.phoenix_error:
            print(f"ladr-lab: {res.phoenix_error}", file=sys.stderr)
    return 1 if res.phoenix_error else code


def add_parser(sub) -> None:
    """Register `eval`."""
    p = sub.add_parser("eval", help="run a ladder over many inputs (CSV or JSONL), one trace per row; several "
                                    "ladders (or knob sets, or assertions): an experiment, variants × rows")
    p.add_argument("ladder", nargs="+", metavar="LADDER",
                   help="a ladder file, or NAME=FILE; several are the variants of an experiment")
    p.add_argument("--inputs", required=True, metavar="FILE",
                   help="a .csv or .jsonl file: column id names the row, context (or input) sets input.context, "
                        "any other column input.NAME")
    p.add_argument("--out", required=True, metavar="DIR", help=f"traces/, {RESULTS} and {TABLE} go here")
    p.add_argument("--model", help="offline (default), script:PATH, local[:NAME], or a litellm model name")
    p.add_argument("--concurrency", type=_positive, default=4, metavar="N", help="rows run at once (default 4)")
    p.add_argument("--knob", action="append", default=[], metavar="K=V")
    p.add_argument("--slate", action="append", default=[], metavar="TITLE=DIR")
    p.add_argument("--isolate-slates", action="store_true",
                   help="give each row its own copy of every slate the ladder writes to (default: shared)")
    p.add_argument("--restart", action="store_true", help="run every row again (default: resume, skipping "
                                                          "rows finished with the same ladder and inputs)")
    p.add_argument("--no-retry-errors", action="store_true",
                   help="on resume, keep the rows (cells) an earlier run ended with status error (default: run them "
                        "again; a failed assertion, aborted, budget_exhausted or unsettled is a result and is kept)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--json", action="store_true", help="print one JSON summary line")
    x = p.add_argument_group("experiments (variants × rows, assertions; docs/experiments.md)")
    x.add_argument("--knob-set", action="append", default=[], metavar="NAME:K=V[,K=V]",
                   help="a variant: the ladder(s) under these knobs (repeat for more variants)")
    x.add_argument("--assert", dest="assertion", action="append", default=[], metavar="SPEC",
                   help="an assertion on every cell, e.g. 'contains: dedup', 'fetched: retrieve/dedup.md', "
                        "'max-calls: 3' (the inputs' `assert` column adds a row's own)")
    x.add_argument("--grader", metavar="MODEL", help="the model of model-graded assertions (default: --model when "
                                                     "it is a model name, offline being a deterministic stand-in)")
    x.add_argument("--share-slates", action="store_true",
                   help="cells share the slates the ladder writes to (default in an experiment: a copy per cell)")
    x.add_argument("--rejudge", choices=("auto", "only", "off"), default="auto",
                   help="variants that differ only in requestMatch or gates: re-judged from the recorded runs, "
                        "going live where the recording ends (auto), never live (only), or run again (off)")
    x.add_argument("--ray", nargs="?", const="", default=None, metavar="ADDRESS",
                   help="run the cells as Ray tasks (a local Ray, or the cluster at ADDRESS); "
                        "needs ladr_lab[ray]")
    x.add_argument("--rate-limit", action="append", default=[], metavar="[PROVIDER=]RATE",
                   help="calls per period shared by every worker, e.g. 60/min or openai=5/s")
    add_model_options(p)
    add_cache_options(p)
    add_otel_options(p, phoenix=True)
    p.set_defaults(fn=cmd_eval)
