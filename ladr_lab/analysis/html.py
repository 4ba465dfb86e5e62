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
    scatter_chart,
    table,
    tag,
)

if TYPE_CHECKING:
    from .diff import RunDiff
    from .lint import Finding, LintReport
    from .rejudge import Rejudging
    from .suggest import Suggestion
    from .tuning import SchemaTuning

__all__ = ["ROWS", "diff_html", "diff_rows_html", "finding_html", "flips_html", "frontier_html", "frontier_points",
           "lint_html", "rejudging_html", "suggestion_html", "tuning_html", "tuning_outputs_html", "tuning_scores_html",
           "verdict_badge", "where_label"]

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


def _group(name: str, suggested: set[str]) -> str:
    if name == "recorded":
        return "recorded (what the run decided)"
    if name == "genson":
        return "genson (requests only)"
    return "suggested" if name in suggested else "hand-written"


def frontier_points(t: SchemaTuning, suggested: set[str] | None = None, chosen: str | None = None,
                    anchor: str | None = None) -> list[dict]:
    """A point per variant of the tuning (precision against recall on the labels) for `scatter_chart`: its group
    (recorded, hand-written, suggested, genson), its figures as its tooltip, `chosen` marked, and with `anchor` a
    link to the part listing its flips (`#{anchor}-{variant}`)."""
    suggested = suggested or set()
    out = []
    for r in t.score_rows():
        name = r["variant"]
        out.append({"x": r["recall"], "y": r["precision"], "name": name, "group": _group(name, suggested),
                    "marked": name == chosen, "href": f"#{anchor}-{name}" if anchor else None,
                    "label": f"{name}: precision {_num(r['precision'])}, recall {_num(r['recall'])}, F1 {_num(r['f1'])} "
                             f"(tp {r['tp']}, fp {r['fp']}, fn {r['fn']}, tn {r['tn']}; {r['labelled']} labelled)"})
    return out


def flips_html(t: SchemaTuning, variant: str, against: str = "recorded", max_rows: int = 40) -> Html:
    """The outputs `variant` judges otherwise than `against` (default: what the run decided), each with its label
    (✗ where the variant is wrong)."""
    rows = []
    for i, o in enumerate(t.outputs):
        a, b = t.verdicts[against][i].verdict, t.verdicts[variant][i].verdict
        if a == b or b is None:
            continue
        label = t.label_of(o)
        wrong = label is not None and b != label
        text = " ".join(o.output.split())
        rows.append([where_label({"step": o.step, "node": o.node, "round": o.round, "iteration": o.iteration}),
                     o.row, verdict_badge(a), verdict_badge(b),
                     concat(label or "", tag("span", " ✗", style="color:#cf222e") if wrong else None),
                     tag("code", text[:160] + ("…" if len(text) > 160 else ""))])
    if not rows:
        return note(f"{variant} judges every output as {against} does")
    shown = table(["where", "row", against, variant, "label", "output"], rows[:max_rows], cls="ladr-flips")
    return concat(note(f"{plural(len(rows), 'output')} {variant} judges otherwise than {against}"), shown,
                  note(f"… and {len(rows) - max_rows} more") if len(rows) > max_rows else None)


def frontier_html(t: SchemaTuning, suggested: set[str] | None = None, chosen: str | None = None,
                  anchor: str = "ladr-frontier") -> Html:
    """The frontier chart (precision against recall, a point per variant, `chosen` marked, a click on a point
    opening its flips below) beside the table of its figures, and each variant's flips, collapsed."""
    points = frontier_points(t, suggested, chosen, anchor)
    chart = scatter_chart(points, title="precision against recall on the labels, a point per requestMatch")
    rows = [[tag("b", p["name"]) if p["marked"] else p["name"], p["group"], _num(p["y"]), _num(p["x"]),
             _num(s["f1"]), f"{s['tp']}/{s['fp']}/{s['fn']}/{s['tn']}"]
            for p, s in zip(points, t.score_rows(), strict=True)]
    figures = table(["variant", "kind", "precision", "recall", "F1", "tp/fp/fn/tn"], rows, cls="ladr-frontier-table")
    flips = [tag("div", details(tag("b", f"flips of {n}"), flips_html(t, n), open=False), id=f"{anchor}-{n}")
             for n in t.variants if n != "recorded"]
    return concat(tag("div", tag("div", chart, style="flex:0 0 auto"), tag("div", figures, style="flex:1 1 320px"),
                      style="display:flex;flex-wrap:wrap;gap:16px;align-items:flex-start"), *flips)


