"""Two batch runs compared cell by cell (`Experiment.compare(other)`, `ladr-lab eval compare A B`): the cells whose
verdict, status, assertion results or output changed from the run `before` to the run `after`, by variant, with
counts per variant, and the two traces of any changed cell for a run diff (`analysis.diff_runs`, the DiffView).

Cells are matched by (variant, row id). Variants are matched by name; when each run has exactly one variant they
are matched whatever their names (a ladder saved under a new name is still the same experiment), and `variants=`
({before name: after name}) pairs any others. A cell only one run has is `new` (only after) or `missing` (only
before).

A cell is *passing* when nothing about it would make `ladr-lab eval` exit 1: it completed and no assertion failed
(an assertion that could not be checked fails nothing). Each changed cell gets one `change`, the first that applies:

    pass→fail     passing before, not after (a failed assertion, an error, aborted, unsettled, ...): a regression
    fail→pass     the other way round
    status        the status or the overall verdict changed, passing on neither side or on both (fail → error,
                  pass → unchecked)
    assertions    the same status and verdict, but some assertion's result changed (or it is checked on one side
                  only)
    output        only the output changed
    new, missing  the cell is in one run only

`differs` lists everything that changed (`passed`, `status`, `assertions`, `output`), so a `pass→fail` cell whose
output changed too says both.
"""
from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..display import Displayable
from .cells import CellResult

if TYPE_CHECKING:
    from ..analysis import RunDiff
    from ..trace import Trace
    from .results import Experiment

__all__ = ["CHANGES", "Comparison", "VariantPair", "is_passing"]

# the kinds of change, in the order a cell is classified (and columns are shown)
CHANGES = ("pass→fail", "fail→pass", "status", "assertions", "output", "new", "missing")


def is_passing(cell: CellResult | None) -> bool:
    """Whether a cell would not by itself make `ladr-lab eval` exit 1: it completed and no assertion failed."""
    return cell is not None and cell.status == "completed" and cell.passed is not False


class VariantPair:
    """A variant as the two runs name it (`before`, `after`: None for an evaluation's cells, which have no variant),
    whether each run has it, and the name the comparison shows (`name`: the one name, or `before → after` when
    they differ; "" for an evaluation's)."""

    def __init__(self, before: str | None, after: str | None, *, in_before: bool = True,
                 in_after: bool = True) -> None:
        self.before, self.after = before, after
        self.in_before, self.in_after = in_before, in_after
        one = before if in_before else after
        self.name = f"{before} → {after}" if in_before and in_after and before != after else \
            ("" if one is None else str(one))

    def __repr__(self) -> str:
        return f"VariantPair({self.before!r}, {self.after!r}, in_before={self.in_before}, in_after={self.in_after})"


def _names(exp: Experiment) -> list[str | None]:
    """The variants of a run in their order (None: an evaluation's cells, which have no variant)."""
    return list(dict.fromkeys([*exp.variants, *(c.variant for c in exp.cells)]))


def _pairs(before: Experiment, after: Experiment, given: Mapping[str, str] | None) -> list[VariantPair]:
    a, b = _names(before), _names(after)
    pairing: dict[str | None, str | None] = {k: v for k, v in (given or {}).items()}
    for old, new in pairing.items():
        if old not in a:
            raise KeyError(f"no variant {old!r} before (variants: {', '.join(map(str, a)) or 'none'})")
        if new not in b:
            raise KeyError(f"no variant {new!r} after (variants: {', '.join(map(str, b)) or 'none'})")
    if not pairing and len(a) == 1 and len(b) == 1:
        pairing = {a[0]: b[0]}      # one variant each: the same experiment, whatever the names
    taken = set(pairing.values())
    pairs = []
    for name in a:
        if name in pairing:
            pairs.append(VariantPair(name, pairing[name]))
        elif name in b and name not in taken:
            pairs.append(VariantPair(name, name))
        else:
            pairs.append(VariantPair(name, None, in_after=False))
    matched = {p.after for p in pairs if p.in_after}
    pairs += [VariantPair(None, name, in_before=False) for name in b if name not in matched]
    return pairs


def _classify(ca: CellResult | None, cb: CellResult | None) -> tuple[str, list[str], list[str]]:
    """The cell's change ("" when none), everything that differs, and the assertions whose result differs."""
    if ca is None or cb is None:
        return ("new" if ca is None else "missing"), [], []
    names = [n for n in dict.fromkeys([*ca.asserts, *cb.asserts]) if ca.check(n) != cb.check(n)]
    differs = [key for key, x, y in (("passed", ca.passed, cb.passed), ("status", ca.status, cb.status))
               if x != y] + (["assertions"] if names else []) + (["output"] if ca.output != cb.output else [])
    if not differs:
        return "", [], []
    was, now = is_passing(ca), is_passing(cb)
    if was != now:
        change = "pass→fail" if was else "fail→pass"
    elif "passed" in differs or "status" in differs:
        change = "status"
    else:
        change = differs[0]
    return change, differs, names


