"""`ladr-lab show TRACE`: a saved trace, printed round by round as `run` prints a live one."""
from __future__ import annotations

import json
import sys

from ..trace import RunEnd, RunStart, Trace, is_being_written
from .printer import RoundPrinter

__all__ = ["add_parser", "cmd_show"]


def cmd_show(a) -> int:
    """Print a recorded run: its header, then every round, gate and write, then how it ended."""
    trace = Trace.of(a.trace)
    printer = RoundPrinter(sys.stdout)
    for e in trace.events:
        if isinstance(e, RunStart) and not e.depth:
            inputs = json.dumps(e.inputs, ensure_ascii=False)
            print(f"run of {e.ladder} with {e.model}" + (f" (run {e.run_id})" if e.run_id else "")
                  + f"; inputs: {inputs if len(inputs) <= 200 else inputs[:200] + '…'}")
            continue
        if a.step and getattr(e, "step", None) != a.step and not isinstance(e, RunEnd):
            continue
        printer(e)
    if trace.torn_line is not None:
        print(f"(line {trace.torn_line}, the last, was cut mid-write and is skipped)")
    if not any(isinstance(e, RunEnd) for e in trace.events):
        if isinstance(a.trace, str) and is_being_written(a.trace):
            print("(the run is still going: its trace is being written; `ladr-lab show` again for more)")
        else:
            print("(the trace has no run_end: the run was cut short)")
    return 0


def add_parser(sub) -> None:
    """Register `show`."""
    s = sub.add_parser("show", help="print a saved trace round by round (as run prints it)")
    s.add_argument("trace", help="a JSONL trace (--trace-out of run)")
    s.add_argument("--step", metavar="ID", help="only this step's rounds, gates and writes")
    s.set_defaults(fn=cmd_show)
