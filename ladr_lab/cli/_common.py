"""What every subcommand shares: NAME=VALUE options, problem lists and the failure line."""
from __future__ import annotations

import json
import sys

from ..errors import ConfigError, ConfigErrors


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


def _fail(a, message: str, code: int) -> int:
    if getattr(a, "json", False):
        print(json.dumps({"status": "error", "output": "", "llm_calls": 0, "error": message}))
    else:
        print(f"ladr-lab: {message}", file=sys.stderr)
    return code
