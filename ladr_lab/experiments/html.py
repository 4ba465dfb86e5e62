"""The static views of a batch run: an `Experiment` — the summary per variant, the grid of input rows × variants
(each cell pass, fail or its status, the failing assertions' reasons in its tooltip, a `≠` on rows where two
variants differ) and why each failing cell failed — and an `Evaluation`, whose one variant is a table: counts by
status, where its files are, and a row per input.

The grid and the table are bounded (`ROWS` rows; the rest counted): the widget (`ExperimentView`) pages through all.
A *page* (`experiment_page`, `evaluation_page`: `--html FILE`) is a standalone document instead: the whole grid,
each mark a link to its cell's part below (assertions and why, error, inputs, output, trace), at most `PAGE_CELLS`
cells. A `Comparison` of two runs has a view too (`comparison_html`): the counts per variant and the changed cells;
its page (`comparison_page`) adds each changed cell's run diff, opened on a click.
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..analysis.html import ROWS
from ..display import (
    Html,
    badge,
    bar_rows,
    concat,
    details,
    fmt_cost,
    join,
    kv_table,
    note,
    page,
    pre,
    root,
    table,
    tag,
)
from .cells import CellResult

if TYPE_CHECKING:
    from .compare import Comparison
    from .results import Evaluation, Experiment

__all__ = ["CHANGE_COLORS", "FAILURES", "PAGE_CELLS", "PAGE_DIFFS", "PAGE_STYLE", "cell_details_html", "cell_kind", "cell_label",
           "cell_mark", "cell_title", "cells_html", "change_badge", "charts_html", "comparison_html", "comparison_page",
           "comparison_summary_html", "evaluation_html",
           "evaluation_page", "evaluation_rows_html", "experiment_html", "experiment_page", "failures_html",
           "grid_html", "reasons_html", "summary_html"]

Cell = CellResult | Mapping[str, Any]     # a cell, or its results line

FAILURES = 50          # failing cells the static view explains (the rest counted)
PAGE_CELLS = 5000      # cells a page shows in full (the grid links all; the rest are counted)
PAGE_DIFFS = ROWS      # changed cells whose run diff a comparison's page holds
CHANGE_COLORS = {"pass→fail": "#cf222e", "fail→pass": "#1a7f37", "status": "#bc4c00", "assertions": "#8250df",
                 "output": "#0969da", "new": "#6e7781", "missing": "#6e7781"}
_COLORS = {"pass": "#1a7f37", "fail": "#cf222e", "error": "#cf222e", "other": "#bc4c00", "none": "#6e7781"}
_MARKS = {"pass": "✓ pass", "fail": "✗ fail"}


def _pct(x: Any) -> str:
    return "—" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.0%}"


def _secs(x: Any) -> str:
    return "—" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.2f} s"


def cell_kind(cell: Cell) -> str:
    """What a cell's mark says: `pass`, `fail`, `error`, `other` (unsettled, aborted, ...) or `none` (no verdict)."""
    cell = CellResult.of(cell)
    status, passed = str(cell.status), cell.passed
    if status == "error":
        return "error"
    if passed is False:
        return "fail"
    if status != "completed":
        return "other"
    return "pass" if passed is True else "none"


def cell_label(cell: Cell) -> str:
    """A cell's mark as text: `✓ pass`, `✗ fail`, its status, or `—`; `↻` when it was re-judged, not run."""
    cell = CellResult.of(cell)
    kind = cell_kind(cell)
    text = _MARKS.get(kind) or ("—" if kind == "none" else str(cell.status))
    return text + (" ↻" if cell.rejudged else "")


def cell_title(cell: Cell) -> str:
    """A cell's tooltip: each failing (or unchecked) assertion and why, the error, and where the cell came from."""
    cell = CellResult.of(cell)
    reasons = cell.reasons()
    names = cell.asserts
    lines = []
    failed = [n for n in names if cell.check(n) is False]
    unchecked = [n for n in names if cell.check(n) is None]
    for n in failed:
        lines.append(f"✗ {n}: {reasons.get(n) or 'failed'}")
    for n in unchecked:
        lines.append(f"? {n}: {reasons.get(n) or 'not checked'}")
    if names and not failed and not unchecked:
        lines.append(f"✓ all {len(names)} assertion(s) passed")
    if not names:
        lines.append("no assertions")
    if cell.error:
        lines.append(f"error: {str(cell.error)[:300]}")
    if cell.rejudged and cell.source is not None:
        lines.append(f"source: {cell.source.text}")
    return "\n".join(lines)