def suggestion_html(s: Suggestion, *, frontier: bool = True) -> str:
    """A Suggestion as static HTML: collisions first (when the labels cannot be separated), the suggested schema
    with each constraint explained, the cross-validation folds, the frontier chart with its table and flips
    (`frontier=False`: without it, for a view that draws its own)."""
    import json
    body: list = [tag("div", f"step {s.step}: {plural(len(s.tuning.outputs), 'output')}, "
                             f"{plural(len(s.tuning.labels), 'label')}")]
    if s.collisions:
        rows = [[c.kind, ", ".join(f"{k[0]} r{k[3]}" for k in c.requests[:5]) or "-",
                 ", ".join(f"{k[0]} r{k[3]}" for k in c.answers[:5]), tag("code", c.value[:120])]
                for c in s.collisions]
        body.append(tag("div", badge("cannot be separated", COLORS.get("error")), " no schema of the family tells "
                        "these labelled outputs apart, so none is suggested (fix the labels, or the outputs collide):",
                        table(["collision", "requests", "answers", "JSON"], rows), cls="ladr-collisions"))
    if s.unreachable:
        body.append(tag("div", note(f"{plural(len(s.unreachable), 'request-labelled output')} no schema can make fetch "
                                    "(no JSON, or JSON naming no retrieval mode): "
                                    + ", ".join(f"{k[0]} r{k[3]}" for k in s.unreachable[:8])), cls="ladr-unreachable"))
    for text, why in s.left_out:
        body.append(tag("div", note(f"left out: {text} ({why})"), cls="ladr-left-out"))
    if s.best is not None:
        b = s.best
        expl = tag("ul", *[tag("li", e.text) for e in b.explanations])
        body.append(tag("div", tag("b", "suggested requestMatch"),
                        note(f"  precision {_num(b.precision)}, recall {_num(b.recall)}, F1 {_num(b.f1)} on the "
                             f"labels (tp {b.tp}, fp {b.fp}, fn {b.fn}, tn {b.tn})"),
                        pre(json.dumps(b.schema, indent=2, ensure_ascii=False), 4000), tag("b", "why each constraint"),
                        expl, cls="ladr-suggested"))
    elif not s.collisions:
        body.append(note("no schema suggested: " + s.why_none()))
    if s.folds:
        cv = s.cross_validated()
        rows = [[str(f.fold), str(f.held_out), f"{f.tp}/{f.fp}/{f.fn}/{f.tn}", _num(f.f1)] for f in s.folds]
        rows.append([tag("b", "all"), str(sum(f.held_out for f in s.folds)),
                     f"{cv['tp']}/{cv['fp']}/{cv['fn']}/{cv['tn']}", tag("b", _num(cv["f1"]))])
        body.append(tag("div", tag("b", "cross-validated"), note(f"  {len(s.folds)} folds: each schema fitted without "
                        f"the labels it is judged on; precision {_num(cv['precision'])}, recall {_num(cv['recall'])}"),
                        table(["fold", "held out", "tp/fp/fn/tn", "F1"], rows), cls="ladr-folds"))
    names = {f.name for f in s.frontier}
    if frontier:
        body.append(tag("div", tag("b", "the frontier"), note("  (simplest first: " + ", ".join(
            f"{f.name} {len(f.constraints)} constraint(s)" for f in s.frontier) + ")" if s.frontier else ""),
            frontier_html(s.tuning, names, s.best.name if s.best else None, anchor=f"ladr-frontier-{id(s)}")))
    return root(*body, cls="ladr-suggestion", title=f"suggested requestMatch for {s.step}")
