"""ComparisonView: two batch runs compared (`Experiment.compare`, a `Comparison`): the counts per variant, the
changed cells a page at a time (filtered by kind of change and by variant), each a button, and the cell clicked:
both sides' verdicts with their reasons and outputs, and the DiffView of its two traces."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from ..display import concat, join, note, pre, tag
from ..experiments import Comparison, Experiment, load_results
from ..experiments.compare import CHANGES
from ..experiments.html import (
    CHANGE_COLORS,
    cell_label,
    cell_title,
    change_badge,
    comparison_html,
    comparison_summary_html,
)
from .diff_view import DiffView
from .parts import PAGE, PagedTable, View, button, head_html, html, ipw, layout, message_html

__all__ = ["ComparisonView"]

_COLUMNS = "minmax(5em, 12em) minmax(5em, 16em) 8.5em 6.5em 6.5em minmax(8em, 1fr)"
_HEAD = ("variant", "row", "change", "before", "after", "what changed")
_SLUGS = {"pass→fail": "regressed", "fail→pass": "fixed", "status": "status", "assertions": "assertions",
          "output": "output", "new": "new", "missing": "missing"}

# the change buttons dressed as the static view's badges, in its colours (a <style> in an HTML widget applies to
# the page)
STYLE = "<style>\n" + "".join(
    f".ladr-widget .jupyter-button.ladr-cmp-{_SLUGS[k]} {{ height: 22px; line-height: 20px; padding: 0 8px; "
    f"border-radius: 11px; font-size: 12px; box-shadow: none; border: 1px solid {c}; color: {c}; "
    f"background: transparent; }}\n" for k, c in CHANGE_COLORS.items()) + "</style>"


class ComparisonView(View):
    """`ComparisonView(comparison)`, or `ComparisonView(before, after)` (Experiments or their folders): the
    counts per variant, the changed cells with their filters, and the cell clicked opened below (DiffView)."""

    css_class = "ladr-comparison-view"

    def __init__(self, before: Comparison | Experiment | str | Path, after: Experiment | str | Path | None = None, *,
                 page: int = PAGE, variants: dict[str, str] | None = None) -> None:
        super().__init__()
        w = ipw()
        if isinstance(before, Comparison):
            self.comparison = before
        else:
            if after is None:
                raise TypeError("ComparisonView(before, after) compares two runs: give both (or a Comparison)")
            first = before if isinstance(before, Experiment) else load_results(before)
            self.comparison = first.compare(after, variants=variants)
        cmp = self.comparison
        counts = cmp.counts()
        self.header = html(head_html(
            tag("b", f"Comparison: {len(cmp.changes):,} changed cell(s)  "),
            join((concat(change_badge(k), f" {n}") for k, n in counts.items() if n), "  ")
            if cmp.changes else note("no cell changed"),
            note(f"  ·  {cmp.before.out} → {cmp.after.out}")))
        self.summary = html(str(comparison_summary_html(cmp)), cls="ladr-cmp-summary-box")
        wide = {"description_width": "initial"}
        self.change = w.Dropdown(options=["all", *[k for k in CHANGES if counts[k]]], value="all",
                                 description="change", style=wide, layout=w.Layout(width="auto"))
        self.variant = w.Dropdown(options=["all", *dict.fromkeys(r["variant"] for r in cmp.changes)], value="all",
                                  description="variant", style=wide, layout=w.Layout(width="auto"))
        self.buttons: dict[tuple[str, str], Any] = {}     # (variant, row) -> the button of a changed cell shown
        self._grid: Any = None
        self.pages = PagedTable(self.rows, self._render, size=page, controls=[self.change, self.variant],
                                cls="ladr-cmp-table", empty="no changed cell matches the filters", defer=True)
        self.prev, self.next, self.page_label = self.pages.prev, self.pages.next, self.pages.page_label
        self.opened: tuple[str, str] | None = None
        self.diff_view: DiffView | None = None
        self.detail = w.VBox([])
        self.detail.add_class("ladr-cmp-detail")
        style = html(STYLE)
        style.layout = layout("hidden", display="none")
        self.widget = self._root([style, self.header, self.summary, self.pages.widget,
                                  html(str(note("click a change to open both cells and the diff of their runs")),
                                       cls="ladr-cmp-hint"), self.detail])
        for pick in (self.change, self.variant):
            pick.observe(lambda _c: self.show(0), names="value")
        self.show(0)

    def rows(self) -> list[dict]:
        """The changed cells the filters let through."""
        kind, variant = self.change.value, self.variant.value
        return [r for r in self.comparison.changes
                if (kind == "all" or r["change"] == kind) and (variant == "all" or r["variant"] == variant)]

    def show(self, start: int) -> None:
        """Show the page of changed cells starting at `start`."""
        self.pages.show(start)

    def _render(self, rows: list[dict], start: int, size: int) -> list:
        w = ipw()
        if self._grid is not None:
            self._grid.close()
        self.buttons = {}
        children: list[Any] = [html(str(tag("b", h))) for h in _HEAD]
        for r in rows[start:start + size]:
            before, after = self.comparison.cells(r["variant"], r["row"])
            btn = button(r["change"], key="cmp-change", tooltip=f"open {r['variant']}/{r['row']}: both cells and "
                                                                 "the diff of their runs", width="100%")
            btn.add_class("ladr-cmp-change")
            btn.add_class(f"ladr-cmp-{_SLUGS.get(r['change'], 'status')}")
            btn.on_click(lambda _b, v=r["variant"], rid=r["row"]: self.open_change(v, rid))
            self.buttons[(r["variant"], r["row"])] = btn
            what = r["differs"].replace("assertions", f"assertions ({r['assertions']})") if r["assertions"] \
                else r["differs"]
            children += [html(str(tag("span", r["variant"]))), html(str(tag("span", r["row"]))), btn,
                         html(str(tag("span", cell_label(before), title=cell_title(before)) if before else note("·"))),
                         html(str(tag("span", cell_label(after), title=cell_title(after)) if after else note("·"))),
                         html(str(note(what)))]
        self._grid = w.GridBox(children, layout=w.Layout(grid_template_columns=_COLUMNS, grid_gap="1px 8px",
                                                         align_items="center", margin="4px 0"))
        self._grid.add_class("ladr-cmp-grid")
        return [self._grid]

    def open_change(self, variant: str, row: str) -> DiffView | None:
        """Open one changed cell below the list: both sides' verdicts, reasons and outputs, and (when both runs
        have the cell) the DiffView of its two traces, returned."""
        if self.diff_view is not None:
            self.diff_view.close()
        for part in self.detail.children:
            part.close()
        self.diff_view = None
        self.opened = (variant, str(row))
        try:
            before, after = self.comparison.cells(variant, str(row))
        except KeyError as exc:
            self.detail.children = (html(message_html(str(exc.args[0]), "error")),)
            return None
        where = f"{variant}/{row}" if variant else str(row)
        change = next((r["change"] for r in self.comparison.changes
                       if r["variant"] == variant and r["row"] == str(row)), "unchanged")

        def side(name: str, cell: Any) -> Any:
            if cell is None:
                return tag("div", tag("b", f"{name}: "), note("no such cell in this run"))
            return tag("div", tag("b", f"{name}: {cell_label(cell)} "), note(cell_title(cell).replace("\n", "; ")),
                       pre(str(cell.output or ""), 2000, max_height="8em"))

        head = html(head_html(tag("div", change_badge(change), " ", tag("b", where)), side("before", before),
                              side("after", after)), cls="ladr-cmp-cell-head")
        parts: list[Any] = [head]
        if before is not None and after is not None:
            try:
                a, b = self.comparison.traces(variant, str(row))
                self.diff_view = DiffView(a, b, names=(f"before {where}", f"after {where}"))
                parts.append(self.diff_view.widget)
            except Exception as exc:  # a missing or unreadable trace is that cell's problem, not the view's
                parts.append(html(message_html(f"no diff of {where}: {type(exc).__name__}: {exc}", "error")))
        self.detail.children = tuple(parts)
        return self.diff_view

    def static_html(self) -> str:
        """The comparison as a static view, for a notebook saved without widget state."""
        return comparison_html(self.comparison)