def cell_mark(cell: Cell | None) -> Html:
    """A grid cell: a coloured badge (pass, fail, or the cell's status) whose title says why."""
    if cell is None:
        return note("·")
    kind = cell_kind(cell)
    return badge(cell_label(cell), _COLORS[kind], title=cell_title(cell), cls=f"ladr-exp-mark ladr-exp-{kind}")


def summary_html(exp: Experiment) -> Html:
    """One line per variant: pass rate (and its change from the first variant), completed cells, calls per cell,
    tokens, cost, latency p50/p95, and how many cells were re-judged rather than run."""
    rows = []
    for i, s in enumerate(exp.summary_rows()):
        delta = s.get("Δ pass_rate")
        change = "" if i == 0 or delta is None or (isinstance(delta, float) and math.isnan(delta)) \
            else f" ({delta:+.0%})"
        rows.append([tag("b", s["variant"]), concat(_pct(s["pass_rate"]), note(change) if change else None),
                     f"{s['passed']}/{s['cells']}", f"{s['completed']}/{s['cells']}", f"{s['calls_mean']:.1f}",
                     f"{s['tokens_in'] + s['tokens_out']:,}", fmt_cost(s["cost"]), _secs(s["p50_s"]),
                     _secs(s["p95_s"]), str(s["rejudged"])])
    return table(["variant", "pass rate", "passed", "completed", "calls/cell", "tokens", "cost", "p50", "p95",
                  "re-judged"], rows, cls="ladr-exp-summary")


def charts_html(exp: Experiment) -> Html:
    """Charts of an experiment, each beside the table of its numbers: the pass rate per variant, per assertion
    (a bar per variant), and the latency per variant (p50 a bar, p95 its whisker); every bar's tooltip has its
    figures."""
    rows = exp.summary_rows()
    names = exp.assertion_names()
    bars = [{"label": s["variant"], "value": s["pass_rate"], "group": s["variant"],
             "title": f"{s['variant']}: {s['passed']} of {s['cells']} cells passed ({_rate(s['pass_rate'])})"}
            for s in rows]
    per: list[dict] = []
    for n in names:
        per.append({"heading": n})
        per += [{"label": s["variant"], "value": s.get(n), "group": s["variant"],
                 "title": f"{n}, {s['variant']}: {_rate(s.get(n))} of the cells it checked passed"} for s in rows]
    lat = [{"label": s["variant"], "value": s["p50_s"], "whisker": s["p95_s"], "group": s["variant"],
            "title": f"{s['variant']}: p50 {_secs(s['p50_s'])}, p95 {_secs(s['p95_s'])} a cell"} for s in rows]
    table_rows = [[s["variant"], _rate(s["pass_rate"]), *[_rate(s.get(n)) for n in names], _secs(s["p50_s"]),
                   _secs(s["p95_s"])] for s in rows]
    numbers = table(["variant", "pass rate", *names, "p50", "p95"], table_rows, cls="ladr-exp-chart-numbers")
    charts = tag("div", bar_rows(bars, max_value=1.0, fmt=_pct_label, title="pass rate per variant"),
                 bar_rows(per, max_value=1.0, fmt=_pct_label, title="pass rate per assertion") if names else None,
                 bar_rows(lat, fmt=lambda v: f"{v:.1f} s", title="latency per cell (p50 bar, p95 whisker)"),
                 style="flex:0 0 auto")
    return tag("div", charts, tag("div", numbers, style="flex:1 1 280px"), cls="ladr-exp-charts",
               style="display:flex;flex-wrap:wrap;gap:16px;align-items:flex-start")


def _pct_label(v: float) -> str:
    return f"{v:.0%}"


def _rate(v: Any) -> str:
    return "-" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:.0%}"


def _disagree(diff: Mapping[str, Any] | None, a: str, b: str) -> Html:
    if diff is None:
        return Html("")
    why = f"{a} and {b} differ in {diff['differs']}"
    if diff.get("assertions"):
        why += f" (assertions: {diff['assertions']})"
    return badge("≠", "#8250df", title=why, cls="ladr-exp-disagree")


def _page_mark(cell: CellResult, target: str | None = None) -> Html:
    """A page's mark: styled by the page's rules (`PAGE_STYLE`) as the badge is inline, in a fifth of the bytes (a
    page has every cell, twice); a link to `target` when given."""
    return tag("a" if target else "span", cell_label(cell), href=f"#{target}" if target else None,
               title=cell_title(cell), cls=f"ladr-link ladr-m ladr-m-{cell_kind(cell)}")


