"""The building blocks every view is made of: `View` (a root box that displays itself, with listeners it
detaches on close), `Fold` (a collapsible whose body is built when first opened), `Pager` (a list shown a
page at a time), `PagedTable` (a table shown a page at a time, with a row to open) and `PagedText` (a long
text shown a chunk at a time).

Together they keep a view cheap however large its data: nothing below a closed fold exists as a widget,
a list of a thousand rounds sends one page of them, and a 400,000-character prompt section sends its first
chunk until asked for more. ipywidgets is imported inside functions (the package's rule): this module loads
without it.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import ExitStack
from typing import Any

from ..display import Html, esc, note, pre, tag, wanted

__all__ = ["CHUNK", "PAGE", "Fold", "PagedTable", "PagedText", "Pager", "View", "button", "head_html", "html",
           "in_kernel", "ipw", "layout", "message_html", "shared", "span_text"]

PAGE = 50            # items a pager shows at once
CHUNK = 20_000       # characters a PagedText adds at a time
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"    # the live widget's MIME type

# A few rules for the views' own parts (a <style> in an HTML widget applies to the page, also while that widget
# is hidden): ipywidgets gives HTML content the line height of a button row (28px), which spreads text out, and
# sizes every tab title to 144px (`--jp-widgets-horizontal-tab-width`), which cuts "Diff · small vs tight".
STYLE = """<style>
.ladr-widget .widget-html-content { line-height: 1.45; }
.ladr-widget .widget-html, .ladr-widget .widget-html-content { margin-top: 0; margin-bottom: 0; }
.ladr-widget .ladr-toggle { padding: 0; min-width: 0; font-size: 12px; line-height: 1; }
.ladr-widget .ladr-fold-head .widget-html-content { white-space: nowrap; overflow: hidden; text-overflow: ellipsis; }
.ladr-widget .ladr-scroll { max-height: 32em; overflow: auto; }
.ladr-widget table td, .ladr-widget table th { line-height: 1.35; }
.ladr-widget .lm-TabBar-tab, .ladr-widget .p-TabBar-tab { flex: 0 0 auto; max-width: none; min-width: 0; }
</style>"""


def ipw() -> Any:
    """The ipywidgets module (imported on first use: `import ladr_lab` never loads it)."""
    import ipywidgets
    return ipywidgets


def in_kernel() -> bool:
    """Whether this runs in a notebook kernel (an IPython shell with a kernel), where a widget's click is heard only
    while the kernel is idle: a view that makes model calls from a button then runs them on a thread of its own."""
    import sys

    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    return getattr(shell, "kernel", None) is not None


def message_html(text: str, kind: str = "info") -> str:
    """A one-line message: an error in red, anything else quiet."""
    if not text:
        return ""
    color = {"error": "#cf222e", "warning": "#bc4c00"}.get(kind, "#57606a")
    return str(tag("div", text, style=f"color: {color}; white-space: pre-wrap", cls=f"ladr-message ladr-{kind}"))


class View:
    """Base of the notebook views: `widget` is the root ipywidgets box; the view displays as that widget
    (with its static HTML as the fallback a saved notebook shows without a widget front end); `close()`
    detaches what the view listens to and closes its widgets."""

    css_class = "ladr-view"

    def __init__(self) -> None:
        self._stack = ExitStack()
        self.widget: Any = None

    def _root(self, children: Sequence[Any], **layout_kw: Any) -> Any:
        w = ipw()
        style = html(STYLE)
        style.layout = layout("hidden", display="none")
        box = w.VBox([style, *children], layout=w.Layout(**layout_kw))
        box.add_class("ladr-widget")
        box.add_class(self.css_class)
        return box

    def static_html(self) -> str:
        """What a notebook without the widget front end shows (a saved notebook on GitHub or nbviewer)."""
        return ""

    def __repr__(self) -> str:
        return f"<{type(self).__name__} ({self.css_class})>"

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None, **kwargs: Any) -> dict:
        data: dict = {}
        if wanted(WIDGET_VIEW, include, exclude):
            data.update(self.widget._repr_mimebundle_(**kwargs) or {})
        if wanted("text/html", include, exclude):      # the static view is built only when asked for
            fallback = self.static_html()
            if fallback:
                data["text/html"] = fallback
        data["text/plain"] = repr(self)      # not ipywidgets' `VBox(children=(HTML(value='<style>…`
        return {k: v for k, v in data.items() if wanted(k, include, exclude)}

    def close(self) -> None:
        """Stop listening (to a trace, to a run) and close the view's widgets."""
        self._stack.close()
        if self.widget is not None:
            self.widget.close()


