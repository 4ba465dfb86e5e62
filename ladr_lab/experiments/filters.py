"""Which cells an experiment runs: its variants by name (`variants=`), its rows by id pattern (`rows=`), a seeded
sample of rows (`sample=`, `sample_seed=`), and the (variant, row) cells that failed or ended in an error in an
earlier experiment's folder (`filter_failing=`, `filter_errors=`), as promptfoo's `--filter-pattern`, `-n`,
`--filter-failing` and `--filter-errors-only` choose tests.

Decisions (docs/experiments.md, "Filters"):

- A row pattern is a glob on the row id (`fnmatch.fnmatchcase`: `*`, `?`, `[...]`, case-sensitive, the whole id),
  or, written `re:REGEX`, a regular expression searched in it (`re.search`); several patterns keep a row that any
  matches. Row ids are names (`q1`, `dedup-3`), which globs fit; a regex is there for what a glob cannot say.
- The sample is `random.Random(seed).sample` of the rows the patterns kept (seed 0 unless given), kept in input
  order; a sample at least as large as the rows is every row.
- "Failing" cells are what the default exit code counts as failures: `passed` False (an assertion failed, or the
  weighted score missed the threshold), or a status other than `completed` (an error, aborted, budget_exhausted,
  unsettled). An unchecked cell that completed is not failing. "Errors" are the cells with status `error`. Given
  both, a cell either one names runs. A (variant, row) is named when any of its repeats is; a variant or row the
  experiment no longer has is left out and said in a note.
"""
from __future__ import annotations

import difflib
import fnmatch
import random
import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from ..errors import UsageError
from .cells import CellResult

__all__ = ["DEFAULT_SEED", "failed_cells", "match_rows", "pick_variants", "row_patterns", "sample_rows",
           "split_names"]

DEFAULT_SEED = 0


def split_names(value: Any, what: str) -> list[str]:
    """Names given as `A,B`, a list of such texts, or None (no names)."""
    if value is None:
        return []
    items = [value] if isinstance(value, str) else list(value)
    out: list[str] = []
    for item in items:
        if not isinstance(item, str):
            raise UsageError(f"{what}: give names as text, got {item!r}")
        out.extend(x.strip() for x in item.split(",") if x.strip())
    return out


def pick_variants(names: Sequence[str], wanted: Iterable[str]) -> list[str]:
    """The names in `wanted` (in the experiment's order), each checked against `names` (a UsageError with a did-you-mean
    for one the experiment lacks)."""
    wanted = list(wanted)
    for w in wanted:
        if w not in names:
            near = difflib.get_close_matches(w, list(names), n=1, cutoff=0.6)
            hint = f' (did you mean "{near[0]}"?)' if near else ""
            raise UsageError(f'variants: no variant "{w}"{hint}; the variants are {", ".join(names)}')
    return [n for n in names if n in wanted]


def row_patterns(value: Any) -> list[str]:
    """The row patterns given (one text or a list), each checked: a `re:` pattern must compile."""
    pats = [value] if isinstance(value, str) else list(value or [])
    out = []
    for p in pats:
        if not isinstance(p, str) or not p.strip():
            raise UsageError(f"rows: give a glob or re:REGEX on row ids, got {p!r}")
        if p.startswith("re:"):
            try:
                re.compile(p[3:])
            except re.error as exc:
                raise UsageError(f"rows: {p[3:]!r} is not a valid regular expression ({exc})") from None
        out.append(p)
    return out


def _matches(pattern: str, rid: str) -> bool:
    if pattern.startswith("re:"):
        return re.search(pattern[3:], rid) is not None
    return fnmatch.fnmatchcase(rid, pattern)


def match_rows(ids: Sequence[str], patterns: Sequence[str]) -> list[str]:
    """The ids any pattern matches, in order (every id when there is no pattern)."""
    if not patterns:
        return list(ids)
    return [rid for rid in ids if any(_matches(p, rid) for p in patterns)]


def sample_rows(ids: Sequence[str], n: int | None, seed: int | None = None) -> list[str]:
    """A seeded random sample of `n` ids, in their order (all of them when n is None or at least their number)."""
    if n is None or n >= len(ids):
        return list(ids)
    chosen = set(random.Random(DEFAULT_SEED if seed is None else seed).sample(range(len(ids)), n))
    return [rid for i, rid in enumerate(ids) if i in chosen]


def _failing(cell: CellResult) -> bool:
    return cell.passed is False or cell.status != "completed"


def failed_cells(folder: str | Path, *, failing: bool, errors: bool) -> set[tuple[str | None, str]]:
    """The (variant, row) cells of an earlier experiment's folder that failed (`failing`) or ended in an error
    (`errors`); a UsageError when the folder holds no results."""
    from .results import is_results_folder, load_results
    if not is_results_folder(folder):
        raise UsageError(f"{folder} holds no experiment results (no results.jsonl) to filter by")
    cells = load_results(folder).cells
    return {(c.variant, c.row) for c in cells
            if (failing and _failing(c)) or (errors and c.status == "error")}