def grid_html(exp: Experiment, rows: list[str] | None = None, max_rows: int = ROWS, *,
              pair: tuple[str, str] | None = None, start: int = 0,
              links: Mapping[tuple[str | None, str], str] | None = None) -> Html:
    """The grid: a line per input row, a column per variant, each cell pass / fail / its status (its failing
    assertions' reasons in its title), and `≠` on rows where the `pair` of variants (default: the first two)
    differs in pass/fail, status or output. `links` ({(variant, row): element id}) makes each mark a link to
    that element (a page's cell parts)."""
    by = {(c.variant, c.row): c for c in exp.cells if c.repeat == 1}     # a repeated cell: its first run
    ids = rows if rows is not None else exp.row_ids()
    shown = ids[start:start + max_rows]
    a, b = pair or ((exp.variants + exp.variants)[:2] if exp.variants else ("", ""))
    diffs = {d["row"]: d for d in exp.difference_rows(a, b)} if a and b and a != b else {}
    def mark(v: str, rid: str) -> Html:
        cell = by.get((v, rid))
        target = (links or {}).get((v, rid))
        if cell is None or not target:
            return cell_mark(cell)
        return _page_mark(cell, target)

    cells = [[rid, _disagree(diffs.get(rid), a, b), *[mark(v, rid) for v in exp.variants]] for rid in shown]
    head = [tag("span", v, title="compared" if v in (a, b) and a != b else None) for v in exp.variants]
    rest = len(ids) - start - len(shown)
    return concat(table(["row", tag("span", "≠", title=f"{a} and {b} differ"), *head], cells, cls="ladr-exp-grid",
                        plain=bool(links)),
                  note(f"… {rest:,} more rows") if rest > 0 else None)


def reasons_html(cell: Cell) -> Html:
    """A cell's assertions, one line each: passed or not and, for each that did not pass, why."""
    cell = CellResult.of(cell)
    names = cell.asserts
    if not names:
        return note("no assertions were checked on this cell")
    reasons = cell.reasons()
    rows = [[badge("✓ pass", _COLORS["pass"]) if cell.check(n) is True else badge("✗ fail", _COLORS["fail"])
             if cell.check(n) is False else badge("? unchecked", _COLORS["other"]), tag("code", n),
             "" if cell.check(n) is True else str(reasons.get(n) or "")] for n in names]
    return table(["", "assertion", "why"], rows, cls="ladr-exp-reasons")


def failures_html(exp: Experiment, max_cells: int = FAILURES) -> Html:
    """Every cell that did not pass (the first `max_cells`): its row, variant, mark and each failing
    assertion's reason, in a collapsible part."""
    bad = [c for c in exp.cells if cell_kind(c) in ("fail", "error", "other")]
    if not bad:
        return Html("")
    rows = []
    for c in bad[:max_cells]:
        why = cell_title(c).splitlines()
        rows.append([c.row, str(c.variant), cell_mark(c),
                     pre("\n".join(x for x in why if not x.startswith("✓")), 1200, max_height="8em")])
    more = len(bad) - len(rows)
    return details(concat(tag("b", f"why {len(bad):,} cell(s) did not pass")),
                   table(["row", "variant", "", "why"], rows, cls="ladr-exp-failures"),
                   note(f"… {more:,} more") if more > 0 else None, cls="ladr-exp-why")


def experiment_html(exp: Experiment, max_rows: int = ROWS, *, pair: tuple[str, str] | None = None,
                    links: Mapping[tuple[str | None, str], str] | None = None, more: Any = None) -> str:
    """An experiment: its variants and folder, the summary per variant, the grid (its marks links when `links`
    is given) and why cells failed, then `more` (a page's cell parts)."""
    a, b = pair or ((exp.variants + exp.variants)[:2] if exp.variants else ("", ""))
    disagree = len(exp.difference_rows(a, b)) if a and b and a != b else 0
    pairs = [("variants", ", ".join(exp.variants)),
             ("cells", f"{len(exp.rows):,} ({len(exp.row_ids()):,} rows × {len(exp.variants)} variants)"
              + ("  (interrupted)" if exp.interrupted else "")),
             ("disagree", f"{disagree:,} row(s) where {a} and {b} differ" if a != b else None),
             ("folder", str(exp.out))]
    hint = "hover a cell for why it failed" + ("; click it for its assertions, output and trace" if links else "")
    return root(kv_table(pairs), summary_html(exp), grid_html(exp, max_rows=max_rows, pair=(a, b), links=links),
                note(hint + "; ↻: re-judged from another variant's recorded runs, not run"),
                failures_html(exp), more, cls="ladr-experiment", title="Experiment")


