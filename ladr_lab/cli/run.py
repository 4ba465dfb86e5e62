"""`ladr-lab run LADDER`: run a ladder and print its rounds (or one JSON summary line)."""
from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path
from typing import Any

from ..errors import ConfigError, LadrError
from ._common import _fail, _kv, _problems, _whole
from .live import LiveCalls
from .model_args import add_cache_options, add_model_options, cache_arg, model_options
from .otel_args import add_otel_options, otel_options
from .printer import RoundPrinter

__all__ = ["add_parser", "cmd_run"]


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
        problems = _problems(exc)
        if a.json:      # the one JSON line carries every problem (as data too: ConfigError.to_dict())
            return _fail(a, "invalid ladder: " + "; ".join(p.format() for p in problems), 1, exc)
        for p in problems:
            print(p.format())
        errors = sum(p.severity == "error" for p in problems)
        return _fail(a, f"invalid ladder: {errors} error(s) in {a.ladder}", 1, exc)
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
        knowledge = _knowledge(a.knowledge, a.run_dir)
    except ValueError as exc:
        return _fail(a, str(exc), 2)
    try:
        options = model_options(a)
        if a.then:
            from ..models import get_model
            model = get_model(model, then=a.then, base_dir=ladder.base_dir, options=options, cache=cache_arg(a))
            options = {}
        otel: Any = False
        if (exporting := otel_options(a)) is not None:
            from ..otel import OtelExport
            otel = OtelExport(**exporting)
        # on a terminal the calls stream as they are made (`--no-stream` to turn it off); never into --json's line
        live = LiveCalls(sys.stdout) if not a.json and a.stream and _terminal(sys.stdout) else None
        run = Run(ladder, model=model, input=a.input, inputs=inputs, slates=slates, trace_out=a.trace_out,
                  run_dir=a.run_dir, tracer=None if a.json else RoundPrinter(sys.stdout, live=live),
                  max_fetch_chars=a.max_fetch_chars, max_round_chars=a.max_round_chars, knowledge=knowledge,
                  model_options=options, otel=otel, cache=cache_arg(a), watch=live)
        check = getattr(run.model, "check", None)
        if callable(check):     # a missing API key or unknown model: said now, not after litellm's retries
            check()
    except LadrError as exc:
        return _fail(a, str(exc), 1, exc)
    for note in run.slate_notes:      # a slate or folder that does not exist yet: said, never silently empty
        print(f"ladr-lab: warning: {note}", file=sys.stderr)
    try:
        res = run.run()
    finally:
        if live is not None:
            live.close()
        for sources in knowledge.values():
            for source in sources:
                source.close()
    # a replay that made fewer calls than its recording diverged too, though the run itself completed
    divergence = res.divergence or {}
    unserved = bool(divergence.get("unserved"))
    if a.json:
        print(json.dumps(res.to_dict(), ensure_ascii=False))
    else:
        if unserved:
            print(f"replay diverged: {divergence['diff']}")
        elif res.divergence is not None and res.status == "completed":
            print(f"replay diverged at step {res.divergence['step']} node {res.divergence['node']} round "
                  f"{res.divergence['round']}; {res.live_calls} call(s) answered live")
        print("\nOutput:\n" + textwrap.indent(res.output or "(empty)", "  "))
        if a.trace_out:
            print(f"Trace: {a.trace_out}")
    if run.otel is not None:
        failed = [f.exception for f in run.trace.listener_errors if f.listener is run.otel]
        if failed:
            print(f"ladr-lab: {failed[0]}", file=sys.stderr)
            return 1
        if not a.json:
            print(f"OpenTelemetry: {run.otel.spans} span(s) exported")
    return 0 if res.status == "completed" and not unserved else 1


def add_parser(sub) -> None:
    """Register `run`."""
    r = sub.add_parser("run", help="run a ladder and print its rounds")
    r.add_argument("ladder")
    r.add_argument("--input", help="sets input.context")
    r.add_argument("--input-json", help="a JSON object of other input fields (input.NAME)")
    r.add_argument("--model", help="offline (default), script:PATH, replay:TRACE, local[:NAME|:PATH.gguf], or a "
                                   "litellm model name")
    r.add_argument("--then", metavar="MODEL", help="with --model replay:TRACE: answer live with MODEL from the "
                                                   "first divergence on (mixed replay) instead of stopping there")
    r.add_argument("--knob", action="append", default=[], metavar="K=V")
    r.add_argument("--slate", action="append", default=[], metavar="TITLE=DIR")
    r.add_argument("--trace-out", metavar="FILE.jsonl")
    r.add_argument("--run-dir", metavar="DIR", help="write run files (seed 004 record format) here")
    r.add_argument("--knowledge", action="append", default=[], metavar="STEP=RUN_DIR[,owner=A][,top_k=K]...",
                   help="bind a run-file source to a step: its evidence becomes a prompt field (options: owner, "
                        "top_k, name, scope=run|episode, mask)")
    r.add_argument("--max-fetch-chars", type=_positive, metavar="N",
                   help="cut one retrieved entry (or a slateRead file) at N characters (default 50,000)")
    r.add_argument("--max-round-chars", type=_positive, metavar="N",
                   help="bound one round's retrieved block to N characters (default 200,000)")
    r.add_argument("--json", action="store_true", help="print one JSON summary line")
    r.add_argument("--no-stream", dest="stream", action="store_false",
                   help="on a terminal, do not show the model's text as it writes (streaming is only ever shown on a "
                        "terminal, never with --json or into a pipe)")
    add_model_options(r)
    add_cache_options(r)
    add_otel_options(r)
    r.set_defaults(fn=cmd_run)


def _knowledge(items: list[str], run_dir: str | None) -> dict:
    """`--knowledge STEP=RUN_DIR[,owner=A][,top_k=K][,name=F][,scope=run|episode][,mask]` -> {step: [source]}."""
    from ..runfiles import RunFileSource
    out: dict[str, list] = {}
    for item in items:
        step, sep, rest = item.partition("=")
        if not sep or not step or not rest:
            raise ValueError(f"--knowledge takes STEP=RUN_DIR[,owner=NAME][,top_k=K]... (got {item!r})")
        folder, *opts = rest.split(",")
        kw: dict = {"owner": step}
        for opt in opts:
            key, eq, value = opt.partition("=")
            if key == "mask" and not eq:
                kw["mask"] = True
            elif key in ("owner", "name", "scope") and value:
                kw[key] = value
            elif key == "top_k" and value.isdigit() and int(value) > 0:
                kw["top_k"] = int(value)
            else:
                raise ValueError(f"--knowledge: unknown or empty option {opt!r} (owner, top_k, name, scope, mask)")
        if run_dir and Path(folder).resolve() == Path(run_dir).resolve():
            Path(folder).mkdir(parents=True, exist_ok=True)   # the run is about to write there
        out.setdefault(step, []).append(RunFileSource(folder, **kw))
    return out


def _terminal(out) -> bool:
    """Whether `out` is a terminal (where a live region can be drawn and erased)."""
    try:
        return bool(out.isatty())
    except (AttributeError, ValueError):
        return False


def _positive(text: str) -> int:
    return _whole(text, 1)
