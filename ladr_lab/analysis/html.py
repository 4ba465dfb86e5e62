"""Static views of analysis results: a `LintReport` (findings with evidence and fixes), a `RunDiff` (totals,
the first divergence, the aligned rows that differ), a `Rejudging` (the re-judged verdicts, flips first in
colour) and a `SchemaTuning` (scores per variant, the outputs with each variant's verdict).

Tables are bounded (`ROWS` rows; the rest counted): the widget (`DiffView`) pages through all.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..display import (
    COLORS,
    Html,
    badge,
    concat,
    details,
    join,
    kv_table,
    note,
    plural,
    pre,
    root,
    table,
    tag,
)

if TYPE_CHECKING:
    from .diff import RunDiff
    from .lint import Finding, LintReport
    from .rejudge import Rejudging
    from .tuning import SchemaTuning

__all__ = ["ROWS", "diff_html", "diff_rows_html", "finding_html", "lint_html", "rejudging_html", "tuning_html",
           "tuning_outputs_html", "tuning_scores_html", "verdict_badge", "where_label"]

ROWS = 200


def where_label(r: dict) -> str:
    """`research/1 r2 it2` (with the callers in a child run), as the command line names a row."""
    where = str(r.get("step")) + (f"/{r['node']}" if r.get("node") is not None else "") + \
        (f" r{r['round']}" if r.get("round") is not None else "") + \
        (f" it{r['iteration']}" if r.get("iteration", 1) != 1 else "")
    return (r["caller"] + " > " + where) if r.get("caller") else where


def finding_html(f: Finding) -> list:
    """One finding as table cells: severity, code, step, what was seen (with its evidence), the fix, where."""
    ev = [e for e in f.evidence if "seq" in e]
    evidence = None
    if ev:
        labels = ", ".join(f"{e.get('trace', 'trace')} #{e['seq']}" + (f" node {e['node']}" if e.get("node") else "")
                           + (f" round {e['round']}" if e.get("round") else "") for e in ev[:8])
        evidence = note(f"evidence: {labels}" + (f" and {len(ev) - 8} more" if len(ev) > 8 else ""))
    where = ":".join(str(x) for x in (f.file or "<ladder>", f.line, f.column) if x is not None)
    return [badge(f.severity), tag("code", f.code), f.step or "", concat(f.message, Html("<br>") if evidence else None,
                                                                         evidence), f.fix, note(where)]


def lint_html(report: LintReport) -> str:
    """What lint found: the ladder's errors when it is invalid, else each finding with its evidence and fix."""
    counts: dict[str, int] = {}
    for f in report.findings:
        counts[f.severity] = counts.get(f.severity, 0) + 1
    head = concat(badge("ok" if report.ok else "not ok"),
                  " " + (", ".join(f"{n} {s}(s)" for s, n in counts.items()) or "nothing found"),
                  note(f"  with {plural(len(report.traces), 'trace')}") if report.traces else None)
    body: list = [tag("div", head)]
    if report.problems:
        body.append(tag("div", tag("b", f"{len(report.problems)} error(s): fix them first"),
                        join(tag("div", p.format(), style="color: #cf222e") for p in report.problems)))
    if report.findings:
        body.append(table(["", "code", "step", "seen", "fix", "where"],
                          [finding_html(f) for f in report.findings], cls="ladr-findings"))
    return root(*body, cls="ladr-lint", title=f"Lint of {report.ladder}")


def diff_rows_html(rows: list[dict], start: int = 0, count: int = ROWS, *, numbered: bool = False) -> Html:
    """Aligned diff rows as a table (differing rows highlighted), `count` of them from `start` (`numbered`: with
    their 1-based position in `rows`)."""
    shown = rows[start:start + count]
    cells = []
    styles = []
    for i, r in enumerate(shown, start + 1):
        verdicts = "" if r.get("verdict_a") == r.get("verdict_b") else f"{r.get('verdict_a')} → {r.get('verdict_b')}"
        cells.append(([str(i)] if numbered else []) + [
            r["kind"], where_label(r), badge("same") if r["same"] else badge("changed"),
            ", ".join(r["changes"]), verdicts, "" if r.get("a_seq") is None else f"#{r['a_seq']}",
            "" if r.get("b_seq") is None else f"#{r['b_seq']}"])
        styles.append(None if r["same"] else "background:rgba(188,76,0,0.08)")
    out = table((["#"] if numbered else []) + ["kind", "where", "", "changes", "verdict a → b", "a", "b"], cells,
                row_styles=styles, cls="ladr-diff-rows")
    rest = len(rows) - start - len(shown)
    return concat(out, note(f"… {rest:,} more rows") if rest > 0 else None)


def diff_html(d: RunDiff, max_rows: int = ROWS) -> str:
    """Two runs compared: totals with deltas, the first divergence with its detail, what only one run fetched
    or wrote, and (the first `max_rows` of) the aligned rows."""
    t = d.totals
    rows = []
    for name in ("status", "llm_calls", "tokens_in", "tokens_out", "cost", "steps"):
        v = t[name]
        delta = v.get("delta")
        rows.append([name, str(v["a"]), str(v["b"]), f"{delta:+g}" if isinstance(delta, (int, float)) and delta else ""])
    rows.append(["output", "", "", "same" if t["output"]["same"] else "differs"])
    body: list = [kv_table([("a", d.a), ("b", d.b),
                            ("verdict", badge("same", title="identical") if d.identical else badge("changed"))]),
                  table(["", "a", "b", "delta"], rows)]
    fd = d.first_divergence
    if fd is None:
        body.append(tag("div", "No divergence: every aligned call, gate and write is the same."))
    else:
        body.append(tag("div", tag("b", "first divergence: "), f"{fd['kind']} {fd['where']} — ",
                        tag("span", ", ".join(fd["changes"]), style="color: #bc4c00"), cls="ladr-divergence"))
        body.append(pre(fd["detail"], 8000))
    for side in ("a", "b"):
        if d.fetched.get(f"only_{side}"):
            body.append(tag("div", tag("b", f"fetched only in {side}: "), ", ".join(d.fetched[f"only_{side}"])))
        if d.writes.get(f"only_{side}"):
            body.append(tag("div", tag("b", f"written only in {side}: "), ", ".join(d.writes[f"only_{side}"])))
    differing = [r for r in d.rows if not r["same"]]
    if max_rows:
        body.append(details(concat(tag("b", "aligned rows"), note(f"  {len(differing)} of {len(d.rows)} differ")),
                            diff_rows_html(d.rows, 0, max_rows), open=len(d.rows) <= 40))
    else:
        body.append(tag("div", note(f"{len(differing):,} of {len(d.rows):,} aligned rows differ")))
    return root(*body, cls="ladr-diff", title="Run diff")