# ---- an evaluation: one variant, a table ------------------------------------------------------------------

def _cell(v: Any, n: int = 160) -> str:
    text = "" if v is None else str(v)
    text = " ".join(text.split())
    return text if len(text) <= n else text[: n - 1] + "…"


def evaluation_rows_html(rows: Sequence[Cell], start: int = 0, count: int = ROWS) -> Html:
    """Evaluation rows (cells, or their results lines) as a table: row id, inputs, status, calls, tokens, cost,
    output and error."""
    shown = [CellResult.of(r) for r in rows[start:start + count]]
    inputs = sorted({k for c in shown for k in c.inputs})
    cells = [[c.row, *[_cell(c.inputs.get(k), 80) for k in inputs], badge(str(c.status)), str(c.llm_calls),
              f"{(c.tokens_in or 0) + (c.tokens_out or 0):,}", fmt_cost(c.cost), _cell(c.output), _cell(c.error)]
             for c in shown]
    out = table(["row", *[f"input.{k}" for k in inputs], "status", "calls", "tokens", "cost", "output", "error"], cells,
                cls="ladr-eval-rows")
    rest = len(rows) - start - len(shown)
    return concat(out, note(f"… {rest:,} more rows") if rest > 0 else None)


def evaluation_html(ev: Evaluation, max_rows: int = ROWS, *, more: Any = None) -> str:
    """An evaluation: rows by status, where its files are, (the first `max_rows` rows of) the results, then
    `more` (a page's row parts)."""
    counts = ev.counts()
    head = join((concat(badge(s), f" {n}") for s, n in sorted(counts.items())), "  ")
    pairs = [("rows", concat(f"{len(ev.rows):,}  ", head, note("  (interrupted)") if ev.interrupted else None)),
             ("folder", str(ev.out)),
             ("cost", fmt_cost(sum(float(c.cost or 0) for c in ev.cells)))]
    return root(kv_table(pairs), evaluation_rows_html(ev.cells, 0, max_rows), more, cls="ladr-evaluation",
                title="Evaluation")


# ---- pages: a run as a standalone document (`--html FILE`) ----------------------------------------------------

def _anchors(exp: Experiment, max_cells: int) -> dict[tuple[str | None, str], str]:
    """The grid's links: (variant, row) → the element id of its first run's part (`cell-N`, N its place in the run's
    order, so each repeat of a cell has an id of its own)."""
    return {(c.variant, c.row): f"cell-{i + 1}" for i, c in enumerate(exp.cells[:max_cells]) if c.repeat == 1}


# a page's cell parts are many: their rules are the page's own (class names), not inline styles on each element
PAGE_STYLE = (".ladr-cell>div{margin:2px 0 8px 16px}.ladr-cell summary{cursor:pointer}"
              ".ladr-cell .n{color:#6e7781;font-size:0.92em}.ladr-cell ul{list-style:none;margin:2px 0;padding:0}"
              ".ladr-cell .ok{color:#1a7f37}.ladr-cell .no{color:#cf222e}.ladr-cell .un{color:#bc4c00}"
              ".ladr-cell .err{color:#cf222e;white-space:pre-wrap}.ladr-cell dt{font-weight:600}"
              ".ladr-cell dd{margin:0 0 2px 12px}.ladr-cell pre{font-family:SFMono-Regular,Menlo,Consolas,"
              "'Liberation Mono',monospace;font-size:12px;white-space:pre-wrap;word-break:break-word;margin:2px 0;"
              "padding:4px 6px;background:rgba(127,127,127,0.08);border-radius:3px;max-height:16em;overflow:auto}"
              ".ladr-m{display:inline-block;padding:0 6px;border-radius:9px;font-size:0.85em;line-height:1.35;"
              "border:1px solid currentColor;white-space:nowrap}"
              + "".join(f".ladr-m-{k}{{color:{c}}}" for k, c in _COLORS.items()))


def _clipped(text: str, limit: int) -> Html:
    shown = text if len(text) <= limit else text[:limit]
    more = len(text) - len(shown)
    return concat(tag("pre", shown), tag("span", f"… {more:,} more characters not shown", cls="n") if more else None)