_SHARED: dict[str, Any] = {}


def shared(key: str, make: Callable[[], Any]) -> Any:
    """One Layout or style object shared by every widget that asks for `key`: a widget's own layout and style
    are two more models to create and send, which is most of the cost of a small widget (they are never
    changed after creation; a part that changes its layout makes its own)."""
    got = _SHARED.get(key)
    if got is None or getattr(got, "comm", None) is None:     # closed (e.g. by Widget.close_all): make anew
        got = _SHARED[key] = make()
    return got


def layout(key: str, **kw: Any) -> Any:
    """A shared Layout (see `shared`)."""
    return shared("layout:" + key, lambda: ipw().Layout(**kw))


def _html_style() -> Any:
    from ipywidgets.widgets.widget_string import HTMLStyle
    return HTMLStyle()


def html(value: str = "", cls: str | None = None) -> Any:
    """An HTML widget with the shared layout and style (a third of the cost of a plain one)."""
    w = ipw().HTML(value=value, layout=layout("html"), style=shared("style:html", _html_style))
    if cls:
        w.add_class(cls)
    return w


def button(description: str, *, key: str = "button", tooltip: str | None = None, **layout_kw: Any) -> Any:
    """A Button with a shared layout (per `key`) and the shared button style."""
    b = ipw().Button(description=description, tooltip=tooltip, layout=layout(key, **layout_kw),
                     style=shared("style:button", ipw().ButtonStyle))
    return b


def paged(text: str, chunk: int) -> Callable[[], list]:
    """A fold's body builder showing `text` a page at a time (made when the fold first opens)."""
    return lambda: [PagedText(text, chunk=chunk).widget]


class Fold:
    """A collapsible: a header line (HTML) with a toggle button; its body is built by `build()` the first time
    it opens (and is only part of the page while open). Four small widgets with shared layouts, so a page of
    folds is cheap to build and to send."""

    def __init__(self, head: str, build: Callable[[], list], *, open: bool = False, cls: str | None = None,
                 on_open: Callable[[Fold], None] | None = None) -> None:
        w = ipw()
        self._build = build
        self.on_open = on_open
        self.built = False
        self.is_open = False
        self.toggle = button("▸", key="fold-toggle", tooltip="open / close", width="2.4em", height="1.9em",
                             padding="0", flex="0 0 auto")
        self.toggle.add_class("ladr-toggle")
        self.head = w.HTML(value=head, layout=layout("fold-head", flex="1 1 auto", overflow="hidden"),
                           style=shared("style:html", _html_style))
        self.head.add_class("ladr-fold-head")
        self.header = w.HBox([self.toggle, self.head], layout=layout("fold-header", align_items="center"))
        self.body: Any = None
        self.widget = w.VBox([self.header], layout=layout("fold"))
        if cls:
            self.widget.add_class(cls)
        self.toggle.on_click(lambda _b: self.set_open(not self.is_open))
        if open:
            self.set_open(True)

    def set_open(self, value: bool = True) -> None:
        """Open (building the body the first time) or close."""
        if value and not self.built:
            self.built = True
            self.body = ipw().VBox(list(self._build()), layout=layout("fold-body", margin="0 0 2px 1.6em"))
        if value != self.is_open:
            self.is_open = value
            self.widget.children = (self.header, self.body) if value else (self.header,)
            self.toggle.description = "▾" if value else "▸"
        if value and self.on_open is not None:
            self.on_open(self)

    def rebuild(self) -> None:
        """Build the body again (if it was built) from the current data."""
        if self.built:
            self.body.children = tuple(self._build())


