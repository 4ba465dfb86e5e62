"""One experiment cell as a unit of work: the cell to run (`evaluation.cells.CellSpec`), the variant it belongs to,
the assertions its result is checked against, and `execute`, which runs it and checks them — on a thread of the
local pool or in a Ray worker alike (everything here pickles)."""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..config.model import Ladder
from ..evaluation.cells import CellSpec, run_cell
from .assertions import Assertion, check_all

__all__ = ["CellTask", "check_row", "execute", "asserts_fingerprint"]


@dataclass(frozen=True)
class CellTask:
    """A cell to run: its spec, its variant's name (the key of its ladder), its assertions and the grader of
    model-graded ones (a model name; None: unchecked, see `runner.default_grader`)."""

    spec: CellSpec
    variant: str
    asserts: tuple[Assertion, ...] = ()
    grader: str | None = None
    source: str = "run"


def asserts_fingerprint(asserts: tuple[Assertion, ...], grader: str | None) -> str:
    """What a cell's assertion results depend on besides its run: a changed assertion is re-checked, not re-run."""
    data = json.dumps([[a.kind, a.value if not callable(a.value) else
                        f"{getattr(a.value, '__module__', '')}:{getattr(a.value, '__qualname__', 'fn')}",
                        a.name, a.negate, a.threshold] for a in asserts] + [grader], sort_keys=True, default=str)
    return hashlib.sha256(data.encode()).hexdigest()[:16]


def check_row(row: dict[str, Any], asserts: tuple[Assertion, ...], out: str | Path, *, grader=None) -> dict:
    """The row with one column per assertion (True, False, or None when it could not be checked), `passed`
    (every assertion passed; None without assertions) and `reasons` (why each failed or could not be checked)."""
    from ..trace import Trace
    trace = None
    path = Path(out) / str(row.get("trace", ""))
    if row.get("trace") and path.is_file():
        trace = Trace.of(path)
    results = check_all(asserts, row, trace, grader=grader) if asserts else {}
    row = dict(row)
    for name, res in results.items():
        row[name] = res.passed
    verdicts = [r.passed for r in results.values()]
    row["passed"] = None if not verdicts else False if False in verdicts else True if all(verdicts) else None
    row["reasons"] = {name: res.reason for name, res in results.items() if res.passed is not True}
    row["asserts"] = list(results)
    return row


def execute(task: CellTask, ladder: Ladder, *, limiter=None) -> dict[str, Any]:
    """Run the cell, then check its assertions: the cell's result row."""
    row = run_cell(task.spec, ladder, limiter=limiter)
    row["source"] = task.source
    if task.spec.replay and row.get("live_calls"):
        row["source"] = f"{task.source}, {row['live_calls']} call(s) live"
    row = check_row(row, task.asserts, task.spec.out, grader=task.grader)
    row["asserts_fp"] = asserts_fingerprint(task.asserts, task.grader)
    return row
