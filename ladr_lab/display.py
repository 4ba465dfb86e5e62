"""Display as a protocol (as in rich): one mixin gives an object its `_repr_mimebundle_`, and small HTML helpers.

An object that mixes in `Displayable` and defines `to_html()` (and, if its `repr` is not what a reader wants,
`to_text()`) shows as a readable static view wherever IPython displays values: in JupyterLab, in a saved
notebook on GitHub or nbviewer, in `jupyter nbconvert`'s HTML, and as text in a terminal. No JavaScript is
needed: collapsible parts are `<details>`, styles are inline (a saved notebook carries no style sheet).

Escaping is by type, as in markupsafe: `Html` is text already safe to insert; every helper escapes a plain
`str` it is given and passes `Html` through, so a prompt holding `<script>` shows as text. The helpers bound
what they show (`clip`), since a view must never put a 400,000-character prompt into a page at once.

    >>> str(tag("b", "<x>"))
    '<b>&lt;x&gt;</b>'
    >>> render(Html("<i>hi</i>"))
    '<i>hi</i>'

This module imports nothing of ladr_lab and nothing heavy (layer 1).
"""
from __future__ import annotations

import html as _html
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

__all__ = [
    "COLORS", "Displayable", "Html", "PLAIN_TABLE_STYLE", "badge", "bar_chart", "bar_rows", "clip", "concat",
    "details", "esc", "fmt_bytes", "fmt_cost", "fmt_int", "join", "json_text", "kv_table", "note", "page", "plural",
    "pre", "render", "root", "scatter_chart", "table", "tag", "wanted",
]

# One palette for every view: statuses of fetched entries, verdict tags, write and run statuses. Colours are
# translucent so they read on light and dark themes alike.
COLORS = {
    "fetched": "#1a7f37", "listed": "#0969da", "already_in_context": "#6e7781", "not_found": "#cf222e",
    "no_match": "#bc4c00", "left_out": "#8250df", "written": "#1a7f37", "skipped": "#bc4c00",
    "retrieval": "#0969da", "final": "#1a7f37", "forced final": "#bc4c00", "answer": "#6e7781",
    "completed": "#1a7f37", "running": "#0969da", "pending": "#6e7781", "aborted": "#bc4c00",
    "budget_exhausted": "#bc4c00", "error": "#cf222e", "then": "#1a7f37", "else": "#bc4c00",
    "match": "#1a7f37", "no match": "#cf222e", "warning": "#bc4c00", "info": "#0969da", "same": "#6e7781",
    "changed": "#bc4c00", "added": "#1a7f37", "removed": "#cf222e", "flip": "#cf222e", "edited": "#8250df",
    "ok": "#1a7f37", "not ok": "#bc4c00",
}
_FONT = ("font-family:-apple-system,BlinkMacSystemFont,'Segoe UI',Helvetica,Arial,sans-serif;"
         "font-size:13px;line-height:1.45")
_MONO = "font-family:SFMono-Regular,Menlo,Consolas,'Liberation Mono',monospace;font-size:12px"


class Html(str):
    """Text that is already HTML: helpers insert it as it is (a plain `str` is escaped)."""

    __slots__ = ()

    def __html__(self) -> Html:
        return self


def esc(value: Any) -> Html:
    """`value` as HTML: `Html` (or anything with `__html__`) as it is, anything else escaped as text."""
    if isinstance(value, Html):
        return value
    method = getattr(value, "__html__", None)
    if method is not None and not isinstance(value, type):
        return Html(method())
    return Html(_html.escape("" if value is None else str(value), quote=True))


def concat(*parts: Any) -> Html:
    """Parts put side by side, each escaped unless it is Html."""
    return Html("".join(esc(p) for p in parts if p is not None))


def join(parts: Iterable[Any], sep: Any = "") -> Html:
    """Parts joined by `sep`, each escaped unless it is Html."""
    return Html(esc(sep).join(esc(p) for p in parts if p is not None))


