"""`ladr-lab eval LADDER [LADDER...] --inputs FILE --out DIR`: one run per input row, with a progress bar,
resumable; with several ladders, knob sets, assertions, Ray, or a score or filter option, an experiment (variants ×
rows, `experiments`); `ladr-lab eval EXPERIMENT.yaml`: the experiment an experiment file describes, its options
overridden by the flags given (`_over_file`). `--html FILE`, `--junit FILE` and `--json` report every cell.
`ladr-lab eval compare A B`: two results folders compared cell by cell.

`compare` as the first word after `eval` is always the sub-command (`is_compare`; `main` hands the rest to
`compare_parser`), whatever files the folder holds, so a script means the same everywhere: a ladder file named
`compare` is given as `./compare`."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from ..errors import LadrError, ModelError
from ..experiments.folder import RESULTS, TABLE
from ._common import USAGE_ERROR, _fail, _json_errors, _kv, _usage
from .model_args import add_cache_options, add_model_options, cache_arg, model_options
from .otel_args import add_otel_options, otel_options
from .run import _positive

__all__ = ["COMPARE", "add_parser", "cmd_compare", "cmd_eval", "cmd_experiment", "compare_parser", "is_compare",
           "write_reports"]

COMPARE = "compare"          # `ladr-lab eval compare A B`


def _model_arg(model: str | None) -> str | None:
    # a script or replay path typed on the command line is relative to where the command runs
    if model and ":" in model and model.split(":", 1)[0] in ("script", "replay"):
        kind, rel = model.split(":", 1)
        if not Path(rel).is_absolute() and Path(rel).exists():
            return f"{kind}:{Path(rel).resolve()}"
    return model


def _is_experiment(a) -> bool:
    """Several ladders, knob sets, assertions, Ray, a score or filter option, or an inputs file with assertion or
    label columns."""
    if len(a.ladder) > 1 or a.knob_set or a.assertion or a.ray is not None or a.rate_limit or a.grader \
            or a.share_slates or any(getattr(a, k) is not None for k in _EXPERIMENT_ONLY) or a.rows or a.variants:
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


# the options only an experiment takes (a plain evaluation has no scores, repeats or filters)
_EXPERIMENT_ONLY = ("threshold", "repeat", "filter_failing", "filter_errors", "sample", "sample_seed")


def _experiment_kwargs(a) -> dict:
    """experiment()'s arguments from the command line alone (no experiment file)."""
    if a.inputs is None or a.out is None:
        _usage(f"eval: {'--inputs' if a.inputs is None else '--out'} is required (or give an experiment file: a "
               "YAML file with variants: and inputs:)")
    kw = dict(ladders=_variants(a.ladder), inputs=a.inputs, model=_model_arg(a.model), asserts=a.assertion or None,
              out=a.out, knob_sets=_knob_sets(a.knob_set) or None, knobs=_kv(a.knob, "--knob") or None,
              concurrency=a.concurrency or 4, backend="ray" if a.ray is not None else "local",
              ray_address=a.ray or None, rate_limit=_rate_limit(a.rate_limit), rejudge=a.rejudge or "auto",
              grader=a.grader, slates=_kv(a.slate, "--slate") or None, isolate_slates=not a.share_slates,
              resume=not a.restart, progress=not a.no_progress and not a.json, model_options=model_options(a),
              retry_errors=not a.no_retry_errors, cache=cache_arg(a))
    kw.update(_filter_flags(a))
    return kw


def _filter_flags(a) -> dict:
    """The score, repeat and filter flags given, as experiment()'s arguments."""
    kw = {k: getattr(a, k) for k in _EXPERIMENT_ONLY if getattr(a, k) is not None}
    if a.rows:
        kw["rows"] = list(a.rows)
    if a.variants:
        kw["variants"] = list(a.variants)
    return kw


