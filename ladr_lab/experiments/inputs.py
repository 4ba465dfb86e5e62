"""A batch run's inputs: the rows of a table (`load_inputs`: a CSV or JSONL file, a DataFrame, a list of mappings),
the input columns a ladder reads (`from: input.context` → `context`), and checking an inputs table has them."""
from __future__ import annotations

import dataclasses
import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

from ..config.model import Ladder, Source
from ..errors import LadrError
from .cells import CellResult, safe_name

__all__ = ["check_input_columns", "input_columns", "load_inputs", "most_common_error"]


def load_inputs(inputs: Any) -> list[tuple[str, dict]]:
    """(row id, input fields) for each row of a DataFrame, a CSV or JSONL file, or a list of mappings.

    Column `id` names the row (default: its 1-based position); `context` (or `input`) sets input.context;
    every other column sets input.NAME. CSV cells are read as text."""
    records: list[dict]
    if isinstance(inputs, (str, Path)):
        path = Path(inputs)
        if not path.is_file():
            raise LadrError(f"inputs file {path} does not exist")
        if path.suffix.lower() in (".jsonl", ".ndjson"):
            records = []
            for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                if line.strip():
                    try:
                        value = json.loads(line)
                    except ValueError as exc:
                        raise LadrError(f"{path}:{n}: not a JSON line ({exc})") from None
                    if not isinstance(value, dict):
                        raise LadrError(f"{path}:{n}: each line must be a JSON object of input fields")
                    records.append(value)
        elif path.suffix.lower() == ".csv":
            import pandas as pd
            try:
                records = pd.read_csv(path, dtype=str, keep_default_na=False).to_dict("records")
            except Exception as exc:
                raise LadrError(f"{path}: not a CSV file pandas can read ({exc})") from None
        else:
            raise LadrError(f"inputs file {path}: give a .csv or a .jsonl file")
    elif hasattr(inputs, "to_dict") and hasattr(inputs, "columns"):
        records = inputs.to_dict("records")
    else:
        records = [dict(r) for r in inputs]
    rows: list[tuple[str, dict]] = []
    for pos, rec in enumerate(records, 1):
        rec = {str(k): v for k, v in rec.items()}
        rid = str(rec.pop("id", pos))
        if "context" not in rec and "input" in rec:
            rec["context"] = rec.pop("input")
        rows.append((rid, rec))
    ids = [r for r, _ in rows]
    dup = sorted({r for r in ids if ids.count(r) > 1})
    if dup:
        raise LadrError(f"row ids must be unique (repeated: {', '.join(dup[:5])})")
    safe = [safe_name(r) for r in ids]
    if len(set(safe)) != len(safe):
        raise LadrError("two row ids map to the same trace file name; use ids of letters, digits, '.', '_' or '-'")
    return rows


_TEMPLATE = re.compile(r"\{\{\s*input\.([A-Za-z_][\w-]*)")


def input_columns(ladder: Ladder) -> list[str]:
    """The input names the ladder's own steps read (fields, templates), sorted; a called ladder's are its own."""
    names: set[str] = set()
    seen: set[int] = set()

    def walk(obj) -> None:
        if id(obj) in seen or isinstance(obj, Ladder):
            return  # a called ladder reads the inputs its call gives it, not the evaluation's columns
        seen.add(id(obj))
        if isinstance(obj, Source):
            if obj.kind == "input":
                names.add(obj.text or "context")
        elif isinstance(obj, str):
            names.update(_TEMPLATE.findall(obj))
        elif dataclasses.is_dataclass(obj) and not isinstance(obj, type):
            for f in dataclasses.fields(obj):
                walk(getattr(obj, f.name, None))
        elif isinstance(obj, (list, tuple, set, frozenset)):
            for x in obj:
                walk(x)
        elif isinstance(obj, dict):
            for x in obj.values():
                walk(x)

    walk(ladder.steps)
    return sorted(names)


def check_input_columns(ladder: Ladder, rows: list[tuple[str, dict]], where: str = "the inputs") -> None:
    """Raise a LadrError naming the expected and the given columns when no row has a column the ladder reads."""
    expected = input_columns(ladder)
    given = sorted({k for _, fields in rows for k in fields})
    missing = [c for c in expected if c not in given]
    if rows and missing:
        raise LadrError(f"{where}: no column {', '.join(missing)}; the ladder reads input column(s) "
                        f"{', '.join(expected)}, the file has {', '.join(given) or 'none'} (besides id; a column "
                        "`input` also sets context)")


def most_common_error(cells: list[CellResult]) -> tuple[str, int] | None:
    """The error most cells failed with, and how many cells did (None: no cell failed)."""
    errors = Counter(str(c.error) for c in cells if c.status != "completed" and c.error)
    return errors.most_common(1)[0] if errors else None
