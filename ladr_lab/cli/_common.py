"""What every subcommand shares: NAME=VALUE options, problem lists and the failure line."""
from __future__ import annotations

import json
import sys

from ..errors import ConfigError, ConfigErrors

USAGE_ERROR = 2


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


def _fail(a, message: str, code: int) -> int:
    if getattr(a, "json", False):
        print(json.dumps({"status": "error", "output": "", "llm_calls": 0, "error": message}))
    else:
        print(f"ladr-lab: {message}", file=sys.stderr)
    return code
