"""The results folder of a batch run — an `evaluate` or an `experiment()` — read and written here, and nowhere else.

    results.jsonl      one line per finished cell (`CellResult.to_dict`), appended as cells finish: what a resumed
                       run and every loader read (the last line of a cell wins; a line cut by a kill is skipped)
    results.csv        the table, in input order, written at the end
    summary.csv        an experiment's summary per variant, written at the end
    experiment.json    an experiment's manifest: its variants, their bases, the assertions, the model, the rows
    traces/ROW.jsonl             an evaluation's trace per row
    VARIANT/traces/ROW.jsonl     an experiment's trace per cell (slates copied per cell under VARIANT/slates/ROW)
    VARIANT/traces/ROW@R.jsonl   run R (2..N) of a cell repeated N times (`repeat=N`); `@` is never in a safe name
"""
from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from .cells import CellResult, safe_name

__all__ = ["MANIFEST", "RESULTS", "SUMMARY", "TABLE", "Manifest", "Recorder", "cell_key", "latest_cells",
           "read_manifest", "read_results", "slates_path", "trace_path", "write_manifest"]

RESULTS = "results.jsonl"
TABLE = "results.csv"
SUMMARY = "summary.csv"
MANIFEST = "experiment.json"


def _run_name(row: str, repeat: int) -> str:
    return safe_name(row) + (f"@{repeat}" if repeat != 1 else "")


def trace_path(variant: str | None, row: str, repeat: int = 1) -> str:
    """Where a cell's trace goes, relative to the folder: `traces/ROW.jsonl` for an evaluation's row (no variant),
    `VARIANT/traces/ROW.jsonl` for an experiment's cell, `VARIANT/traces/ROW@R.jsonl` for its run R > 1."""
    name = f"traces/{_run_name(row, repeat)}.jsonl"
    return name if variant is None else f"{safe_name(variant)}/{name}"


def slates_path(variant: str | None, row: str, repeat: int = 1) -> str:
    """Where a cell's own copies of the slates it writes go, relative to the folder: `slates/ROW` (an evaluation's
    row), `VARIANT/slates/ROW` (an experiment's cell), `VARIANT/slates/ROW@R` (its run R > 1)."""
    name = f"slates/{_run_name(row, repeat)}"
    return name if variant is None else f"{safe_name(variant)}/{name}"


def read_results(path: str | Path) -> list[dict]:
    """The result lines of a results.jsonl (each a dict with a `row`), in file order; a line cut by a kill (or
    anything else that is not one) is skipped: that cell is simply not finished."""
    path = Path(path)
    out: list[dict] = []
    if path.is_file():
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                rec = json.loads(line)
            except ValueError:
                continue
            if isinstance(rec, dict) and "row" in rec:
                out.append(rec)
    return out


def cell_key(variant: str | None, row: str, repeat: Any = 1) -> tuple[str | None, str, int]:
    """How a cell of an experiment is found again: (variant, row, repeat)."""
    return variant, str(row), repeat if isinstance(repeat, int) and not isinstance(repeat, bool) else 1


def latest_cells(out: str | Path, *, by_variant: bool = True) -> list[CellResult]:
    """The last result of each cell in a folder's results.jsonl, in the order cells first finished; keyed by
    (variant, row, repeat), or by row alone (`by_variant=False`: how an evaluation reads its folder)."""
    latest: dict[Any, dict] = {}
    for rec in read_results(Path(out) / RESULTS):
        latest[cell_key(rec.get("variant"), rec["row"], rec.get("repeat", 1)) if by_variant
               else str(rec["row"])] = rec
    return [CellResult.from_dict(rec) for rec in latest.values()]


class Recorder:
    """Appends finished cells to results.jsonl, one line each, under a lock (cells finish on many threads)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.lock = threading.Lock()

    def add(self, cell: CellResult | dict) -> None:
        """Append one cell's line (flushed at once: a kill loses at most the line being written)."""
        row = cell.to_dict() if isinstance(cell, CellResult) else cell
        line = json.dumps(row, ensure_ascii=False, default=str) + "\n"
        with self.lock, open(self.path, "a", encoding="utf-8", errors="backslashreplace") as fh:
            fh.write(line)
            fh.flush()

    def restart(self) -> None:
        """Forget every finished cell (`resume=False`)."""
        if self.path.exists():
            self.path.unlink()


class Manifest:
    """An experiment's `experiment.json` as read: the variants' names, the rows' ids (None when not recorded) and
    the notes."""

    def __init__(self, variants: list[str], rows: list[str] | None, notes: list[str]) -> None:
        self.variants, self.rows, self.notes = variants, rows, notes


def read_manifest(out: str | Path) -> Manifest | None:
    """The folder's experiment.json (None: an evaluation's folder, or a manifest that cannot be read)."""
    path = Path(out) / MANIFEST
    if not path.is_file():
        return None
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
        variants = [str(v["name"]) for v in doc["variants"]]
        rows = [str(r) for r in doc["rows"]] if isinstance(doc.get("rows"), list) else None
        return Manifest(variants, rows, [str(n) for n in doc.get("notes") or ()])
    except (ValueError, KeyError, TypeError):
        return None


def write_manifest(out: str | Path, variants: Iterable[Any], common: Iterable[Any], model: Any, grader: str | None,
                   rows: list[str], notes: list[str], extra: dict[str, Any] | None = None) -> None:
    """Write experiment.json (atomically): the variants (name, source, ladder, knobs, base), the common assertions
    (with their weight, metric and threshold when set), the model and grader, the rows' ids and the notes; `extra`
    (the cell threshold, the repeats, the filters that chose the cells) only when given."""
    def one(a: Any) -> dict[str, Any]:
        d = {"type": ("not-" if a.negate else "") + a.kind, "name": a.name,
             "value": a.value if not callable(a.value) else getattr(a.value, "__qualname__", "python")}
        d.update({k: getattr(a, k) for k, default in (("weight", 1.0), ("metric", None), ("threshold", None),
                                                      ("provider", None)) if getattr(a, k, default) != default})
        return d

    doc = {"variants": [{"name": v.name, "source": v.source, "ladder": v.ladder.name, "knobs": dict(v.knobs),
                         "base": v.base} for v in variants],
           "asserts": [one(a) for a in common],
           "model": model if isinstance(model, str) or model is None else getattr(model, "name", "?"),
           "grader": grader, "rows": rows, "notes": notes, **(extra or {})}
    out = Path(out)
    tmp = out / f"{MANIFEST}.tmp"
    tmp.write_text(json.dumps(doc, indent=2, default=str), encoding="utf-8")
    os.replace(tmp, out / MANIFEST)