class Pager:
    """A list shown a page at a time: `make(items)` turns one page of items into widgets; Previous/Next buttons
    and a count appear when there is more than one page. `append` adds an item (shown at once when it falls
    on the page being shown)."""

    def __init__(self, items: Sequence[Any], make: Callable[[list], list], *, page: int = PAGE, noun: str = "item",
                 at_end: bool = False) -> None:
        w = ipw()
        self.items = list(items)
        self.make = make
        self.size = max(1, page)
        self.noun = noun
        self.page = self.last_page if at_end else 0
        self.prev = button("◀ Previous", key="auto", width="auto")
        self.next = button("Next ▶", key="auto", width="auto")
        self.label = html()
        self.controls = w.HBox([self.prev, self.label, self.next], layout=layout("row", align_items="center"))
        self.content = w.VBox([], layout=layout("box"))
        self.widget = w.VBox([self.content], layout=layout("box"))
        self.prev.on_click(lambda _b: self.show(self.page - 1))
        self.next.on_click(lambda _b: self.show(self.page + 1))
        self.show(self.page)

    @property
    def last_page(self) -> int:
        """The index of the last page."""
        return max(0, (len(self.items) - 1) // self.size)

    def _label(self) -> None:
        n = len(self.items)
        lo, hi = self.page * self.size, min(n, (self.page + 1) * self.size)
        self.label.value = str(note(f"{lo + 1:,}–{hi:,} of {n:,} {self.noun}s" if n else f"no {self.noun}s"))
        many = n > self.size
        # the controls are on the page only when there is more than one page (no layout of theirs changes)
        self.widget.children = (self.controls, self.content) if many else (self.content,)
        self.prev.disabled = self.page <= 0
        self.next.disabled = self.page >= self.last_page

    def show(self, page: int) -> None:
        """Show page `page` (clamped)."""
        self.page = min(max(0, page), self.last_page)
        lo = self.page * self.size
        self.content.children = tuple(self.make(self.items[lo:lo + self.size]))
        self._label()

    def set_items(self, items: Sequence[Any], *, at_end: bool = False) -> None:
        """Replace the items and show the first (or last) page."""
        self.items = list(items)
        self.show(self.last_page if at_end else min(self.page, self.last_page))

    def append(self, item: Any, *, follow: bool = False) -> None:
        """Add one item; shown now if it lands on the page in view (`follow` moves to its page)."""
        self.items.append(item)
        index = len(self.items) - 1
        if index // self.size == self.page:
            self.content.children = self.content.children + tuple(self.make([item]))
            self._label()
        elif follow:
            self.show(index // self.size)
        else:
            self._label()


def span_text(start: int, shown: int, total: int) -> str:
    """A page's place in its rows: `1–20 of 131` (`0–0 of 0` when there are none)."""
    return f"{start + 1 if total else 0:,}–{start + shown:,} of {total:,}"


class PagedTable:
    """A table shown a page at a time, with a row to open: a bar of `controls` (a view's filters) and ◀ / ▶
    with a label (`1–20 of 131`), the page's table, and a dropdown (`pick`, "open row") of the page's rows.

    `rows` is the table's rows, or a function giving them (called again on every `show`, so a view's filter
    only calls `show(0)`). `render(rows, start, size)` draws `rows[start:start + size]` (the HTML helpers'
    signature: `evaluation_rows_html`, `diff_rows_html`) as HTML, shown in `table`, or as a list of widgets,
    shown in its place (the caller closes widgets it no longer shows). `pick(row, index)` names a row of the
    page in the dropdown, as a label that is also its value or a `(label, value)` pair (`index` counts from the
    first row of all); a picked value is passed to `on_pick(value)`, never the blank first option (`blank`) nor
    a value only set while the page is drawn. `keep` keeps the value picked when it is on the new page too;
    otherwise a new page starts unpicked. `pick=None`: no dropdown. With no rows, `empty` (a text, or a
    function giving it) replaces the table and the dropdown is hidden. `label(start, shown, total)` writes
    the page label (`span_text`). `defer`: draw nothing until the first `show()`."""

    def __init__(self, rows: Sequence[Any] | Callable[[], Sequence[Any]], render: Callable[[list, int, int], Any], *,
                 size: int = PAGE, controls: Sequence[Any] = (), pick: Callable[[Any, int], Any] | None = None,
                 on_pick: Callable[[Any], Any] | None = None, blank: bool = True, keep: bool = False,
                 pick_label: str = "open row", pick_width: str | None = None,
                 empty: str | Callable[[], str] | None = None, label: Callable[[int, int, int], str] = span_text,
                 cls: str | None = None, defer: bool = False) -> None:
        w = ipw()
        self._rows = rows if callable(rows) else (lambda items=list(rows): items)
        self.render = render
        self.size = max(1, size)
        self.pick_row = pick
        self.on_pick = on_pick
        self.blank = blank
        self.keep = keep
        self.empty = empty
        self.label = label
        self.rows: list = []        # the rows read at the last `show`
        self.start = 0              # the first row on the page shown
        self._drawing = False
        self.prev = button("◀", key="arrow", width="2.6em", tooltip="previous page")
        self.next = button("▶", key="arrow", width="2.6em", tooltip="next page")
        self.page_label = html(cls="ladr-page-label")
        self.bar = w.HBox([*controls, self.prev, self.page_label, self.next], layout=layout("row", align_items="center"))
        self.bar.add_class("ladr-pages")
        self.table = html(cls=cls)
        self.pick: Any = None
        if pick is not None:
            self.pick = w.Dropdown(options=[], description=pick_label,
                                   layout=w.Layout(width=pick_width) if pick_width else w.Layout())
            self.pick.observe(lambda c: self._picked(c["new"]), names="value")
        self.widget = w.VBox(self._children((self.table,)), layout=layout("box"))
        self.widget.add_class("ladr-paged-table")
        self.prev.on_click(lambda _b: self.turn(-1))
        self.next.on_click(lambda _b: self.turn(1))
        if not defer:
            self.show(0)

    def _children(self, content: Sequence[Any]) -> tuple:
        return (self.bar, *content) + ((self.pick,) if self.pick is not None else ())

    @property
    def shown(self) -> list:
        """The rows on the page shown."""
        return self.rows[self.start:self.start + self.size]

    def start_of(self, index: int) -> int:
        """The first row of the page holding row `index`."""
        return max(0, index) // self.size * self.size

    def set_rows(self, rows: Sequence[Any], start: int | None = 0) -> None:
        """Show other rows (from `start`; None: the page shown)."""
        self._rows = lambda items=list(rows): items
        self.show(start)

    def turn(self, pages: int) -> None:
        """Turn `pages` pages on (back when negative)."""
        self.show(self.start + pages * self.size)

    def show_row(self, index: int) -> None:
        """Show the page holding row `index`."""
        self.show(self.start_of(index))

    def show(self, start: int | None = None) -> None:
        """Read the rows again and show the page starting at row `start` (None: the page shown), kept
        within the rows."""
        rows = self.rows = list(self._rows())
        n = len(rows)
        start = self.start if start is None else start
        self.start = start = max(0, min(start, self.start_of(n - 1) if n else 0))
        shown = rows[start:start + self.size]
        empty = self.empty() if callable(self.empty) else self.empty
        drawn = self.render(rows, start, self.size) if rows or empty is None else note(empty)
        if isinstance(drawn, (list, tuple)):
            self.widget.children = self._children(drawn)
        else:
            self.table.value = str(drawn)
            if self.widget.children[1:2] != (self.table,):
                self.widget.children = self._children((self.table,))
        self.page_label.value = str(note(self.label(start, len(shown), n)))
        self.prev.disabled = start <= 0
        self.next.disabled = start + self.size >= n
        if self.pick is not None:
            self._fill_pick(shown, start)
            self.pick.layout.display = None if rows else "none"

    def _fill_pick(self, shown: list, start: int) -> None:
        assert self.pick_row is not None
        options = [self.pick_row(r, i) for i, r in enumerate(shown, start)]
        values = [o[1] if isinstance(o, tuple) else o for o in options]
        was = self.pick.value
        none: Any = None
        if self.blank:
            paired = any(isinstance(o, tuple) for o in options)
            none = None if paired else ""
            options = [("", None) if paired else "", *options]
        self._drawing = True        # setting the options picks their first: not the reader's pick
        try:
            self.pick.options = options
            self.pick.value = was if self.keep and was in values else none
        finally:
            self._drawing = False

    def _picked(self, value: Any) -> None:
        if not self._drawing and value is not None and value != "" and self.on_pick is not None:
            self.on_pick(value)


class PagedText:
    """A long text shown `chunk` characters at a time, with a button for more."""

    def __init__(self, text: str, *, chunk: int = CHUNK, cls: str | None = None, max_height: str = "30em") -> None:
        w = ipw()
        self.text = text or ""
        self.chunk = chunk
        self.shown = 0
        self.cls = cls
        self.max_height = max_height
        self.html = html()
        self.more = button("", key="auto", width="auto")
        self.widget = w.VBox([self.html], layout=layout("box"))
        self.more.on_click(lambda _b: self.show_more())
        self.show_more()

    def show_more(self) -> None:
        """Show the next chunk."""
        self.shown = min(len(self.text), self.shown + self.chunk)
        self.html.value = str(pre(self.text[:self.shown], -1, cls=self.cls, max_height=self.max_height))
        left = len(self.text) - self.shown
        self.more.description = f"Show {min(left, self.chunk):,} more of {left:,} characters"
        self.widget.children = (self.html, self.more) if left > 0 else (self.html,)


def head_html(*parts: Any) -> str:
    """Header parts (Html or text) side by side, as a string for an HTML widget."""
    return str(Html("".join(esc(p) for p in parts if p is not None)))