def _rate(cells: list[CellResult]) -> float:
    judged = [c for c in cells if c.asserts]
    return (sum(c.passed is True for c in judged) / len(judged)) if judged else math.nan


class Comparison(Displayable):
    """What changed from one batch run (`before`) to another (`after`): `changes`, a row (dict) per changed cell
    — variant, row, change, differs, the assertions whose result differs, and both sides' mark, status, verdict
    and output — in variant order then row order; `summary_rows()` the counts per variant."""

    def __init__(self, before: Experiment, after: Experiment, *, variants: Mapping[str, str] | None = None) -> None:
        self.before, self.after = before, after
        self.pairs = _pairs(before, after, variants)
        self._by_name = {p.name: p for p in self.pairs}
        # a repeated cell (`repeat=N`) is compared by its first run, as the grid shows it
        self._cells_a = {(c.variant, c.row): c for c in before.cells if c.repeat == 1}
        self._cells_b = {(c.variant, c.row): c for c in after.cells if c.repeat == 1}
        self.changes: list[dict] = []
        self._unchanged: dict[str, int] = {}
        for pair in self.pairs:
            self._unchanged[pair.name] = 0
            for rid in self._row_ids(pair):
                ca, cb = self.cells(pair.name, rid)
                change, differs, names = _classify(ca, cb)
                if not change:
                    self._unchanged[pair.name] += 1
                    continue
                self.changes.append(self._row(pair, rid, change, differs, names, ca, cb))

    def _sides(self, pair: VariantPair) -> tuple[list[CellResult], list[CellResult]]:
        """The variant's cells in each run (in the run's order)."""
        return ([c for c in self.before.cells if c.variant == pair.before] if pair.in_before else [],
                [c for c in self.after.cells if c.variant == pair.after] if pair.in_after else [])

    def _row_ids(self, pair: VariantPair) -> list[str]:
        a, b = self._sides(pair)
        return list(dict.fromkeys([*(c.row for c in a), *(c.row for c in b)]))

    @staticmethod
    def _row(pair: VariantPair, rid: str, change: str, differs: list[str], names: list[str],
             ca: CellResult | None, cb: CellResult | None) -> dict:
        from .html import cell_label
        return {"variant": pair.name, "row": rid, "change": change, "differs": ", ".join(differs),
                "assertions": ", ".join(names),
                "before": cell_label(ca) if ca is not None else "", "after": cell_label(cb) if cb is not None else "",
                "status.before": None if ca is None else ca.status, "status.after": None if cb is None else cb.status,
                "passed.before": None if ca is None else ca.passed, "passed.after": None if cb is None else cb.passed,
                "output.before": None if ca is None else ca.output, "output.after": None if cb is None else cb.output}

    # ---- cells and traces ---------------------------------------------------------------------------------
    def pair(self, variant: str) -> VariantPair:
        """The variant pair a comparison row names (`variant` as the row says it)."""
        try:
            return self._by_name[variant]
        except KeyError:
            raise KeyError(f"no variant {variant!r} in the comparison (variants: "
                           f"{', '.join(self._by_name) or 'none'})") from None

    def cells(self, variant: str, row: str) -> tuple[CellResult | None, CellResult | None]:
        """The cell before and after (None where that run has no such cell)."""
        p = self.pair(variant)
        return (self._cells_a.get((p.before, str(row))) if p.in_before else None,
                self._cells_b.get((p.after, str(row))) if p.in_after else None)

    def traces(self, variant: str, row: str) -> tuple[Trace, Trace]:
        """Both runs' traces of one cell (a KeyError when either run lacks the cell)."""
        p = self.pair(variant)
        ca, cb = self.cells(variant, row)
        if ca is None or cb is None:
            raise KeyError(f"cell {variant}/{row} is only in the run {'after' if ca is None else 'before'}: "
                           "nothing to diff")
        return self.before.trace(p.before, str(row)), self.after.trace(p.after, str(row))

    def diff(self, variant: str, row: str) -> RunDiff:
        """The run diff of one cell's two traces (`analysis.diff_runs`), its sides named by run and cell."""
        from ..analysis import diff_runs
        a, b = self.traces(variant, row)
        d = diff_runs(a, b)
        d.a, d.b = f"before {variant}/{row}", f"after {variant}/{row}"
        return d

    # ---- what changed ---------------------------------------------------------------------------------------
    @property
    def regressions(self) -> list[dict]:
        """The changed cells that went from passing to not passing (`pass→fail`)."""
        return [r for r in self.changes if r["change"] == "pass→fail"]

    @property
    def identical(self) -> bool:
        """Whether no cell changed (nor is in one run only)."""
        return not self.changes

    def counts(self) -> dict[str, int]:
        """How many cells changed in each way (every kind of change, 0 included)."""
        out = dict.fromkeys(CHANGES, 0)
        for r in self.changes:
            out[r["change"]] += 1
        return out

    def summary_rows(self) -> list[dict]:
        """A row per variant: its cells before and after, how many changed in each way, how many did not, and the
        pass rate before, after and its change (NaN: no cell with assertions)."""
        out = []
        for pair in self.pairs:
            cells_a, cells_b = self._sides(pair)
            row: dict[str, Any] = {"variant": pair.name, "cells.before": len(cells_a), "cells.after": len(cells_b)}
            row.update(dict.fromkeys(CHANGES, 0))
            for r in self.changes:
                if r["variant"] == pair.name:
                    row[r["change"]] += 1
            a, b = _rate(cells_a), _rate(cells_b)
            row.update({"unchanged": self._unchanged[pair.name], "pass_rate.before": a, "pass_rate.after": b,
                        "Δ pass_rate": b - a})
            out.append(row)
        return out

    def summary(self):
        """`summary_rows` as a pandas DataFrame."""
        import pandas as pd
        return pd.DataFrame(self.summary_rows())

    def to_dataframe(self):
        """The changed cells as a pandas DataFrame (a row per cell)."""
        import pandas as pd
        return pd.DataFrame(self.changes, columns=["variant", "row", "change", "differs", "assertions", "before",
                                                   "after", "status.before", "status.after", "passed.before",
                                                   "passed.after", "output.before", "output.after"])

    @property
    def table(self):
        """The changed cells as a pandas DataFrame (`to_dataframe()`)."""
        return self.to_dataframe()

    def to_dict(self) -> dict:
        """The comparison as JSON-ready data (NaN as None): both folders, whether anything changed, the count of
        regressions, the counts by change, the summary per variant and every changed cell."""
        summary = [{k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in s.items()}
                   for s in self.summary_rows()]
        return {"before": str(self.before.out), "after": str(self.after.out), "identical": self.identical,
                "regressions": len(self.regressions), "counts": self.counts(), "summary": summary,
                "changes": self.changes}

    # ---- display --------------------------------------------------------------------------------------------
    def __repr__(self) -> str:
        changed = ", ".join(f"{n} {k}" for k, n in self.counts().items() if n)
        return f"<Comparison: {len(self.changes)} cell(s) changed ({changed or 'none'}), {self.before.out} → " \
               f"{self.after.out}>"

    def format(self, max_rows: int = 50) -> str:
        """The counts per variant, then the changed cells (the first `max_rows`), as `ladr-lab eval compare`
        prints them."""
        def pct(x: float) -> str:
            return "—" if math.isnan(x) else f"{x:.0%}"

        lines = [f"before: {self.before.out}", f"after:  {self.after.out}"]
        for s in self.summary_rows():
            changed = ", ".join(f"{s[k]} {k}" for k in CHANGES if s[k])
            lines.append(f"{s['variant'] or '(evaluation)':<20} pass {pct(s['pass_rate.before']):>4} → "
                         f"{pct(s['pass_rate.after']):>4}  {changed or 'nothing changed'}"
                         f" ({s['unchanged']} unchanged)")
        for r in self.changes[:max_rows]:
            what = r["differs"].replace("assertions", f"assertions ({r['assertions']})") if r["assertions"] \
                else r["differs"]
            where = f"{r['variant']}/{r['row']}" if r["variant"] else r["row"]
            lines.append(f"  {r['change']:<10} {where}: {r['before'] or '·'} → {r['after'] or '·'}"
                         + (f"  [{what}]" if what else ""))
        if len(self.changes) > max_rows:
            lines.append(f"  … {len(self.changes) - max_rows:,} more changed cell(s)")
        if self.identical:
            lines.append("no cell changed")
        return "\n".join(lines)

    def to_text(self) -> str:
        """What `ladr-lab eval compare` prints."""
        return self.format()

    def to_html(self) -> str:
        """The counts per variant and the changed cells as a static HTML view."""
        from .html import comparison_html
        return comparison_html(self)

    def to_page(self) -> str:
        """The comparison as a standalone HTML page (no script or style from elsewhere): the static view, and each
        changed cell's run diff in a part that opens on a click."""
        from .html import comparison_page
        return comparison_page(self)
