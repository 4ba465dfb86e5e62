"""ExperimentView: an experiment's results (`experiment` / `load_experiment`): the summary per variant, the grid of
input rows × variants a page at a time (each cell a coloured pass/fail button whose tooltip says why it failed,
`≠` on rows where the compared pair of variants differs), filters (only where the pair disagrees, only failures),
and the cell clicked: its assertions and why they failed, its output, its trace (TraceView) and its diff
against the same row in the other variant of the pair (DiffView, built when its tab is opened).

An evaluation (`evaluate` / `load_evaluation`) is the experiment of one variant, and its grid is a table:
`ExperimentView(evaluation)` is an `EvaluationView` — rows by status, the results a page at a time filtered by
status, and any row's run opened in a TraceView."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from ..display import badge, concat, details, fmt_cost, join, kv_table, note, pre, tag
from ..errors import LadrError
from ..experiments import CellResult, Evaluation, Experiment, load_evaluation, load_experiment
from ..experiments.html import (
    cell_kind,
    cell_label,
    cell_title,
    charts_html,
    evaluation_html,
    evaluation_rows_html,
    experiment_html,
    reasons_html,
    summary_html,
)
from ..experiments.results import is_evaluation_folder
from .diff_view import DiffView
from .parts import PAGE, PagedTable, View, button, head_html, html, ipw, layout, message_html
from .trace_view import TraceView

__all__ = ["EvaluationView", "ExperimentView"]

ROWS_PER_PAGE = 25       # input rows a page of the grid shows (each row a button per variant)
_FAILING = ("fail", "error", "other")
_KIND_WORDS = {"pass": "passed", "fail": "failed", "error": "error", "other": "other status", "none": "no verdict"}

# the grid's cells are buttons dressed as the static view's badges (a <style> in an HTML widget applies to the page)
STYLE = """<style>
.ladr-widget .ladr-exp-grid { overflow-x: auto; }
.ladr-widget .jupyter-button.ladr-exp-cell { height: 22px; line-height: 20px; padding: 0 8px; margin: 1px 0;
  border-radius: 11px; font-size: 12px; border: 1px solid #6e7781; color: #57606a;
  background: rgba(110,119,129,0.08); box-shadow: none; }
