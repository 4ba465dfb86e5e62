"""`ladr-lab run LADDER`: run a ladder and print its rounds (or one JSON summary line)."""
from __future__ import annotations

import argparse
import json
import sys
import textwrap
from pathlib import Path

from ..errors import ConfigError, LadrError
from ._common import _fail, _kv, _problems
from .printer import RoundPrinter


def cmd_run(a) -> int:
    """Run a ladder; print its rounds (or, with --json, one summary line)."""
    from ..config import load_ladder
    from ..engine import Run
    knobs = _kv(a.knob, "--knob")
    slates = _kv(a.slate, "--slate")
    inputs = {}
    if a.input_json:
        try:
            inputs = json.loads(a.input_json)
        except ValueError as exc:
            return _fail(a, f"--input-json is not valid JSON: {exc}", 2)
        if not isinstance(inputs, dict):
            return _fail(a, "--input-json must be a JSON object of input fields", 2)
    try:
        ladder = load_ladder(a.ladder, knobs=knobs)
    except ConfigError as exc:
        if not a.json:
            for p in _problems(exc):
                print(p.format())
        return _fail(a, "invalid ladder: " + "; ".join(p.format() for p in _problems(exc)), 1)
    model = a.model
    if model and model.split(":", 1)[0] in ("script", "replay") and ":" in model:
        # a path typed on the command line is relative to where the command runs (else to the ladder)
        kind, rel = model.split(":", 1)
        if not Path(rel).is_absolute() and Path(rel).exists():
            model = f"{kind}:{Path(rel).resolve()}"
    if a.then:
        if not (model or "").startswith("replay:"):
            return _fail(a, "--then goes with --model replay:TRACE (mixed replay)", 2)
    try:
        if a.then:
            from ..models import ReplayModel
            path = Path(model.split(":", 1)[1])
            model = ReplayModel(path if path.is_absolute() else ladder.base_dir / path, then=a.then,
                                base_dir=ladder.base_dir)
        run = Run(ladder, model=model, input=a.input, inputs=inputs, slates=slates, trace_out=a.trace_out,
                  run_dir=a.run_dir, tracer=None if a.json else RoundPrinter(sys.stdout),
                  max_fetch_chars=a.max_fetch_chars, max_round_chars=a.max_round_chars)
    except LadrError as exc:
        return _fail(a, str(exc), 1)
    res = run.run()
    if a.json:
        print(json.dumps(res.to_dict(), ensure_ascii=False))
    else:
        if res.divergence is not None and res.status == "completed":
            print(f"replay diverged at step {res.divergence['step']} node {res.divergence['node']} round "
                  f"{res.divergence['round']}; {res.live_calls} call(s) answered live")
        print("\nOutput:\n" + textwrap.indent(res.output or "(empty)", "  "))
        if a.trace_out:
            print(f"Trace: {a.trace_out}")
    return 0 if res.status == "completed" else 1


def add_parser(sub) -> None:
    """Register `run`."""
    r = sub.add_parser("run", help="run a ladder and print its rounds")
    r.add_argument("ladder")
    r.add_argument("--input", help="sets input.context")
    r.add_argument("--input-json", help="a JSON object of other input fields (input.NAME)")
    r.add_argument("--model", help="offline (default), script:PATH, replay:TRACE, or a litellm model name")
    r.add_argument("--then", metavar="MODEL", help="with --model replay:TRACE: answer live with MODEL from the "
                                                   "first divergence on (mixed replay) instead of stopping there")
    r.add_argument("--knob", action="append", default=[], metavar="K=V")
    r.add_argument("--slate", action="append", default=[], metavar="TITLE=DIR")
    r.add_argument("--trace-out", metavar="FILE.jsonl")
    r.add_argument("--run-dir", metavar="DIR", help="write run files (seed 004 record format) here")
    r.add_argument("--max-fetch-chars", type=_positive, metavar="N",
                   help="cut one retrieved entry (or a slateRead file) at N characters (default 50,000)")
    r.add_argument("--max-round-chars", type=_positive, metavar="N",
                   help="bound one round's retrieved block to N characters (default 200,000)")
    r.add_argument("--json", action="store_true", help="print one JSON summary line")
    r.set_defaults(fn=cmd_run)


def _positive(text: str) -> int:
    try:
        n = int(text.replace(",", "").replace("_", ""))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1 (got {n})")
    return n
