"""What every subcommand shares: NAME=VALUE options, problem lists and the failure line."""
from __future__ import annotations

import argparse
import json
import sys

from ..errors import ConfigError, ConfigErrors, LadrError, UsageError

__all__ = ["USAGE_ERROR"]

USAGE_ERROR = 2


def _usage(message: str) -> None:
    """A usage error found after parsing: the message on standard error, then exit 2 (as argparse's own)."""
    print(f"ladr-lab: {message}", file=sys.stderr)
    raise SystemExit(USAGE_ERROR)


def _whole(text: str, least: int) -> int:
    """A flag's whole number (`1,000` and `1_000` read as 1000) of at least `least`; else argparse's usage error."""
    try:
        n = int(text.replace(",", "").replace("_", ""))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if n < least:
        raise argparse.ArgumentTypeError(f"must be at least {least} (got {n})")
    return n


def _kv(items: list[str], flag: str) -> dict:
    """`NAME=VALUE` options as a dict; `--knob` values are read as YAML scalars (`3` is a number).

    An item without `=` is a usage error: the message goes to standard error and the command exits 2.
    """
    from ..config.reader import load_yaml
    out = {}
    for item in items or []:
        if "=" not in item:
            print(f"ladr-lab: {flag} takes NAME=VALUE (got {item!r})", file=sys.stderr)
            raise SystemExit(USAGE_ERROR)
        k, v = item.split("=", 1)
        if flag == "--knob":
            try:
                out[k.strip()] = load_yaml(v)[0] if v.strip() else ""
            except ConfigError:  # not YAML (e.g. "a: b: c"): the text itself
                out[k.strip()] = v
        else:
            out[k.strip()] = v
    return out


def _problems(exc: ConfigError) -> list[ConfigError]:
    return list(exc.errors) if isinstance(exc, ConfigErrors) else [exc]


def _error_json(message: str, exc: BaseException | None = None) -> dict:
    """What a command prints with --json when it fails before (or instead of) its own answer: `run --json`'s
    summary (`RunResult.to_dict()`, SPEC §9: status, output, llm_calls, error, and more) of a run that never
    started, the error as data, and for a ladder's problems every one of them as `ConfigError.to_dict()` (as
    `validate --json` prints) under `problems`."""
    from ..engine.run import RunResult
    problems = _problems(exc) if isinstance(exc, ConfigError) else []
    first = problems[0] if problems else None
    where = (f"{first.file}:{first.line}:{first.column}" if first is not None and first.file and first.line
             else None)
    result = RunResult(status="error", output="", llm_calls=0, error=message,
                       error_type=type(exc).__name__ if exc is not None else None,
                       error_step=getattr(exc, "step_id", None),
                       error_path=list(first.path) if first is not None and first.path else None, error_where=where)
    return {**result.to_dict(), "problems": [p.to_dict() for p in problems]}


def _fail(a, message: str, code: int, exc: BaseException | None = None) -> int:
    if getattr(a, "json", False):
        print(json.dumps(_error_json(message, exc), ensure_ascii=False, default=str))
    else:
        print(f"ladr-lab: {message}", file=sys.stderr)
    return code


def _json_errors(a, exc: LadrError) -> int:
    """A command's LadrError with --json: one JSON object (never plain `FILE:LINE:COL: error:` lines); exit 1, or 2
    for a usage error (a bad assertion, an experiment file's problems). Without --json the error is raised again for
    `main` to print."""
    if not getattr(a, "json", False):
        raise exc
    what = "invalid experiment file: " if isinstance(exc, UsageError) else "invalid ladder: "
    message = what + "; ".join(p.format() for p in _problems(exc)) if isinstance(exc, ConfigError) else str(exc)
    return _fail(a, message, USAGE_ERROR if isinstance(exc, UsageError) else 1, exc)