def tag(name: str, *body: Any, style: str | None = None, cls: str | None = None, title: str | None = None,
        **attrs: Any) -> Html:
    """`<name ...>body</name>`: body escaped unless Html; attributes escaped (`data_x=` becomes `data-x=`)."""
    bits = [name]
    if cls:
        bits.append(f'class="{esc(cls)}"')
    if style:
        bits.append(f'style="{esc(style)}"')
    if title:
        bits.append(f'title="{esc(title)}"')
    for k, v in attrs.items():
        if v is None or v is False:
            continue
        key = k.rstrip("_").replace("_", "-")
        bits.append(key if v is True else f'{key}="{esc(v)}"')
    return Html(f"<{' '.join(bits)}>{concat(*body)}</{name}>")


def clip(text: str | None, limit: int) -> tuple[str, int]:
    """(the first `limit` characters of `text`, how many more there are)."""
    text = text or ""
    if limit < 0 or len(text) <= limit:
        return text, 0
    return text[:limit], len(text) - limit


def note(text: Any) -> Html:
    """A quiet remark (grey, small)."""
    return tag("span", text, style="color:#6e7781;font-size:0.92em")


def pre(text: str | None, limit: int = 4000, *, cls: str | None = None, max_height: str = "24em") -> Html:
    """Monospaced text kept as written (wrapped, scrolled past `max_height`), cut at `limit` characters with a
    note saying how much was left out."""
    shown, more = clip(text, limit)
    style = (f"{_MONO};white-space:pre-wrap;word-break:break-word;margin:2px 0;padding:4px 6px;"
             f"background:rgba(127,127,127,0.08);border-radius:3px;max-height:{max_height};overflow:auto")
    body = tag("pre", shown, style=style, cls=cls)
    if more:
        body = concat(body, note(f"… {more:,} more characters not shown"))
    return body


def badge(text: Any, color: str | None = None, *, title: str | None = None, cls: str | None = None) -> Html:
    """A small coloured label (the colour from `COLORS` by the text when not given)."""
    c = color or COLORS.get(str(text), "#6e7781")
    return tag("span", text, cls=cls, title=title,
               style=f"display:inline-block;padding:0 6px;border-radius:9px;font-size:0.85em;line-height:1.35;"
                     f"border: 1px solid {c}; color: {c}; white-space: nowrap")


def details(summary: Any, *body: Any, open: bool = False, cls: str | None = None) -> Html:
    """A collapsible part: `summary` always shown, `body` when opened (no JavaScript needed)."""
    return tag("details", tag("summary", summary, style="cursor:pointer"),
               tag("div", *body, style="margin:2px 0 4px 16px"), open=open, cls=cls)


_CELL = "padding:1px 8px;text-align:left;vertical-align:top;border-bottom:1px solid rgba(127,127,127,0.2)"
# the same rules for a page's tables drawn with `plain=True` (one rule instead of a style on every cell)
PLAIN_TABLE_STYLE = f".ladr-plain td,.ladr-plain th{{{_CELL}}}.ladr-plain th{{font-weight:600}}"


def table(header: Sequence[Any], rows: Iterable[Sequence[Any]], *, cls: str | None = None,
          row_styles: Sequence[str | None] | None = None, plain: bool = False) -> Html:
    """A compact table; cells are escaped unless Html. `plain`: no style on each cell, for a page whose own rules
    (`PLAIN_TABLE_STYLE`) style the table (a page's table of thousands of rows is a third the size)."""
    if plain:
        head = Html("<tr>" + "".join(f"<th>{esc(h)}</th>" for h in header) + "</tr>")
        lines = "".join("<tr>" + "".join(f"<td>{esc(c)}</td>" for c in r) + "</tr>" for r in rows)
        return tag("table", tag("thead", head), tag("tbody", Html(lines)), cls=f"ladr-plain {cls or ''}".strip(),
                   style="border-collapse:collapse;margin:4px 0;font-size:0.95em")
    cell = _CELL
    head = tag("tr", *(tag("th", h, style=cell + "; font-weight: 600") for h in header))
    body = []
    for i, r in enumerate(rows):
        st = row_styles[i] if row_styles is not None and i < len(row_styles) else None
        body.append(tag("tr", *(tag("td", c, style=cell) for c in r), style=st))
    return tag("table", tag("thead", head), tag("tbody", join(body)), cls=cls,
               style="border-collapse:collapse;margin:4px 0;font-size:0.95em")