def _over_file(a, spec) -> dict:
    """experiment()'s arguments from an experiment file, the flags given over them: a flag that names one thing
    (--model, --out, --concurrency, --threshold, --repeat, --rows, --variants, a filter...) replaces the file's value;
    a flag that gives entries of a mapping (--knob, --slate, --knob-set, -O and the model options, --rate-limit)
    sets those entries over the file's; --assert adds assertions to the file's. The file's `outputs:` set the output
    flag of the same name (`--KIND FILE`) when it was not given; one inside the file's `out:` folder moves with
    `--out` (`out/report.html` becomes `OUT/report.html`), so a run elsewhere never writes over the reports of the
    file's own folder."""
    file_out = spec.kwargs.get("out")
    for kind, path in spec.outputs.items():
        if getattr(a, kind, None) is None:
            if a.out is not None and file_out is not None and Path(path).is_relative_to(Path(file_out)):
                path = Path(a.out) / Path(path).relative_to(Path(file_out))
            setattr(a, kind, str(path))
    kw = dict(spec.kwargs)
    scalar = {"model": _model_arg(a.model), "out": a.out, "inputs": a.inputs, "concurrency": a.concurrency,
              "rejudge": a.rejudge, "grader": a.grader}
    kw.update({k: v for k, v in scalar.items() if v is not None})
    if a.ray is not None:
        kw.update(backend="ray", ray_address=a.ray or None)
    for flag, key in ((a.share_slates, "isolate_slates"), (a.restart, "resume"), (a.no_retry_errors, "retry_errors")):
        if flag:
            kw[key] = False
    if a.no_progress or a.json:
        kw["progress"] = False
    for key, given in (("knobs", _kv(a.knob, "--knob")), ("slates", _kv(a.slate, "--slate")),
                       ("knob_sets", _knob_sets(a.knob_set)), ("model_options", model_options(a))):
        if given:
            kw[key] = {**(kw.get(key) or {}), **given}
    rates = _rate_limit(a.rate_limit)
    if rates:
        had = kw.get("rate_limit")
        kw["rate_limit"] = {**(had if isinstance(had, dict) else {"*": had} if had is not None else {}), **rates}
    if a.assertion:
        kw["asserts"] = [*(kw.get("asserts") or []), *a.assertion]
    if a.no_cache or a.cache_dir:
        kw["cache"] = cache_arg(a)
    kw.update(_filter_flags(a))
    if kw.get("out") is None:
        _usage(f"eval: {spec.path} names no out: folder; give --out DIR")
    return kw


def _experiment_file(a):
    """The experiment file `a.ladder` names (None: it names ladders), its flags checked."""
    from ..experiments.file import is_experiment_file, load_experiment_file
    first = Path(a.ladder[0])
    if len(a.ladder) == 1 and first.suffix.lower() in (".yaml", ".yml") and a.inputs is None \
            and not is_experiment_file(first) and first.is_file():
        from ..config.reader import load_yaml
        try:
            raw, _ = load_yaml(first.read_text(encoding="utf-8"), str(first))
        except (LadrError, OSError, UnicodeDecodeError):
            return load_experiment_file(first)        # says what is wrong with it, as an experiment file
        if isinstance(raw, dict) and "steps" in raw:
            return None                                # a ladder: --inputs is said to be missing
        return load_experiment_file(first)            # neither: its problems as an experiment file's
    if not any(is_experiment_file(x) for x in a.ladder):
        return None
    if len(a.ladder) > 1:
        _usage("eval: an experiment file is given alone (its variants: name the ladders)")
    return load_experiment_file(first)


def write_reports(a, exp) -> dict:
    """Write the reports asked for (`--html FILE`, `--junit FILE`) and return their paths, as the JSON summary
    names them (`html`, `junit`)."""
    written = {}
    if getattr(a, "html", None):
        written["html"] = str(exp.save_html(a.html))
    if getattr(a, "junit", None):
        written["junit"] = str(exp.save_junit(a.junit))
    return written


def _report_lines(written: dict) -> str:
    return "".join(f"\n{k}: {v}" for k, v in written.items())