def cell_details_html(cell: Cell, out: Any, anchor: str | None = None, *, open: bool = False) -> Html:
    """One cell as a collapsible part of a page (its element id `anchor`; the page's `PAGE_STYLE` styles it): mark,
    row, variant, status and counts in its line; each assertion and why, the error, the inputs, the output (its first
    4,000 characters) and the path of its trace when opened."""
    cell = CellResult.of(cell)
    tokens = int(cell.tokens_in or 0) + int(cell.tokens_out or 0)
    where = f"row {cell.row}" + (f" · variant {cell.variant}" if cell.variant is not None else "") \
        + (f" · run {cell.repeat}" if cell.repeat != 1 else "")
    head = concat(_page_mark(cell), " ", tag("b", where),
                  tag("span", f"  {cell.status} · {cell.llm_calls or 0} call(s), {tokens:,} tokens, "
                              f"{fmt_cost(cell.cost)}, {float(cell.seconds or 0):.2f} s"
                              + (f" · {cell.source.text}" if cell.source is not None and cell.rejudged else ""),
                      cls="n"))
    why = cell.reasons()
    marks = {True: ("ok", "✓"), False: ("no", "✗"), None: ("un", "?")}
    checks = [tag("li", marks[cell.check(n)][1], " ", tag("code", n), f": {why[n]}" if why.get(n) else None,
                  cls=marks[cell.check(n)][0]) for n in cell.asserts]
    body = [tag("ul", join(checks)) if checks else None,
            tag("div", f"{cell.error_type or 'error'}" + (f" in step {cell.error_step}" if cell.error_step else "")
                + f": {cell.error}", cls="err") if cell.error else None,
            tag("dl", join(concat(tag("dt", k), tag("dd", _clipped(str(v), 2000))) for k, v in cell.inputs.items()))
            if cell.inputs else None,
            tag("b", "output"), _clipped(str(cell.output), 4000) if cell.output not in (None, "") else
            tag("span", " (none)", cls="n"),
            tag("span", f"trace: {out}/{cell.trace}", cls="n") if cell.trace else None]
    return tag("details", tag("summary", head), tag("div", *body), id=anchor, open=open, cls="ladr-cell ladr-exp-cell")


def cells_html(exp: Experiment, max_cells: int = PAGE_CELLS) -> Html:
    """Every cell (the first `max_cells`) as a collapsible part, in the run's order, each with the id the page's
    grid links to (`cell-1`, `cell-2`, ...)."""
    parts = [cell_details_html(c, exp.out, f"cell-{i + 1}") for i, c in enumerate(exp.cells[:max_cells])]
    rest = len(exp.cells) - len(parts)
    return concat(tag("h3", f"Cells ({len(exp.cells):,})", style="margin:12px 0 4px 0;font-size:1.05em"),
                  join(parts), note(f"… {rest:,} more cell(s) not shown (see results.csv)") if rest > 0 else None)


def experiment_page(exp: Experiment, max_cells: int = PAGE_CELLS) -> str:
    """An experiment as a standalone page: the static view with the whole grid, each mark a link to its cell's
    part (assertions, error, inputs, output, trace) below."""
    view = experiment_html(exp, max_rows=max(1, len(exp.row_ids())), links=_anchors(exp, max_cells),
                           more=cells_html(exp, max_cells))
    return page(Html(view), f"Experiment · {exp.out}", style=PAGE_STYLE)


def evaluation_page(ev: Evaluation, max_cells: int = PAGE_CELLS) -> str:
    """An evaluation as a standalone page: counts, the whole results table, and each row's part below."""
    return page(Html(evaluation_html(ev, max_rows=max(1, len(ev.cells)), more=cells_html(ev, max_cells))),
                f"Evaluation · {ev.out}", style=PAGE_STYLE)


# ---- two runs compared -------------------------------------------------------------------------------------

def change_badge(change: str) -> Html:
    """A changed cell's kind of change (`pass→fail`, ...) as a coloured label."""
    return badge(change, CHANGE_COLORS.get(change), cls="ladr-change")


def comparison_summary_html(cmp: Comparison) -> Html:
    """A line per variant of two compared runs: cells before → after, pass rate before → after (and its change),
    how many cells changed in each way, and how many did not."""
    from .compare import CHANGES
    rows = []
    for s in cmp.summary_rows():
        delta = s["Δ pass_rate"]
        rate = concat(_pct(s["pass_rate.before"]), " → ", _pct(s["pass_rate.after"]),
                      note(f" ({delta:+.0%})") if not (isinstance(delta, float) and math.isnan(delta)) else None)
        rows.append([tag("b", s["variant"] or "(evaluation)"), f"{s['cells.before']} → {s['cells.after']}", rate,
                     *[(badge(str(s[k]), CHANGE_COLORS[k]) if s[k] else note("0")) if k in ("pass→fail", "fail→pass")
                       else (str(s[k]) if s[k] else note("0")) for k in CHANGES], str(s["unchanged"])])
    return table(["variant", "cells", "pass rate", *CHANGES, "unchanged"], rows, cls="ladr-cmp-summary")


