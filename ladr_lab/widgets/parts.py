"""The building blocks every view is made of: `View` (a root box that displays itself, with listeners it
detaches on close), `Fold` (a collapsible whose body is built when first opened), `Pager` (a list shown a
page at a time) and `PagedText` (a long text shown a chunk at a time).

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

__all__ = ["CHUNK", "PAGE", "Fold", "PagedText", "Pager", "View", "button", "head_html", "html", "ipw", "layout",
           "message_html", "shared"]

PAGE = 50            # items a pager shows at once
CHUNK = 20_000       # characters a PagedText adds at a time
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"    # the live widget's MIME type

# A few rules for the views' own parts (a <style> in an HTML widget applies to the page, also while that widget
# is hidden): ipywidgets gives HTML content the line height of a button row (28px), which spreads text out.
STYLE = """<style>
.ladr-widget .widget-html-content { line-height: 1.45; }
.ladr-widget .widget-html, .ladr-widget .widget-html-content { margin-top: 0; margin-bottom: 0; }
.ladr-widget .ladr-toggle { padding: 0; min-width: 0; font-size: 12px; line-height: 1; }
.ladr-widget .ladr-fold-head .widget-html-content { white-space: nowrap; overflow: hidden; text-overflow: ellipsis; }
.ladr-widget .ladr-scroll { max-height: 32em; overflow: auto; }
.ladr-widget table td, .ladr-widget table th { line-height: 1.35; }
</style>"""


def ipw() -> Any:
    """The ipywidgets module (imported on first use: `import ladr_lab` never loads it)."""
    import ipywidgets
    return ipywidgets


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