def cmd_experiment(a, spec=None) -> int:
    """Run every variant on every row (from the command line, or an experiment file `spec` with the flags over it);
    exit 0 when every cell completed and no assertion failed, 1 otherwise; with a pass rate (--pass-rate, the
    file's passRate) exit 0 when at least that share of cells passed."""
    from ..experiments import experiment
    bar = a.pass_rate if a.pass_rate is not None else spec.pass_rate if spec is not None else None
    try:
        kw = _over_file(a, spec) if spec is not None else _experiment_kwargs(a)
        kw.update({k: v for k, v in _telemetry(a).items() if v is not False})    # a flag given wins over the file
        exp = experiment(kw.pop("ladders"), kw.pop("inputs"), **kw)
    except LadrError as exc:
        return _json_errors(a, exc)
    written = write_reports(a, exp)
    counts = exp.counts()
    failed = sum(r.get("passed") is False for r in exp.rows)
    rate = exp.pass_rate()
    if a.json:
        summary = [{k: (None if isinstance(v, float) and v != v else v) for k, v in s.items()}   # NaN: no JSON
                   for s in exp.summary_rows()]
        print(json.dumps({"cells": len(exp.rows), "variants": exp.variants, "counts": counts, "failed": failed,
                          "summary": summary, "notes": exp.notes, "retried": exp.retried, "out": str(exp.out),
                          "results": str(exp.out / TABLE), "pass_rate": rate,
                          **({"pass_rate_required": bar} if bar is not None else {}), **written,
                          "per_cell": exp.cell_reports(), **_telemetry_json(exp)}, default=str))
    else:
        print(exp.format() + _report_lines(written))
        if bar is not None:
            print(f"pass rate {_pct(rate)} of {len(exp.cells)} cell(s): {'at or above' if _meets(rate, bar) else 'below'}"
                  f" the bar of {bar:.0%}")
    if bar is not None:
        return _telemetry_said(a, exp, 0 if _meets(rate, bar) else 1)
    return _telemetry_said(a, exp, 0 if set(counts) <= {"completed"} and not failed else 1)


def _meets(rate: float | None, bar: float) -> bool:
    return rate is not None and rate >= bar - 1e-12


def _pct(rate: float | None) -> str:
    return "—" if rate is None else f"{rate:.1%}"


def _fraction(text: str) -> float:
    """A share from 0 to 1 (`--pass-rate 0.9`, `--threshold 0.5`); anything else is a usage error."""
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 <= value <= 1:
        import argparse
        raise argparse.ArgumentTypeError(f"give a number from 0 to 1 (got {text!r})")
    return value


def cmd_eval(a) -> int:
    """Evaluate a ladder over an inputs file; exit 0 when every row completed (with --pass-rate: when at least that
    share did), 1 otherwise, 130 if interrupted; an experiment file or experiment options run an experiment."""
    from ..experiments import evaluate
    from ..models import key_problem
    problem = key_problem(a.model, model_options(a)) if a.model else None
    if problem:     # a missing API key: said at once, from the name, not as every cell's error
        return _json_errors(a, ModelError(problem))
    try:
        spec = _experiment_file(a)
    except LadrError as exc:
        return _json_errors(a, exc)
    if spec is not None:
        return cmd_experiment(a, spec)
    if a.inputs is None or a.out is None:
        _usage(f"eval: {'--inputs' if a.inputs is None else '--out'} is required (or give an experiment file: a "
               "YAML file with variants: and inputs:)")
    if _is_experiment(a):
        return cmd_experiment(a)
    a.ladder = a.ladder[0]
    try:
        ev = evaluate(a.ladder, a.inputs, model=_model_arg(a.model), concurrency=a.concurrency or 4, out=a.out,
                      slates=_kv(a.slate, "--slate") or None, knobs=_kv(a.knob, "--knob") or None,
                      isolate_slates=a.isolate_slates, resume=not a.restart,
                      progress=not a.no_progress and not a.json, model_options=model_options(a),
                      retry_errors=not a.no_retry_errors, cache=cache_arg(a), **_telemetry(a))
    except LadrError as exc:
        return _json_errors(a, exc)
    written = write_reports(a, ev)
    counts = ev.counts()
    rate = ev.pass_rate()
    if a.json:
        print(json.dumps({"rows": len(ev.rows), "counts": counts, "retried": ev.retried, "out": str(ev.out),
                          "results": str(ev.out / TABLE),
                          **({"pass_rate": rate, "pass_rate_required": a.pass_rate} if a.pass_rate is not None
                             else {}), **written, "per_row": ev.cell_reports(), **_telemetry_json(ev)}, default=str))
    else:
        print(ev.format() + _report_lines(written))
        if a.pass_rate is not None:
            print(f"pass rate {_pct(rate)} of {len(ev.cells)} row(s) completed: "
                  f"{'at or above' if _meets(rate, a.pass_rate) else 'below'} the bar of {a.pass_rate:.0%}")
    if a.pass_rate is not None:
        return _telemetry_said(a, ev, 0 if _meets(rate, a.pass_rate) else 1)
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