def _changes_table(cmp: Comparison, rows: list[dict], links: Mapping[int, str] | None = None) -> Html:
    def side(r: dict, which: int) -> Html:
        cell = cmp.cells(r["variant"], r["row"])[which]
        return cell_mark(cell) if cell is not None else note("·")

    body = []
    for i, r in enumerate(rows):
        change = change_badge(r["change"])
        target = (links or {}).get(i)
        body.append([r["variant"] or "", r["row"],
                     tag("a", change, href=f"#{target}", cls="ladr-link") if target else change,
                     side(r, 0), side(r, 1), r["differs"], r["assertions"]])
    return table(["variant", "row", "change", "before", "after", "what changed", "assertions"], body,
                 cls="ladr-cmp-changes")


def comparison_html(cmp: Comparison, max_rows: int = ROWS, *, links: Mapping[int, str] | None = None,
                    more: Any = None) -> str:
    """Two runs compared: both folders, the counts per variant (pass rate before → after, each kind of change)
    and the changed cells (the first `max_rows`: variant, row, change, both marks, what changed), then `more`."""
    counts = cmp.counts()
    head = join((concat(change_badge(k), f" {n}") for k, n in counts.items() if n), "  ") if cmp.changes \
        else note("no cell changed")
    shown = cmp.changes[:max_rows]
    rest = len(cmp.changes) - len(shown)
    return root(kv_table([("before", str(cmp.before.out)), ("after", str(cmp.after.out)), ("changed", head)]),
                comparison_summary_html(cmp),
                _changes_table(cmp, shown, links) if shown else None,
                note(f"… {rest:,} more changed cell(s)") if rest > 0 else None, more,
                cls="ladr-comparison", title="Comparison")


def _change_details(cmp: Comparison, r: dict, anchor: str) -> Html:
    from ..analysis.html import diff_html
    from ..analysis.prompts import text_diff
    before, after = cmp.cells(r["variant"], r["row"])
    where = f"{r['variant']}/{r['row']}" if r["variant"] else r["row"]
    parts: list[Any] = [tag("div", tag("b", "before: "), cell_title(before).replace("\n", "; ")) if before else None,
                        tag("div", tag("b", "after: "), cell_title(after).replace("\n", "; ")) if after else None]
    if before is not None and after is not None:
        if before.output != after.output:
            parts += [tag("div", tag("b", "output")), pre(text_diff(str(before.output or ""),
                                                                     str(after.output or ""), "before", "after"), 6000)]
        try:
            parts.append(Html(diff_html(cmp.diff(r["variant"], r["row"]), max_rows=50)))
        except Exception as exc:   # a missing or unreadable trace is that cell's problem, not the page's
            parts.append(note(f"no run diff: {type(exc).__name__}: {exc}"))
    return tag("details", tag("summary", concat(change_badge(r["change"]), " ", tag("b", where), " ",
                                                note(r["differs"])), style="cursor:pointer"),
               tag("div", *parts, style="margin:2px 0 8px 16px"), id=anchor, cls="ladr-cmp-change")


def comparison_page(cmp: Comparison, max_diffs: int = PAGE_DIFFS) -> str:
    """Two runs compared as a standalone page: the static view, every changed cell listed, and each of the first
    `max_diffs` a part (linked from its change) with both cells' verdicts, the output's diff and the run diff."""
    links = {i: f"change-{i + 1}" for i in range(min(max_diffs, len(cmp.changes)))}
    parts = [_change_details(cmp, r, links[i]) for i, r in enumerate(cmp.changes[:max_diffs])]
    rest = len(cmp.changes) - len(parts)
    more = concat(tag("h3", "Changed cells, each with its run diff", style="margin:12px 0 4px 0;font-size:1.05em"),
                  join(parts), note(f"… {rest:,} more changed cell(s) without their diff") if rest > 0 else None) \
        if parts else None
    return page(Html(comparison_html(cmp, max_rows=max(1, len(cmp.changes)), links=links, more=more)),
                f"Comparison · {cmp.before.out} → {cmp.after.out}")
