"""The `ladr-lab` command line (SPEC §9); the only place errors become exit codes.

Exit codes: 0 success; 1 a ladder with problems (`validate`), or a run that did not complete
(`run`: error, aborted, budget_exhausted); 2 bad command-line usage.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import textwrap
from pathlib import Path

from .errors import ConfigError, ConfigErrors, LadrError


def _kv(items: list[str], flag: str) -> dict:
    import yaml
    out = {}
    for item in items or []:
        if "=" not in item:
            raise SystemExit(f"ladr-lab: {flag} takes NAME=VALUE (got {item!r})")
        k, v = item.split("=", 1)
        if flag == "--knob":
            try:
                out[k.strip()] = yaml.safe_load(v) if v.strip() else ""
            except yaml.YAMLError:
                out[k.strip()] = v
        else:
            out[k.strip()] = v
    return out


def _problems(exc: ConfigError) -> list[ConfigError]:
    return list(exc.errors) if isinstance(exc, ConfigErrors) else [exc]


def cmd_validate(a) -> int:
    """Print every problem of a ladder; exit 1 if any, else print OK and the worst-case call count."""
    from .config import check_text
    from .cost import cost_report
    path = Path(a.ladder)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        print(f"{path}: error: cannot read ladder file: {exc.strerror or exc}")
        return 1
    knobs = _kv(a.knob, "--knob")
    ladder, problems = check_text(text, file=str(path), knobs=knobs, base_dir=path.resolve().parent)
    errors = [p for p in problems if p.severity == "error"]
    if a.json:
        print(json.dumps({"ok": not errors, "problems": [
            {"severity": p.severity, "message": str(p), "step": p.step_id, "field": p.field, "file": p.file,
             "line": p.line, "column": p.column, "suggestion": p.suggestion} for p in problems]}))
        return 1 if errors else 0
    for p in problems:
        print(p.format())
    if errors:
        print(f"{len(errors)} error(s) in {path}")
        return 1
    report = cost_report(ladder)
    print(report.format())
    print("OK")
    return 0


class _Printer:
    """Prints a run round by round as its events arrive."""

    def __init__(self, stream, width: int = 100) -> None:
        self.out = stream
        self.width = width

    def _clip(self, text: str, n: int = 600) -> str:
        text = text.strip()
        return text if len(text) <= n else text[:n] + f" … [{len(text) - n} more chars]"

    def __call__(self, e: dict) -> None:
        w = self.out.write
        ind = "  " * e.get("depth", 0)
        kind = e["type"]
        if kind == "step_start":
            w(f"{ind}▶ step {e['step']} ({e['step_type']}, {e['nodes']} node{'s' if e['nodes'] != 1 else ''}"
              + (f", iteration {e['iteration']}" if e.get("iteration", 1) > 1 else "") + ")\n")
        elif kind == "llm_call":
            tag = "forced final" if e.get("forced_final") else (e.get("request_match") or "answer")
            w(f"{ind}  ── {e['step']} · node {e['node']} · round {e['round']} → {tag}\n")
            w(textwrap.indent(self._clip(e.get("output", "")), ind + "     │ ") + "\n")
            if e.get("reason"):
                w(f"{ind}     why: {e['reason']}\n")
            for f in e.get("fetched") or []:
                w(f"{ind}     {f['status']:<19} {f['mode']:<10} {f['path']}"
                  + (f"  ({f['chars']} chars)" if f.get("chars") else "") + "\n")
        elif kind == "gate":
            w(f"{ind}  ◆ gate {e['step']}#{e['node']}: {e['condition']} → {e['branch']} ({e['action']}"
              + (f" → {e['jump']}" if e.get("jump") else "") + f"); {e['reason']}\n")
        elif kind == "write":
            w(f"{ind}  ✎ write {e['target']} ({e['policy']}, {e.get('mechanism')}): {e['status']}"
              + (f" — {e['reason']}" if e.get("reason") else "") + "\n")
        elif kind == "call":
            w(f"{ind}  ↳ call {e['step']}#{e['node']}: {e['status']} (depth {e.get('child_depth')})\n")
        elif kind == "run_end" and not e.get("depth"):
            w(f"■ {e['status']} after {e['llm_calls']} model call(s)"
              + (f": {e['error']}" if e.get("error") else "") + "\n")
        self.out.flush()


def cmd_run(a) -> int:
    """Run a ladder; print its rounds (or, with --json, one summary line)."""
    from .config import load_ladder
    from .engine import Run
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
    try:
        run = Run(ladder, model=model, input=a.input, inputs=inputs, slates=slates, trace_out=a.trace_out,
                  run_dir=a.run_dir, tracer=None if a.json else _Printer(sys.stdout))
    except LadrError as exc:
        return _fail(a, str(exc), 1)
    res = run.run()
    if a.json:
        print(json.dumps(res.to_dict(), ensure_ascii=False))
    else:
        print("\nOutput:\n" + textwrap.indent(res.output or "(empty)", "  "))
        if a.trace_out:
            print(f"Trace: {a.trace_out}")
    return 0 if res.status == "completed" else 1


def _fail(a, message: str, code: int) -> int:
    if getattr(a, "json", False):
        print(json.dumps({"status": "error", "output": "", "llm_calls": 0, "error": message}))
    else:
        print(f"ladr-lab: {message}", file=sys.stderr)
    return code


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of every subcommand."""
    p = argparse.ArgumentParser(prog="ladr-lab", description="Author, run and debug LADR ladders.")
    sub = p.add_subparsers(dest="cmd", required=True)
    v = sub.add_parser("validate", help="check a ladder: every problem, with YAML line and column")
    v.add_argument("ladder")
    v.add_argument("--knob", action="append", default=[], metavar="K=V")
    v.add_argument("--json", action="store_true", help="print the problems as one JSON object")
    v.set_defaults(fn=cmd_validate)
    r = sub.add_parser("run", help="run a ladder and print its rounds")
    r.add_argument("ladder")
    r.add_argument("--input", help="sets input.context")
    r.add_argument("--input-json", help="a JSON object of other input fields (input.NAME)")
    r.add_argument("--model", help="offline (default), script:PATH, replay:TRACE, or a litellm model name")
    r.add_argument("--knob", action="append", default=[], metavar="K=V")
    r.add_argument("--slate", action="append", default=[], metavar="TITLE=DIR")
    r.add_argument("--trace-out", metavar="FILE.jsonl")
    r.add_argument("--run-dir", metavar="DIR", help="write run files (seed 004 record format) here")
    r.add_argument("--json", action="store_true", help="print one JSON summary line")
    r.set_defaults(fn=cmd_run)
    return p


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `ladr-lab` command."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    args = build_parser().parse_args(argv)
    try:
        return args.fn(args)
    except ConfigError as exc:
        for p in _problems(exc):
            print(p.format())
        return 1
    except LadrError as exc:
        print(f"ladr-lab: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
