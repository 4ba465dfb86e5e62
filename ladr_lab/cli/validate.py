"""`ladr-lab validate LADDER`: every problem at once, then the worst-case model calls."""
from __future__ import annotations

import json
from pathlib import Path

from ..errors import ConfigError
from ._common import _kv

__all__ = ["add_parser", "cmd_validate"]


def cmd_validate(a) -> int:
    """Print every problem of a ladder; exit 1 if any, else print OK and the worst-case call count."""
    from ..config import check_text
    from ..config.disk import with_disk_rules
    from ..config.loader import read_ladder_file
    from ..cost import cost_report
    path = Path(a.ladder)
    knobs = _kv(a.knob, "--knob")
    try:
        text = read_ladder_file(path)
    except ConfigError as exc:
        ladder, problems = None, [exc]
    else:
        ladder, problems = check_text(text, file=str(path), knobs=knobs, base_dir=path.resolve().parent,
                                      registry=with_disk_rules())
    errors = [p for p in problems if p.severity == "error"]
    if a.json:
        print(json.dumps({"ok": not errors, "problems": [p.to_dict() for p in problems]}, default=str))
        return 1 if errors else 0
    for p in problems:
        print(p.format())
    if errors:
        print(f"{len(errors)} error(s) in {path}")
        return 1
    assert ladder is not None   # no errors, so the ladder was built
    report = cost_report(ladder)
    print(report.format())
    print("OK")
    return 0


def add_parser(sub) -> None:
    """Register `validate`."""
    v = sub.add_parser("validate", help="check a ladder: every problem, with YAML line and column")
    v.add_argument("ladder")
    v.add_argument("--knob", action="append", default=[], metavar="K=V")
    v.add_argument("--json", action="store_true", help="print the problems as one JSON object")
    v.set_defaults(fn=cmd_validate)