.ladr-widget .jupyter-button.ladr-exp-pass { border-color: #1a7f37; color: #1a7f37; background: rgba(26,127,55,0.10); }
.ladr-widget .jupyter-button.ladr-exp-fail,
.ladr-widget .jupyter-button.ladr-exp-error { border-color: #cf222e; color: #cf222e; background: rgba(207,34,46,0.10); }
.ladr-widget .jupyter-button.ladr-exp-other { border-color: #bc4c00; color: #bc4c00; background: rgba(188,76,0,0.10); }
.ladr-widget .jupyter-button.ladr-exp-cell:hover { box-shadow: 0 0 0 1px currentColor; }
.ladr-widget .jupyter-button.ladr-exp-open { box-shadow: 0 0 0 2px #0969da; font-weight: 600; }
.ladr-widget .ladr-exp-rowid .widget-html-content { white-space: nowrap; overflow: hidden; text-overflow: ellipsis; }
</style>"""


class ExperimentView(View):
    """`ExperimentView(experiment)` (an Experiment or its output folder): the summary per variant, the grid of rows
    × variants a page at a time with its filters, and the cell clicked opened below it (trace and diff)."""

    css_class = "ladr-experiment-view"

    def __new__(cls, experiment: Any = None, **kw: Any) -> Any:
        # an evaluation (or its folder) is the experiment of one variant: its grid is a table, its view the
        # EvaluationView (made and returned here: not an ExperimentView, so Python does not initialise it again)
        if cls is ExperimentView and isinstance(experiment, (str, Path)) and is_evaluation_folder(experiment):
            experiment = load_evaluation(experiment)
        if cls is ExperimentView and isinstance(experiment, Evaluation):
            return EvaluationView(experiment, **{k: v for k, v in kw.items() if k == "page"})
        return super().__new__(cls)

    def __init__(self, experiment: Experiment | str | Path, *, page: int = ROWS_PER_PAGE,
                 pair: tuple[str, str] | None = None) -> None:
        super().__init__()
        w = ipw()
        self.experiment = experiment if isinstance(experiment, Experiment) else load_experiment(experiment)
        exp = self.experiment
        self.page = max(1, page)
        variants = list(exp.variants)
        a, b = pair or ((variants + variants)[:2] if variants else ("", ""))
        for name in (a, b):
            if variants and name not in variants:
                raise KeyError(f"no variant {name!r} (variants: {', '.join(variants)})")
        self.header = html(self._header_html())
        self.summary = html(str(summary_html(exp)), cls="ladr-exp-summary-box")
        self.charts = html(str(details(tag("b", "charts: pass rate per variant and per assertion, latency"),
                                       charts_html(exp), open=True)), cls="ladr-exp-charts-box")
        wide = {"description_width": "initial"}
        self.variant_a = w.Dropdown(options=variants, value=a or None, description="compare", style=wide,
                                    layout=w.Layout(width="auto"))
        self.variant_b = w.Dropdown(options=variants, value=b or None, description="with", style=wide,
                                    layout=w.Layout(width="auto"))
        self.only_disagree = w.Checkbox(value=False, description="only where they disagree", indent=False,
                                        layout=w.Layout(width="auto"))
        self.only_failures = w.Checkbox(value=False, description="only failures", indent=False,
                                        layout=w.Layout(width="auto"))
        self.prev = button("◀", key="arrow", width="2.6em")
        self.next = button("▶", key="arrow", width="2.6em")
        self.page_label = html(cls="ladr-exp-page")
        self.grid = w.GridBox([], layout=w.Layout(grid_template_columns=self._columns(), grid_gap="1px 8px",
                                                   align_items="center", margin="4px 0"))
        self.grid.add_class("ladr-exp-grid")
        self.cells: dict[tuple[str, str], Any] = {}       # (variant, row) -> the button shown for it
        self.cell_box = w.VBox([], layout=w.Layout(margin="6px 0 0 0"))
        self.cell_box.add_class("ladr-exp-cell-box")
        self.opened: tuple[str, str] | None = None
        self.trace_view: TraceView | None = None
        self.diff_view: DiffView | None = None
        self.tabs: Any = None
        self._diff_box: Any = None
        self._diffs: dict[tuple[str, str], dict[str, dict]] = {}
        self._by = {(str(c.variant), c.row): c for c in exp.cells}    # cells by (variant, row)
        style = html(STYLE)
        style.layout = layout("hidden", display="none")
        controls = w.HBox([self.variant_a, self.variant_b, self.only_disagree, self.only_failures],
                          layout=w.Layout(align_items="center", flex_flow="row wrap", grid_gap="0 12px"))
        pager = w.HBox([self.prev, self.page_label, self.next], layout=layout("row", align_items="center"))
        self.widget = self._root([style, self.header, self.summary, self.charts, controls, pager, self.grid,
                                  html(str(note("click a cell to open its trace and its diff against the other "
                                                "variant; hover it for why it failed; ↻: re-judged, not run")),
                                       cls="ladr-exp-hint"), self.cell_box])
        self._start = 0
        for box in (self.only_disagree, self.only_failures):
            box.observe(lambda _c: self.show(0), names="value")
        for pick in (self.variant_a, self.variant_b):
            pick.observe(lambda _c: self._pair_changed(), names="value")
        self.prev.on_click(lambda _b: self.show(self._start - self.page))
        self.next.on_click(lambda _b: self.show(self._start + self.page))
        self.show(0)

    # ---- what is shown ------------------------------------------------------------------------------------
    @property
    def pair(self) -> tuple[str, str]:
        """The two variants compared (the ≠ marks, the disagree filter, the diff of an opened cell)."""
        return str(self.variant_a.value or ""), str(self.variant_b.value or "")

    def disagreements(self) -> dict[str, dict]:
        """The rows where the compared pair differs (pass/fail, status or output), by row id."""
        a, b = self.pair
        if not a or not b or a == b:
            return {}
        got = self._diffs.get((a, b))
        if got is None:
            got = self._diffs[(a, b)] = {d["row"]: d for d in self.experiment.difference_rows(a, b)}
        return got

    def _cell(self, variant: str, row: str) -> CellResult | None:
        return self._by.get((str(variant), str(row)))

    def failing(self, row: str) -> bool:
        """Whether any variant's cell on `row` failed, ended in error or did not complete."""
        return any(c is not None and cell_kind(c) in _FAILING
                   for c in (self._cell(v, row) for v in self.experiment.variants))

    def rows(self) -> list[str]:
        """The input rows the filters let through, in input order."""
        ids = self.experiment.row_ids()
        if self.only_disagree.value:
            differ = self.disagreements()
            ids = [r for r in ids if r in differ]
        if self.only_failures.value:
            ids = [r for r in ids if self.failing(r)]
        return ids

    def show(self, start: int) -> None:
        """Show the page of the grid starting at row `start` (of the rows the filters let through)."""
        rows = self.rows()
        start = max(0, min(start, max(0, (len(rows) - 1) // self.page * self.page)))
        self._start = start
        shown = rows[start:start + self.page]
        for old in self.grid.children:
            old.close()
        self.cells = {}
        self.grid.children = self._grid_children(shown)
        a, b = self.pair
        differ = len(self.disagreements())
        where = f"  ·  {differ:,} where {a} and {b} differ" if a != b else "  ·  pick two variants to compare"
        self.page_label.value = str(note(f"rows {start + 1 if rows else 0:,}–{start + len(shown):,} of "
                                         f"{len(rows):,}{where}"))
        self.prev.disabled = start <= 0
        self.next.disabled = start + self.page >= len(rows)
        if not rows:
            self.grid.children = (html(str(note("no rows: the variants agree on every row" if
                                                self.only_disagree.value else "no rows match the filters"))),)

    def _columns(self) -> str:
        return f"minmax(6em, 18em) 1.8em repeat({max(1, len(self.experiment.variants))}, minmax(6.5em, 9em))"

    def _grid_children(self, rows: list[str]) -> tuple:
        a, b = self.pair
        heads = [html(str(tag("b", "row"))), html(str(tag("b", "≠", title=f"{a} and {b} differ")))]
        for v in self.experiment.variants:
            mark = " (compared)" if v in (a, b) and a != b else ""
            heads.append(html(str(tag("b", v, title=f"variant {v}{mark}",
                                      style="text-decoration: underline dotted" if mark else None)),
                              cls="ladr-exp-rowid"))
        out = list(heads)
        differ = self.disagreements()
        for rid in rows:
            title = self._row_title(rid)
            out.append(html(str(tag("span", rid, title=title)), cls="ladr-exp-rowid"))
            d = differ.get(rid)
            why = f"{a} and {b} differ in {d['differs']}" + (f" (assertions: {d['assertions']})"
                                                             if d and d.get("assertions") else "") if d else None
            out.append(html(str(badge("≠", "#8250df", title=why, cls="ladr-exp-disagree")) if d else ""))
            for v in self.experiment.variants:
                cell = self._cell(v, rid)
                if cell is None:
                    out.append(html(str(note("·"))))
                    continue
                kind = cell_kind(cell)
                btn = button(cell_label(cell), key="exp-cell", tooltip=cell_title(cell), width="100%")
                btn.add_class("ladr-exp-cell")
                btn.add_class(f"ladr-exp-{kind}")
                if self.opened == (v, rid):
                    btn.add_class("ladr-exp-open")
                btn.on_click(lambda _b, v=v, rid=rid: self.open_cell(v, rid))
                self.cells[(v, rid)] = btn
                out.append(btn)
        return tuple(out)

    def _row_title(self, rid: str) -> str:
        first = next((c for c in (self._cell(v, rid) for v in self.experiment.variants) if c is not None), None)
        fields = [f"{k}: {str(v)[:200]}" for k, v in (first.inputs if first is not None else {}).items()]
        return "\n".join([f"row {rid}", *fields])

    def _pair_changed(self) -> None:
        self.show(self._start)
        if self.opened is not None:
            self.open_cell(*self.opened)

    # ---- one cell -----------------------------------------------------------------------------------------
    def other(self, variant: str) -> str | None:
        """The variant an opened cell of `variant` is compared with: the other of the pair (the pair's first
        when `variant` is in neither), None when there is no other."""
        a, b = self.pair
        other = b if variant == a else a
        return other if other and other != variant else None

    def open_cell(self, variant: str, row: str) -> TraceView | None:
        """Open one cell below the grid: its assertions and why they failed, its output, its trace (returned)
        and a tab with its diff against the same row in the other variant."""
        row = str(row)
        cell = self._cell(variant, row)
        if cell is None:
            self.cell_box.children = (html(message_html(f"no cell {variant}/{row}", "error")),)
            return None
        for view in (self.trace_view, self.diff_view):
            if view is not None:
                view.close()
        for part in (*self.cell_box.children, self._diff_box):
            if part is not None:
                part.close()
        self.trace_view = self.diff_view = None
        prev, self.opened = self.opened, (variant, row)
        for key in (prev, self.opened):
            btn = self.cells.get(key) if key else None
            if btn is not None:
                (btn.add_class if key == self.opened else btn.remove_class)("ladr-exp-open")
        w = ipw()
        head = html(self.cell_html(cell), cls="ladr-exp-cell-head")
        try:
            self.trace_view = TraceView(self.experiment.trace(variant, row), live=False)
            trace_part: Any = self.trace_view.widget
        except Exception as exc:  # a missing or unreadable trace is that cell's problem, not the view's
            trace_part = html(message_html(f"no trace for {variant}/{row}: {type(exc).__name__}: {exc}", "error"))
        other = self.other(variant)
        self._diff_box = w.VBox([])
        self.tabs = w.Tab(children=[trace_part, self._diff_box] if other else [trace_part])
        self.tabs.set_title(0, f"Trace · {variant}")
        if other:
            self.tabs.set_title(1, f"Diff · {variant} vs {other}")
            self.tabs.observe(lambda c: self.open_diff() if c["new"] == 1 else None, names="selected_index")
        self.cell_box.children = (head, self.tabs)
        return self.trace_view

    def open_diff(self) -> DiffView | None:
        """The opened cell's run compared with the same row in the other variant (built once, shown in its tab)."""
        if self.opened is None:
            return None
        if self.diff_view is not None:
            return self.diff_view
        variant, row = self.opened
        other = self.other(variant)
        if other is None or self._diff_box is None:
            return None
        try:
            self.diff_view = DiffView(self.experiment.trace(variant, row), self.experiment.trace(other, row),
                                      names=(f"{variant}/{row}", f"{other}/{row}"))
        except Exception as exc:  # either trace may be missing (a cell that ended before its run)
            self._diff_box.children = (html(message_html(f"no diff of {variant} and {other} on row {row}: "
                                                         f"{type(exc).__name__}: {exc}", "error")),)
            return None
        self._diff_box.children = (self.diff_view.widget,)
        if self.tabs is not None and self.tabs.selected_index != 1:
            self.tabs.selected_index = 1
        return self.diff_view

    def cell_html(self, cell: CellResult | dict) -> str:
        """An opened cell's head: its mark, where it came from, its counts, its assertions with reasons, its
        input and its output."""
        cell = CellResult.of(cell)
        kind = cell_kind(cell)
        colors = {"pass": "#1a7f37", "fail": "#cf222e", "error": "#cf222e", "other": "#bc4c00"}
        tokens = int(cell.tokens_in or 0) + int(cell.tokens_out or 0)
        source = cell.source.text if cell.source is not None else "run"
        head = concat(tag("b", f"row {cell.row} · variant {cell.variant}  "),
                      badge(cell_label(cell), colors.get(kind, "#6e7781")),
                      note(f"  {_KIND_WORDS[kind]} · {cell.status} · {cell.llm_calls or 0} call(s), "
                           f"{tokens:,} tokens, {fmt_cost(cell.cost)} · {source}"))
        inputs = [(k, str(v)) for k, v in cell.inputs.items()]
        parts = [tag("div", head), kv_table(inputs) if inputs else None, reasons_html(cell)]
        if cell.error:
            parts.append(tag("div", f"{cell.error_type or 'error'}: {cell.error}",
                             style="color:#cf222e;white-space:pre-wrap"))
        parts += [tag("div", tag("b", "output")), pre(str(cell.output or ""), 3000, max_height="12em")]
        return head_html(join(parts))

    def static_html(self) -> str:
        """The experiment as a static view, for a notebook saved without widget state (its charts after it)."""
        return experiment_html(self.experiment, max_rows=self.page, pair=self.pair) + self.charts.value

    def _header_html(self) -> str:
        exp = self.experiment
        kinds: dict[str, int] = {}
        for c in exp.cells:
            kinds[cell_kind(c)] = kinds.get(cell_kind(c), 0) + 1
        colors = {"pass": "#1a7f37", "fail": "#cf222e", "error": "#cf222e", "other": "#bc4c00"}
        counts = join((concat(badge(_KIND_WORDS[k], colors.get(k, "#6e7781")), f" {n}")
                       for k, n in sorted(kinds.items(), key=lambda kv: list(_KIND_WORDS).index(kv[0]))), "  ")
        return head_html(tag("b", f"Experiment: {len(exp.variants)} variant(s) × {len(exp.row_ids()):,} row(s)  "),
                         counts, note(f"  ·  {exp.out}"), note("  (interrupted)") if exp.interrupted else None)


class EvaluationView(View):
    """`EvaluationView(evaluation)` (an Evaluation or its output folder): counts by status, the results table a
    page at a time (filtered by status), and the trace of the row picked — what `ExperimentView` shows of an
    experiment of one variant with no assertions, whose grid is a table."""

    css_class = "ladr-evaluation-view"

    def __init__(self, evaluation: Evaluation | str | Path, *, page: int = PAGE) -> None:
        super().__init__()
        w = ipw()
        if not isinstance(evaluation, Evaluation):
            if not is_evaluation_folder(evaluation):
                raise LadrError(f"{evaluation} is not an evaluation's folder (an experiment's is shown by "
                                "ExperimentView)")
            evaluation = load_evaluation(evaluation)
        self.evaluation = self.experiment = ev = evaluation
        self.page = page
        counts = ev.counts()
        head = concat(tag("b", f"Evaluation: {len(ev.rows):,} rows  "),
                      join((concat(badge(s), f" {n}") for s, n in sorted(counts.items())), "  "),
                      note(f"  ·  {fmt_cost(sum(float(c.cost or 0) for c in ev.cells))}  ·  {ev.out}"),
                      note("  (interrupted)") if ev.interrupted else None)
        self.header = html(head_html(head))
        self.status = w.Dropdown(options=["all", *sorted(counts)], value="all", description="status")
        self.pages = PagedTable(self.rows, evaluation_rows_html, size=page, controls=[self.status],
                                pick=lambda r, _i: str(r["row"]), on_pick=self.open_row, cls="ladr-eval-table")
        self.prev, self.next, self.page_label = self.pages.prev, self.pages.next, self.pages.page_label
        self.table, self.row_pick = self.pages.table, self.pages.pick
        self.row_box = w.VBox([])
        self.trace_view: TraceView | None = None
        self.widget = self._root([self.header, self.pages.widget, self.row_box])
        self.status.observe(lambda _c: self.pages.show(0), names="value")

    def rows(self) -> list[dict]:
        """The rows the status filter lets through (their results lines)."""
        s = self.status.value
        return [r for r in self.evaluation.rows if s == "all" or r.get("status") == s]

    def show(self, start: int) -> None:
        """Show the page of rows starting at `start`."""
        self.pages.show(start)

    def open_row(self, row: str) -> TraceView | None:
        """Show one row's run in a TraceView below the table."""
        try:
            trace = self.evaluation.trace(str(row))
        except (KeyError, OSError, ValueError) as exc:
            self.row_box.children = (html(message_html(f"row {row}: {exc}", "error")),)
            return None
        except Exception as exc:  # an unreadable trace file is that row's problem, not the view's
            self.row_box.children = (html(message_html(f"row {row}: {type(exc).__name__}: {exc}",
                                                                   "error")),)
            return None
        if self.trace_view is not None:
            self.trace_view.close()
        self.trace_view = TraceView(trace, live=False)
        self.row_box.children = (html(head_html(tag("b", f"row {row}"))), self.trace_view.widget)
        return self.trace_view

    def static_html(self) -> str:
        """The evaluation as a static view, for a notebook saved without widget state."""
        return evaluation_html(self.evaluation, max_rows=self.page)