# ---- ladr-lab eval compare A B -------------------------------------------------------------------------------

def is_compare(argv: list[str]) -> bool:
    """Whether a command line is `eval compare ...` (the sub-command, never a ladder named `compare`)."""
    return len(argv) >= 2 and argv[0] == "eval" and argv[1] == COMPARE


def _pairs(items: list[str]) -> dict:
    out = {}
    for item in items or []:
        before, sep, after = item.partition("=")
        if not (sep and before.strip() and after.strip()):
            print(f"ladr-lab: --variant takes BEFORE=AFTER (got {item!r})", file=sys.stderr)
            raise SystemExit(USAGE_ERROR)
        out[before.strip()] = after.strip()
    return out


def cmd_compare(a) -> int:
    """Compare two results folders cell by cell; exit 1 when a cell went from passing to failing, 0 otherwise,
    2 when a folder holds no results or a variant is unknown."""
    from ..experiments.results import is_results_folder, load_results
    for folder in (a.before, a.after):
        if not is_results_folder(folder):
            return _fail(a, f"{folder} holds no results ({RESULTS}): give the --out folder of an eval or an "
                            "experiment", USAGE_ERROR)
    try:
        cmp = load_results(a.before).compare(load_results(a.after), variants=_pairs(a.variant) or None)
    except KeyError as exc:
        return _fail(a, str(exc.args[0]), USAGE_ERROR)
    written = {}
    if a.html:
        path = Path(a.html)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(cmp.to_page(), encoding="utf-8")
        written["html"] = str(path)
    if a.json:
        print(json.dumps({**cmp.to_dict(), **written}, ensure_ascii=False, default=str))
    else:
        print(cmp.format(max_rows=a.max_rows) + _report_lines(written))
    return 1 if cmp.regressions else 0


def compare_parser() -> argparse.ArgumentParser:
    """The parser of `ladr-lab eval compare` (its own: `eval` takes ladder files as its positionals)."""
    p = argparse.ArgumentParser(
        prog="ladr-lab eval compare",
        description="Compare two eval or experiment folders cell by cell: the cells whose pass/fail, status, "
                    "assertion results or output changed, by variant (pass→fail, fail→pass, status, assertions, "
                    "output, new, missing). Exit 1 when a cell went from passing to failing.")
    p.add_argument("before", metavar="A", help="the results folder before (an --out of ladr-lab eval)")
    p.add_argument("after", metavar="B", help="the results folder after")
    p.add_argument("--variant", action="append", default=[], metavar="BEFORE=AFTER",
                   help="pair variants named differently (one variant on each side is paired whatever its name)")
    p.add_argument("--html", metavar="FILE", help="write the comparison as a standalone HTML page, each changed "
                                                  "cell's run diff opened on a click")
    p.add_argument("--max-rows", type=_positive, default=50, metavar="N",
                   help="changed cells listed (default 50; --json lists all)")
    p.add_argument("--json", action="store_true", help="print the comparison as one JSON object")
    p.set_defaults(fn=cmd_compare)
    return p


