"""The input columns a ladder reads (`from: input.context` → `context`), and checking an inputs table has them."""
from __future__ import annotations

import dataclasses
import re
from collections import Counter

from ..config.model import Ladder, Source
from ..errors import LadrError

__all__ = ["check_input_columns", "input_columns", "most_common_error"]

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


def most_common_error(rows: list[dict]) -> tuple[str, int] | None:
    """The error most rows failed with, and how many rows did (None: no row failed)."""
    errors = Counter(str(r.get("error")) for r in rows if r.get("status") != "completed" and r.get("error"))
    return errors.most_common(1)[0] if errors else None
