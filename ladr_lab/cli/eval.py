"""`ladr-lab eval LADDER --inputs FILE --out DIR`: one run per input row, with a progress bar, resumable."""
from __future__ import annotations

import json
from pathlib import Path

from ..errors import LadrError
from ._common import _json_errors, _kv
from .model_args import add_model_options, model_options
from .run import _positive


def _model_arg(model: str | None) -> str | None:
    # a script or replay path typed on the command line is relative to where the command runs
    if model and ":" in model and model.split(":", 1)[0] in ("script", "replay"):
        kind, rel = model.split(":", 1)
        if not Path(rel).is_absolute() and Path(rel).exists():
            return f"{kind}:{Path(rel).resolve()}"
    return model


def cmd_eval(a) -> int:
    """Evaluate a ladder over an inputs file; exit 0 when every row completed, 1 otherwise, 130 if interrupted."""
    from ..evaluation import evaluate
    try:
        ev = evaluate(a.ladder, a.inputs, model=_model_arg(a.model), concurrency=a.concurrency, out=a.out,
                      slates=_kv(a.slate, "--slate") or None, knobs=_kv(a.knob, "--knob") or None,
                      isolate_slates=a.isolate_slates, resume=not a.restart,
                      progress=not a.no_progress and not a.json, model_options=model_options(a))
    except LadrError as exc:
        return _json_errors(a, exc)
    counts = ev.counts()
    if a.json:
        print(json.dumps({"rows": len(ev.rows), "counts": counts, "out": str(ev.out),
                          "results": str(ev.out / "results.csv")}))
    else:
        print(ev.format())
    return 0 if set(counts) <= {"completed"} else 1


def add_parser(sub) -> None:
    """Register `eval`."""
    p = sub.add_parser("eval", help="run a ladder over many inputs (CSV or JSONL), one trace per row")
    p.add_argument("ladder")
    p.add_argument("--inputs", required=True, metavar="FILE",
                   help="a .csv or .jsonl file: column id names the row, context (or input) sets input.context, "
                        "any other column input.NAME")
    p.add_argument("--out", required=True, metavar="DIR", help="traces/, results.jsonl and results.csv go here")
    p.add_argument("--model", help="offline (default), script:PATH, local[:NAME], or a litellm model name")
    p.add_argument("--concurrency", type=_positive, default=4, metavar="N", help="rows run at once (default 4)")
    p.add_argument("--knob", action="append", default=[], metavar="K=V")
    p.add_argument("--slate", action="append", default=[], metavar="TITLE=DIR")
    p.add_argument("--isolate-slates", action="store_true",
                   help="give each row its own copy of every slate the ladder writes to (default: shared)")
    p.add_argument("--restart", action="store_true", help="run every row again (default: resume, skipping "
                                                          "rows finished with the same ladder and inputs)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--json", action="store_true", help="print one JSON summary line")
    add_model_options(p)
    p.set_defaults(fn=cmd_eval)