def _verdict_mark(v: bool | None, unknown: bool = False) -> str:
    return "?" if unknown and v is None else {True: "match", False: "no", None: "-"}[v]


def rejudging_html(r: Rejudging, max_rows: int = ROWS) -> str:
    """Re-judged verdicts: the counts, then (the first `max_rows` of) the rows, old → new, the deciding keyword
    and paths and the effect of each flip; flipped rows highlighted."""
    flips = r.flips
    changed = sum(1 for x in r if x["changed"])
    body: list = [tag("div", f"{plural(len(r), 'verdict')} re-judged, {len(flips)} flipped, "
                             f"{changed} with a different outcome")]
    cells, styles = [], []
    for x in list(r)[:max_rows]:
        old = "forced" if x["forced"] else _verdict_mark(x["old"])
        decided = f"{x['keyword']} at {x['schema_path'] or '/'} (instance {x['instance_path'] or '/'})" \
            if x["keyword"] else ""
        cells.append(["" if x["seq"] is None else f"#{x['seq']}", where_label(x), x["test"],
                      f"{old} → {_verdict_mark(x['new'], x['after_flip'] is not None)}",
                      badge("flipped") if x["flipped"] else "", decided, x["effect"] or ""])
        styles.append("background:rgba(188,76,0,0.08)" if x["flipped"] else None)
    if cells:
        body.append(table(["#", "where", "test", "old → new", "", "deciding keyword", "effect"], cells,
                          row_styles=styles, cls="ladr-rejudge-rows"))
    if len(r) > max_rows:
        body.append(note(f"… {len(r) - max_rows:,} more rows"))
    return root(*body, cls="ladr-rejudge", title="Re-judged")


def verdict_badge(verdict: str | None) -> Html:
    """A tuning verdict as a badge: request (blue), answer (green), no_match (orange: a request that fetches
    nothing), or "-" when the variant does not judge it."""
    if verdict is None:
        return note("-")
    color = {"request": COLORS["retrieval"], "no_match": COLORS["no_match"]}.get(verdict, COLORS["final"])
    return badge(verdict, color, cls=f"ladr-{verdict}")


def _num(x: float) -> str:
    return "-" if x != x else f"{x:.2f}"


def tuning_scores_html(t: SchemaTuning) -> Html:
    """One row per variant: how many outputs it judges a request, tp / fp / fn / tn, precision, recall, f1,
    accuracy ("-" where undefined)."""
    rows = [[tag("b", s["variant"]), f"{s['requests']} of {s['judged']}", str(s["labelled"]), str(s["tp"]),
             str(s["fp"]), str(s["fn"]), str(s["tn"]), _num(s["precision"]), _num(s["recall"]), _num(s["f1"]),
             _num(s["accuracy"])] for s in t.score_rows()]
    return table(["variant", "requests", "labelled", "tp", "fp", "fn", "tn", "precision", "recall", "f1",
                  "accuracy"], rows, cls="ladr-tuning-scores")


def tuning_outputs_html(rows: list[dict], variants: list[str], start: int = 0, count: int = ROWS,
                        excerpt: int = 160) -> Html:
    """Outputs (`SchemaTuning.wide_rows`) as a table: where, the label, each variant's verdict, an excerpt;
    `count` of them from `start`."""
    shown = rows[start:start + count]
    cells = []
    for r in shown:
        text = " ".join(r["output"].split())
        cells.append([where_label(r) + (" (forced)" if r["forced"] else ""), r["label"] or note("-"),
                      *(verdict_badge(r[v]) for v in variants),
                      tag("code", text[:excerpt] + ("…" if len(text) > excerpt else ""))])
    out = table(["output", "label", *variants, "excerpt"], cells, cls="ladr-tuning-outputs")
    rest = len(rows) - start - len(shown)
    return concat(out, note(f"… {rest:,} more outputs") if rest > 0 else None)


def tuning_html(t: SchemaTuning, max_rows: int = ROWS) -> str:
    """Request detection per requestMatch variant: the scores, then the outputs where the variants disagree
    (or every output, when they never do), bounded by `max_rows`."""
    labelled = len(t.labels) - len(t.stray_labels)
    body: list = [tag("div", f"{plural(len(t.outputs), 'output')} of retrieve rounds, {labelled} labelled"),
                  tuning_scores_html(t)]
    differ = t.wide_rows(disagree=True)
    if max_rows:
        rows = differ or t.wide_rows()
        title = f"where {' and '.join(t.compared())} disagree ({len(differ)})" if differ else "outputs (no disagreement)"
        body.append(details(tag("b", title), tuning_outputs_html(rows, t.variants, 0, max_rows),
                            open=len(rows) <= 40))
    return root(*body, cls="ladr-tuning", title="requestMatch tuning")
