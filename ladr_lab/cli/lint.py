"""`ladr-lab lint LADDER [--trace T]... [--slate TITLE=DIR]...`: seed 001's pitfalls, from the ladder and from recorded runs."""
from __future__ import annotations

import json

from ._common import _kv

__all__ = ["add_parser", "cmd_lint"]


def cmd_lint(a) -> int:
    """Print every finding (step, evidence, fix); exit 1 when there is one above info, or the ladder is invalid."""
    from ..analysis import lint
    report = lint(a.ladder, a.trace, knobs=_kv(a.knob, "--knob") or None, slates=_kv(a.slate, "--slate") or None)
    if a.json:
        print(json.dumps(report.to_dict(), ensure_ascii=False, default=str))
    else:
        print(report.format())
    return 0 if report.ok else 1


def add_parser(sub) -> None:
    """Register `lint`."""
    p = sub.add_parser("lint", help="find seed 001's pitfalls in a ladder and in traces of its runs")
    p.add_argument("ladder")
    p.add_argument("--trace", action="append", default=[], metavar="T.jsonl",
                   help="a recorded run of this ladder to look for evidence in (repeatable)")
    p.add_argument("--knob", action="append", default=[], metavar="K=V")
    p.add_argument("--slate", action="append", default=[], metavar="TITLE=DIR",
                   help="the directory a slate is bound to, as for run (for listing-hides-files)")
    p.add_argument("--json", action="store_true", help="print the report as one JSON object")
    p.set_defaults(fn=cmd_lint)