def kv_table(pairs: Iterable[tuple[Any, Any]]) -> Html:
    """Name/value rows (names bold), leaving out pairs whose value is None."""
    cell = "padding:0 10px 0 0;vertical-align:top;text-align:left"
    rows = [tag("tr", tag("th", k, style=cell + "; font-weight: 600; white-space: nowrap"), tag("td", v, style=cell))
            for k, v in pairs if v is not None]
    return tag("table", join(rows), style="border-collapse:collapse;margin:2px 0")


def root(*body: Any, cls: str, title: Any = None) -> Html:
    """The outer box of a view: its CSS class (e.g. `ladr-trace`) and an optional title line."""
    head = tag("div", title, style="font-weight:600;margin-bottom:2px") if title is not None else None
    return tag("div", head, *body, cls=f"ladr-view {cls}",
               style=f"{_FONT};border-left:3px solid rgba(9,105,218,0.5);padding:2px 0 2px 10px;margin:2px 0")


# a standalone page's own rules: the views' styles are inline; these only set the page and mark the part a link
# points at (`#cell-3`); the script opens a closed <details> that a link points at, where the browser does not
_PAGE_STYLE = ("body{margin:16px 24px;background:#fff;color:#1f2328}"
               ":target{outline:2px solid #0969da;outline-offset:2px}a.ladr-link{text-decoration:none}")
_PAGE_SCRIPT = ("function o(){var e=location.hash&&document.getElementById(decodeURIComponent(location.hash.slice(1)));"
                "for(;e;e=e.parentElement){if(e.tagName==='DETAILS'){e.open=true}}}"
                "addEventListener('hashchange',o);addEventListener('DOMContentLoaded',o);")