def add_parser(sub) -> None:
    """Register `eval`."""
    p = sub.add_parser("eval", help="run a ladder over many inputs (CSV or JSONL), one trace per row; several "
                                    "ladders (or knob sets, or assertions): an experiment, variants × rows; an "
                                    "experiment file (YAML): the experiment it describes; `eval compare A B` compares "
                                    "two results folders",
                       epilog="ladr-lab eval compare A B [--json] [--html FILE]: two results folders compared cell "
                              "by cell (ladr-lab eval compare --help)")
    p.add_argument("ladder", nargs="+", metavar="LADDER",
                   help="a ladder file, or NAME=FILE; several are the variants of an experiment; or one experiment "
                        "file (a YAML file with variants: and inputs:, docs/experiments.md), whose options the flags "
                        "given override")
    p.add_argument("--inputs", metavar="FILE",
                   help="a .csv or .jsonl file: column id names the row, context (or input) sets input.context, "
                        "any other column input.NAME (required without an experiment file)")
    p.add_argument("--out", metavar="DIR", help=f"traces/, {RESULTS} and {TABLE} go here (required without an "
                                                "experiment file that names out:)")
    p.add_argument("--model", help="offline (default), script:PATH, local[:NAME], or a litellm model name")
    p.add_argument("--concurrency", type=_positive, default=None, metavar="N",
                   help="rows run at once (default 4)")
    p.add_argument("--knob", action="append", default=[], metavar="K=V")
    p.add_argument("--slate", action="append", default=[], metavar="TITLE=DIR")
    p.add_argument("--isolate-slates", action="store_true",
                   help="one ladder, no experiment option: give each row its own copy of every slate the ladder "
                        "writes to (default there: shared; an experiment copies them per cell, see --share-slates)")
    p.add_argument("--restart", action="store_true", help="run every row again (default: resume, skipping "
                                                          "rows finished with the same ladder and inputs)")
    p.add_argument("--no-retry-errors", action="store_true",
                   help="on resume, keep the rows (cells) an earlier run ended with status error (default: run them "
                        "again; a failed assertion, aborted, budget_exhausted or unsettled is a result and is kept)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--json", action="store_true", help="print one JSON summary line, every cell under per_cell "
                                                       "(an evaluation's rows under per_row)")
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
    x.add_argument("--rejudge", choices=("auto", "only", "off"), default=None,
                   help="variants that differ only in requestMatch or gates: re-judged from the recorded runs, "
                        "going live where the recording ends (auto), never live (only), or run again (off)")
    x.add_argument("--ray", nargs="?", const="", default=None, metavar="ADDRESS",
                   help="run the cells as Ray tasks (a local Ray, or the cluster at ADDRESS); "
                        "needs ladr_lab[ray]")
    x.add_argument("--rate-limit", action="append", default=[], metavar="[PROVIDER=]RATE",
                   help="calls per period shared by every worker, e.g. 60/min or openai=5/s")
    f = p.add_argument_group("scores, repeats and filters (docs/experiments.md, \"Scores\" and \"Filters\")")
    f.add_argument("--pass-rate", type=_fraction, metavar="R",
                   help="exit 0 when at least this share of cells passed (0 to 1; errors and unchecked cells count as "
                        "not passed); default: exit 0 only when every cell completed and none failed")
    f.add_argument("--threshold", type=_fraction, metavar="T",
                   help="a cell passes when the weighted score of its assertions is at least T (promptfoo's test "
                        "threshold; each assertion's weight: in an experiment file or an assert column)")
    f.add_argument("--repeat", type=_positive, metavar="N",
                   help="run each cell N times (runs 2..N ask the model afresh, bypassing the response cache's "
                        "answers of run 1); the summary shows how far they agree")
    f.add_argument("--filter-failing", metavar="DIR",
                   help="run only the cells (variant, row) that failed in the experiment folder DIR")
    f.add_argument("--filter-errors", metavar="DIR",
                   help="run only the cells that ended in an error in the experiment folder DIR")
    f.add_argument("-n", "--sample", type=_positive, metavar="N", help="run a random sample of N rows (seeded)")
    f.add_argument("--sample-seed", type=int, metavar="S", help="the sample's seed (default 0)")
    f.add_argument("--rows", action="append", default=[], metavar="PATTERN",
                   help="run only the rows whose id matches: a glob (q*, dedup-?) or re:REGEX (repeat for more)")
    f.add_argument("--variants", action="append", default=[], metavar="A,B",
                   help="run only these variants (names, comma-separated)")
    r = p.add_argument_group("reports (for CI and for people; docs/experiments.md#reports)")
    r.add_argument("--html", metavar="FILE", help="write the results as a standalone HTML page: the summary, the "
                                                  "grid, and each cell's assertions, output and trace")
    r.add_argument("--junit", metavar="FILE", help="write a JUnit XML report: a test suite per variant, a test "
                                                   "case per cell (a failed assertion a <failure>, an error an "
                                                   "<error>)")
    add_model_options(p)
    add_cache_options(p)
    add_otel_options(p, phoenix=True)
    p.set_defaults(fn=cmd_eval)