def page(body: Any, title: str, *, style: str = "") -> str:
    """A standalone HTML document around a view: readable offline, with nothing loaded from elsewhere (the styles
    are the views' own inline ones, and `style`, rules of the page's own; one inline script opens a collapsed part
    a link points at)."""
    head = ('<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"{tag('title', title)}<style>{_PAGE_STYLE}{PLAIN_TABLE_STYLE}{style}</style><script>{_PAGE_SCRIPT}</script></head><body>")
    return head + str(esc(body)) + "</body></html>\n"     # one join: a page may be tens of megabytes


def bar_chart(values: Sequence[float], labels: Sequence[str] | None = None, *, width: int = 480, height: int = 60,
              max_bars: int = 240, title: str = "") -> Html:
    """An inline SVG bar chart (one bar a value; more than `max_bars` values are bucketed by their maximum),
    each bar with a tooltip."""
    if not values:
        return Html("")
    vals, labs = list(values), list(labels) if labels is not None else [str(i + 1) for i in range(len(values))]
    if len(vals) > max_bars:
        size = -(-len(vals) // max_bars)
        buckets = [range(i, min(i + size, len(vals))) for i in range(0, len(vals), size)]
        vals = [max(vals[i] for i in b) for b in buckets]
        labs = [f"{labs[b[0]]} … {labs[b[-1]]} (max)" for b in buckets]
    top = max(vals) or 1
    width = min(width, 24 * len(vals))       # a few values stay thin bars, not slabs
    w = width / len(vals)
    bars = []
    for i, (v, lab) in enumerate(zip(vals, labs, strict=True)):
        h = max(1.0, (height - 2) * v / top)
        bars.append(f'<rect x="{i * w:.2f}" y="{height - h:.2f}" width="{max(w - 1, 0.5):.2f}" height="{h:.2f}" '
                    f'fill="#0969da" fill-opacity="0.6"><title>{esc(lab)}: {fmt_int(v)}</title></rect>')
    svg = (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img" '
           f'aria-label="{esc(title)}" style="display:block">{"".join(bars)}</svg>')
    return concat(Html(svg), note(f"{title} (max {fmt_int(top)})") if title else None)


# Charts are inline SVG written here, not matplotlib (a PNG: no hover, a heavy import) nor Altair/Vega-Lite (drawn
# by JavaScript, which GitHub's notebook view strips and an offline page must bundle): an SVG in an HTML output
# shows in JupyterLab, in a saved notebook on nbviewer and GitHub, and in a static page, and each mark's <title> is
# its tooltip there; every chart is shown beside a table of its numbers (docs/widgets.md, "Charts").
CHART_COLORS = ("#0969da", "#1a7f37", "#bc4c00", "#8250df", "#6e7781", "#cf222e", "#0a7480", "#9a6700")


def _num(x: Any) -> bool:
    return isinstance(x, (int, float)) and x == x


def _f(x: Any) -> float:
    """A chart's value as a float (checked by `_num` first)."""
    return float(x)


def scatter_chart(points: Sequence[Mapping[str, Any]], *, x_label: str = "recall", y_label: str = "precision",
                  size: int = 300, title: str = "") -> Html:
    """An inline SVG scatter plot on [0, 1] × [0, 1]: each point a dict with `x`, `y`, `label` (its tooltip, with
    the figures), optional `group` (one colour and legend entry each), `marked` (drawn larger, ringed, named) and
    `href` (a click follows it: `#id` of the part that shows it); a point without both figures is left out."""
    pad_l, pad_b, pad_t, pad_r = 42, 34, 10, 12
    w = h = size
    plot_w, plot_h = w - pad_l - pad_r, h - pad_t - pad_b
    groups = list(dict.fromkeys(str(p.get("group", "")) for p in points))
    color = {g: CHART_COLORS[i % len(CHART_COLORS)] for i, g in enumerate(groups)}
    parts = [f'<rect x="{pad_l}" y="{pad_t}" width="{plot_w}" height="{plot_h}" fill="none" stroke="#d0d7de"/>']
    for t in (0.0, 0.25, 0.5, 0.75, 1.0):
        x, y = pad_l + t * plot_w, pad_t + (1 - t) * plot_h
        parts.append(f'<line x1="{x:.1f}" y1="{pad_t}" x2="{x:.1f}" y2="{pad_t + plot_h}" stroke="#eaeef2"/>'
                     f'<line x1="{pad_l}" y1="{y:.1f}" x2="{pad_l + plot_w}" y2="{y:.1f}" stroke="#eaeef2"/>'
                     f'<text x="{x:.1f}" y="{pad_t + plot_h + 13}" font-size="10" text-anchor="middle" '
                     f'fill="#57606a">{t:g}</text><text x="{pad_l - 4}" y="{y + 3:.1f}" font-size="10" '
                     f'text-anchor="end" fill="#57606a">{t:g}</text>')
    parts.append(f'<text x="{pad_l + plot_w / 2:.1f}" y="{h - 4}" font-size="11" text-anchor="middle" '
                 f'fill="#24292f">{esc(x_label)}</text><text x="11" y="{pad_t + plot_h / 2:.1f}" font-size="11" '
                 f'text-anchor="middle" fill="#24292f" transform="rotate(-90 11 {pad_t + plot_h / 2:.1f})">'
                 f'{esc(y_label)}</text>')
    seen: dict[tuple[float, float], int] = {}
    shown = 0
    for p in sorted(points, key=lambda p: bool(p.get("marked"))):     # the marked one on top
        px, py = p.get("x"), p.get("y")
        if not (_num(px) and _num(py)):
            continue
        shown += 1
        k = (round(_f(px), 3), round(_f(py), 3))
        n = seen[k] = seen.get(k, -1) + 1            # points at one place fan out a little, so each can be hovered
        cx = pad_l + _f(px) * plot_w + (n % 3 - 1) * 5 * (n > 0)
        cy = pad_t + (1 - _f(py)) * plot_h - (n // 3) * 5 * (n > 0)
        c = color[str(p.get("group", ""))]
        r = 7 if p.get("marked") else 4.5
        ring = ' stroke="#24292f" stroke-width="2"' if p.get("marked") else ' stroke="#ffffff" stroke-width="1"'
        dot = (f'<circle cx="{cx:.1f}" cy="{cy:.1f}" r="{r}" fill="{c}" fill-opacity="0.85"{ring}>'
               f'<title>{esc(p.get("label", ""))}</title></circle>')
        if p.get("href"):
            # xlink:href, not href: JupyterLab rewrites every <a href> of an HTML output by assigning `a.href`,
            # which an SVG <a> only has a getter for (the output then renders as a "Javascript Error")
            dot = f'<a xlink:href="{esc(p["href"])}">{dot}</a>'
        parts.append(dot)
        if p.get("marked"):
            name = str(p.get("name") or "")
            ty = cy - 9 if cy > pad_t + 16 else cy + 19        # below the point when it sits at the top edge
            parts.append(f'<text x="{cx - 9:.1f}" y="{ty:.1f}" font-size="11" font-weight="600" text-anchor="end" '
                         f'fill="#24292f">{esc(name)}</text>')
    legend = "".join(f'<span style="margin-right:10px;white-space:nowrap"><svg width="10" height="10" '
                     f'style="vertical-align:middle"><circle cx="5" cy="5" r="4.5" fill="{color[g]}"/></svg> '
                     f'{esc(g)}</span>' for g in groups if g)
    svg = (f'<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" width="{w}" '
           f'height="{h}" role="img" aria-label="{esc(title or f"{y_label} against {x_label}")}" class="ladr-chart" '
           f'style="display:block">{"".join(parts)}</svg>')
    return concat(Html(svg), tag("div", Html(legend), style="font-size:11px;color:#57606a") if legend else None,
                  note(f"{title} ({shown} point(s); hover one for its figures)") if title else None)


def bar_rows(rows: Sequence[Mapping[str, Any]], *, max_value: float | None = None, width: int = 300,
             fmt: Any = None, title: str = "") -> Html:
    """An inline SVG chart of horizontal bars, one a row: each a dict with `label`, `value`, optional `title`
    (its tooltip), `group` (a colour each), `whisker` (a second value drawn as a line: p95 beside p50) and
    `heading` (a row that only names the bars under it); `fmt` writes a value (default: 0.00)."""
    fmt = fmt or (lambda v: f"{v:.2f}")
    label_w, value_w, bar_h, gap = 150, 64, 14, 4
    values = [_f(r["value"]) for r in rows if _num(r.get("value"))] + \
        [_f(r["whisker"]) for r in rows if _num(r.get("whisker"))]
    top = max_value if max_value is not None else (max(values) if values else 1.0) or 1.0
    groups = list(dict.fromkeys(str(r.get("group", "")) for r in rows if not r.get("heading")))
    color = {g: CHART_COLORS[i % len(CHART_COLORS)] for i, g in enumerate(groups)}
    parts, y = [], 0
    for r in rows:
        if r.get("heading"):
            parts.append(f'<text x="0" y="{y + 11}" font-size="11" font-weight="600" fill="#24292f">'
                         f'{esc(r["heading"])}</text>')
            y += bar_h + gap
            continue
        v = r.get("value")
        tip = esc(r.get("title") or f"{r.get('label', '')}: {fmt(v) if _num(v) else '-'}")
        parts.append(f'<text x="{label_w - 6}" y="{y + 11}" font-size="11" text-anchor="end" fill="#24292f">'
                     f'{esc(str(r.get("label", ""))[:24])}<title>{tip}</title></text>')
        if _num(v):
            bw = max(1.0, width * min(_f(v), top) / top)
            parts.append(f'<rect x="{label_w}" y="{y}" width="{bw:.1f}" height="{bar_h}" fill="'
                         f'{color[str(r.get("group", ""))]}" fill-opacity="0.75"><title>{tip}</title></rect>')
            wv = r.get("whisker")
            if _num(wv):
                wx = label_w + width * min(_f(wv), top) / top
                parts.append(f'<line x1="{label_w + bw:.1f}" y1="{y + bar_h / 2}" x2="{wx:.1f}" y2="{y + bar_h / 2}" '
                             f'stroke="#24292f" stroke-width="1"><title>{tip}</title></line><line x1="{wx:.1f}" '
                             f'y1="{y + 2}" x2="{wx:.1f}" y2="{y + bar_h - 2}" stroke="#24292f"><title>{tip}</title>'
                             f'</line>')
            parts.append(f'<text x="{label_w + width + 6}" y="{y + 11}" font-size="11" fill="#57606a">'
                         f'{esc(fmt(_f(v)))}</text>')
        else:
            parts.append(f'<text x="{label_w + 4}" y="{y + 11}" font-size="11" fill="#57606a">-</text>')
        y += bar_h + gap
    legend = "".join(f'<span style="margin-right:10px;white-space:nowrap"><svg width="10" height="10" '
                     f'style="vertical-align:middle"><rect width="10" height="10" fill="{color[g]}"/></svg> '
                     f'{esc(g)}</span>' for g in groups if g and len(groups) > 1)
    svg = (f'<svg xmlns="http://www.w3.org/2000/svg" width="{label_w + width + value_w}" height="{max(y, 1)}" '
           f'role="img" aria-label="{esc(title)}" class="ladr-chart" style="display:block">{"".join(parts)}</svg>')
    return concat(tag("div", title, style="font-size:12px;font-weight:600;margin:4px 0") if title else None,
                  Html(svg), tag("div", Html(legend), style="font-size:11px;color:#57606a") if legend else None)


def fmt_int(n: float | int | None) -> str:
    """`12,345` (None as "-")."""
    return "-" if n is None else f"{round(n):,}"


def fmt_bytes(n: int | None) -> str:
    """`1.2 MB`, `340 B`."""
    if n is None:
        return "-"
    size = float(n)
    for unit in ("B", "KB", "MB", "GB"):
        if size < 1000 or unit == "GB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1000
    return f"{n} B"


def fmt_cost(cost: float | None) -> str:
    """`$0.0012` (zero as `$0`)."""
    if not cost:
        return "$0"
    return f"${cost:.4f}" if cost >= 0.0001 else f"${cost:.2e}"


def plural(n: int, word: str, many: str | None = None) -> str:
    """`1 round`, `3 rounds`."""
    return f"{n:,} {word if n == 1 else (many or word + 's')}"


def json_text(value: Any, indent: int | None = 2) -> str:
    """A JSON value as text (anything JSON cannot say, as `str`)."""
    return json.dumps(value, indent=indent, ensure_ascii=False, default=str)


class Displayable:
    """Mixin: `_repr_mimebundle_` (text/plain and text/html) and `_repr_html_` from the class's `to_html()`
    and `to_text()` (default: `repr`), so the object displays itself in any notebook without a widget."""

    def to_html(self) -> str:
        """The object as a static HTML view."""
        raise NotImplementedError

    def to_text(self) -> str:
        """The object as plain text (what a terminal shows)."""
        return repr(self)

    def _repr_html_(self) -> str:
        return self.to_html()

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        # as rich's JupyterMixin, but each view is built only when the front end asks for it
        data: dict[str, str] = {}
        if wanted("text/plain", include, exclude):
            data["text/plain"] = self.to_text()
        if wanted("text/html", include, exclude):
            data["text/html"] = self.to_html()
        return data


def wanted(mime: str, include: Any = None, exclude: Any = None) -> bool:
    """Whether a `_repr_mimebundle_` asked with `include`/`exclude` (IPython's arguments) should hold `mime`."""
    return (not include or mime in include) and not (exclude and mime in exclude)


def render(obj: Any, mime: str = "text/html") -> str:
    """What a notebook shows for `obj` in one MIME type (the test helper: a view as a string)."""
    if mime == "text/html" and isinstance(obj, Html):
        return str(obj)
    bundle = getattr(obj, "_repr_mimebundle_", None)
    if bundle is not None:
        data = bundle()
        data = data[0] if isinstance(data, tuple) else data
        if mime in data:
            return data[mime]
    if mime == "text/html" and hasattr(obj, "_repr_html_"):
        return obj._repr_html_()
    if mime == "text/plain":
        return repr(obj)
    raise KeyError(f"{type(obj).__name__} has no {mime} view")
