"""SlateView: a slate folder's files (a paged table of sizes, dates and metatags, filtered by path), a tree
opened level by level, a file preview, and the files a round fetched lit with their status.

The listing comes from the folder itself (`file_stats`, `metatags`, `index`), which keeps it current; a view
reads it again on `refresh()` (the Stepper calls it when a write is made). A 10,000-file folder sends one
page of rows, the tree's first level, and nothing of a file until it is previewed.
"""
from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

from ..display import Html, badge, concat, fmt_bytes, join, json_text, note, plural, pre, root, table, tag
from ..errors import SlateError
from ..slate import Folder, Slate, SlateStore
from ..slate.html import DIR_ENTRIES, file_rows
from ..trace import LlmCall, Trace, Write
from ..trace.html import write_html
from ..trace.story import FetchRow, RoundStory, WriteStory, describe
from .parts import Fold, PagedTable, View, head_html, html, ipw, message_html

__all__ = ["SlateView"]

PREVIEW_CHARS = 20_000
NOWRAP = "white-space:nowrap"
# a file fetched (or written) in a round stays lit so, even when a later request of the same round lists it again
# (then it is "already_in_context")
STRONG_STATUS = ("written", "fetched")
LIT_STYLE = {"fetched": "rgba(26,127,55,0.14)", "listed": "rgba(9,105,218,0.12)", "written": "rgba(26,127,55,0.22)",
             "already_in_context": "rgba(110,119,129,0.15)", "left_out": "rgba(130,80,223,0.12)"}


def _shown_path(path: Any) -> str:
    """A folder's path as a notebook shows it: relative to the working directory when it lies under it (or
    beside it, one `..` up), so a saved notebook does not carry the machine's absolute paths."""
    import os
    try:
        rel = os.path.relpath(path)
    except ValueError:          # another drive (Windows)
        return str(path)
    return rel if Path(rel).parts.count("..") <= 1 else str(path)


def _store_of(source: Any) -> tuple[SlateStore | None, Slate | None, Folder | None, Any]:
    """(store, slate, folder, ladder) of a SlateStore, Slate, Folder, Run or a directory path."""
    if isinstance(source, Folder):
        return None, None, source, None
    if isinstance(source, Slate):
        return None, source, None, None
    if isinstance(source, SlateStore):
        return source, None, None, None
    store = getattr(source, "store", None)
    if isinstance(store, SlateStore):
        return store, None, None, getattr(source, "ladder", None)
    if isinstance(source, (str, Path)):
        path = Path(source)
        if not path.is_dir():
            # a slate folder is a directory: a typo or a file would otherwise show as an empty view
            raise SlateError(f"SlateView: {path} is {'a file, not' if path.exists() else 'not'} a directory"
                             + ("" if path.exists() else " (no such folder)"))
        store = SlateStore()
        store.bind(path.name or "slate", path)
        return store, None, None, None
    raise TypeError(f"SlateView shows a SlateStore, Slate, Folder, Run or directory, not {type(source).__name__}")


class SlateView(View):
    """A slate folder: `SlateView(store_or_folder, slate=None, folder=None)` takes a SlateStore (or a Run, whose
    store it shows), a Slate, a Folder or a directory; `slate` and `folder` pick what to show first.
    `light(trace, step, node, round)` lights the files that round fetched, with their status."""

    css_class = "ladr-slate-view"

    def __init__(self, store_or_folder: Any, slate: str | None = None, folder: str | None = None, *,
                 page: int = 20, ladder: Any = None, lazy: bool = False) -> None:
        super().__init__()
        w = ipw()
        self.loaded = not lazy      # lazy: the listing is read when `load()` is called (the Stepper's Slate tab)
        self.store, self._slate, self._folder, found_ladder = _store_of(store_or_folder)
        self.ladder = ladder or found_ladder
        self.page = page
        self.lit: dict[str, str] = {}          # path -> status, for the folder shown
        self.lit_round: RoundStory | None = None
        self.writes: list[Write] = []
        titles = self.store.titles() if self.store is not None else []
        self.slate_pick = w.Dropdown(options=titles, description="slate", layout=w.Layout(width="auto"))
        self.folder_pick = w.Dropdown(options=[], description="folder", layout=w.Layout(width="auto"))
        self.picker = w.HBox([self.slate_pick, self.folder_pick])
        if self.store is None:
            self.picker.layout.display = "none"
        self.header = html()
        self.lit_html = html()
        self.lit_html.add_class("ladr-lit")
        self.filter = w.Text(placeholder="filter paths (substring)", description="filter",
                             layout=w.Layout(width="22em"))
        self._stats: list[tuple[str, int, int]] = []
        self._tags: dict[str, dict] = {}
        self.pages = PagedTable(self._filtered, self._files_html, size=page, controls=[self.filter],
                                pick=lambda stat, _i: stat[0], on_pick=self.show_file, blank=False, keep=True,
                                pick_label="preview", pick_width="34em", cls="ladr-file-table", defer=True)
        # the parts the tests and notebooks reach for by name
        self.prev, self.next, self.page_label = self.pages.prev, self.pages.next, self.pages.page_label
        self.table, self.preview_pick = self.pages.table, self.pages.pick
        self.preview = html()
        self.preview.add_class("ladr-preview")
        # the edit box of the previewed file's metatags (hidden until a file is previewed)
        self.edited: str | None = None
        self.tag_name = w.Combobox(placeholder="metatag", description="metatag", ensure_option=False,
                                   layout=w.Layout(width="16em"))
        self.tag_value = w.Text(placeholder="value (a, b for string[]; JSON for object)", layout=w.Layout(width="24em"))
        self.set_button = w.Button(description="Set", button_style="primary", layout=w.Layout(width="5em"))
        self.unset_button = w.Button(description="Remove", layout=w.Layout(width="6em"))
        self.edit_message = html()
        self.editor = w.VBox([w.HBox([self.tag_name, self.tag_value, self.set_button, self.unset_button]),
                              self.edit_message])
        self.editor.add_class("ladr-metatag-editor")
        self.editor.layout.display = "none"
        self.tag_name.observe(lambda _c: self._fill_value(), names="value")
        self.set_button.on_click(lambda _b: self.set_metatag(self.tag_name.value, self.tag_value.value))
        self.unset_button.on_click(lambda _b: self.set_metatag(self.tag_name.value, None))
        files_tab = w.VBox([self.pages.widget, self.preview, self.editor])
        self.tree = w.VBox([])
        self.tree.add_class("ladr-tree")
        self.tabs = w.Tab(children=[files_tab, self.tree])
        self.tabs.set_title(0, "Files")
        self.tabs.set_title(1, "Tree")
        self.message = html()
        self.widget = self._root([self.picker, self.header, self.lit_html, self.tabs, self.message])
        self._tree_files: list[tuple[Any, str]] = []       # (HTML widget, subfolder) of built tree levels
        self.filter.observe(lambda _c: self._show(0), names="value")
        self.tabs.observe(self._tab, names="selected_index")
        self.folder_pick.observe(lambda c: self._pick_folder(), names="value")
        self.slate_pick.observe(lambda c: self._pick_slate(), names="value")
        if self.store is not None:
            chosen = slate if slate in titles else (titles[0] if titles else None)
            self._choose(chosen, folder)
        elif self._slate is not None:
            self.folder_pick.options = self._slate.folder_names()
            self.picker.children = [self.folder_pick]
            self.picker.layout.display = None
            self._choose_folder(folder if folder in self.folder_pick.options else
                                (self.folder_pick.options[0] if self.folder_pick.options else None))
        else:
            self.refresh()

    # ---- choosing what to show ------------------------------------------------------------------------
    def _default_folder(self, slate: Slate) -> str | None:
        names = slate.folder_names()
        if self.ladder is not None:      # the folder the ladder retrieves from first is the one to watch
            for s in self.ladder.all_steps():
                if s.retrieve is not None and s.retrieve.slate == slate.title and s.retrieve.folder in names:
                    return s.retrieve.folder
        return names[0] if names else None

    def _choose(self, title: str | None, folder: str | None = None) -> None:
        if title is None or self.store is None:
            self.refresh()
            return
        self._slate = self.store.slate(title)
        self._busy = True
        try:
            self.slate_pick.value = title
            names = self._slate.folder_names()
            self.folder_pick.options = names
        finally:
            self._busy = False
        self._choose_folder(folder if folder in names else self._default_folder(self._slate))

    def _choose_folder(self, name: str | None) -> None:
        self._busy = True
        try:
            if name is not None:
                self.folder_pick.value = name
        finally:
            self._busy = False
        self._folder = self._slate.folder(name) if (self._slate is not None and name is not None) else self._folder
        self.edited = None                      # the edit box belongs to a previewed file of the folder shown
        self.editor.layout.display = "none"
        self._light_round()
        self._tree_files = []
        self.tree.children = ()
        self.refresh()

    def _pick_slate(self) -> None:
        if not getattr(self, "_busy", False) and self.slate_pick.value:
            self._choose(self.slate_pick.value)

    def _pick_folder(self) -> None:
        if not getattr(self, "_busy", False) and self.folder_pick.value:
            self._choose_folder(self.folder_pick.value)

    def show(self, slate: str | None = None, folder: str | None = None) -> None:
        """Show another slate and/or folder."""
        if slate is not None and self.store is not None and slate != getattr(self._slate, "title", None):
            self._choose(slate, folder)
        elif folder is not None:
            self._choose_folder(folder)

    @property
    def folder(self) -> Folder | None:
        """The folder shown."""
        return self._folder

    # ---- reading --------------------------------------------------------------------------------------
    def load(self) -> None:
        """Read the listing now, if the view was made `lazy` and has not read it yet."""
        if not self.loaded:
            self.loaded = True
            self.refresh()

    def refresh(self) -> None:
        """Read the folder's listing and metatags again (after a write, or an edit on disk)."""
        f = self._folder
        if not self.loaded:
            self.header.value = head_html(tag("b", f.name if f is not None else ""),
                                          note("  (the listing is read when this view is shown)"))
            return
        if f is None:
            self.header.value = str(note("no folder to show"))
            self.table.value = ""
            return
        self._stats = f.file_stats()
        self._tags = f.metatags()
        total = sum(s[1] for s in self._stats)
        declared = dict(f.spec.metatags)
        self.header.value = head_html(tag("b", f"{getattr(self._slate, 'title', '') + ' / ' if self._slate else ''}"
                                               f"{f.name}"),
                                      note(f"  {_shown_path(f.path)}  ·  {plural(len(self._stats), 'file')}, "
                                           f"{fmt_bytes(total)}"
                                           + (f"  ·  metatags {json_text(declared, None)}" if declared else "")))
        self._show()
        if self._tree_files or self.tabs.selected_index == 1:
            self._build_tree()

    def _filtered(self) -> list[tuple[str, int, int]]:
        needle = (self.filter.value or "").strip().lower()
        return [s for s in self._stats if needle in s[0].lower()] if needle else self._stats

    def _show(self, start: int | None = None) -> None:
        """Show the page of files from `start` (None: the page shown)."""
        if self._folder is not None:
            self.pages.show(start)

    def _files_html(self, stats: list[tuple[str, int, int]], start: int, size: int) -> str:
        """One page of the files as a table: lit status, path, size, date and metatags."""
        assert self._folder is not None         # `_show` draws only a folder
        rows, _n = file_rows(self._folder, start, size, stats=stats, tags=self._tags)
        cells, styles = [], []
        for r in rows:
            st = self.lit.get(r["path"])
            tags = "; ".join(f"{k}: {json_text(v, None)}" for k, v in r["metatags"].items())
            cells.append([badge(st) if st else "", tag("code", r["path"], style=NOWRAP),
                          tag("span", fmt_bytes(r["size"]), style=NOWRAP),
                          tag("span", r["modified"].replace("T", " ")[:16], style=NOWRAP, title=r["modified"]),
                          tag("div", join((concat(tag("b", k), ": ", json_text(v, None)[:100])
                                           for k, v in r["metatags"].items()), "; "),
                              style="max-width:40em;" + NOWRAP + ";overflow:hidden;text-overflow:ellipsis",
                              title=tags[:2000])])
            styles.append(f"background: {LIT_STYLE.get(st, 'rgba(207,34,46,0.1)')}" if st else None)
        return str(tag("div", table(["", "path", "size", "modified", "metatags"], cells, row_styles=styles),
                       cls="ladr-scroll"))

    def show_file(self, rel: str) -> None:
        """Preview one file: its first characters and its metatags."""
        f = self._folder
        if f is None:
            return
        ex = f.read_excerpt(rel, PREVIEW_CHARS)
        if ex is None:
            self.preview.value = message_html(f"{rel}: not found", "error")
            return
        tags = self._tags.get(rel) or {}
        st = self.lit.get(rel)
        head = concat(tag("b", rel), " ", badge(st) if st else None, note(f"  {fmt_bytes(ex.total_bytes)}"))
        self.preview.value = str(concat(head, pre(json_text(tags), 2000) if tags else None,
                                        pre(ex.text, -1, max_height="28em"),
                                        note(f"(the first {len(ex.text):,} characters)") if ex.truncated else None))
        if self.edited != rel:
            self.edited = rel
            declared = f.spec.effective_schema(rel)
            self.tag_name.options = tuple(declared) if declared else tuple(tags)
            self.edit_message.value = str(note(
                f"set a metatag of {rel}: " + (", ".join(f"{k} ({v})" for k, v in declared.items())
                                               if declared else "this folder declares none: any name, JSON or text")))
            if self.tag_name.value not in self.tag_name.options:
                self.tag_name.value = self.tag_name.options[0] if self.tag_name.options else ""
            self._fill_value()
        self.editor.layout.display = None

    def _fill_value(self) -> None:
        """Put the previewed file's value of the chosen metatag in the value box, as `set_metatag` reads it."""
        from ..slate import format_metatag_value
        f, rel, name = self._folder, self.edited, (self.tag_name.value or "").strip()
        if f is None or rel is None or not name:
            return
        declared = f.spec.effective_schema(rel).get(name)
        self.tag_value.value = format_metatag_value((self._tags.get(rel) or {}).get(name), declared)

    def set_metatag(self, name: str, text: str | None) -> bool:
        """Set (`text`, read for the metatag's declared type) or remove (`None`) a metatag of the previewed file,
        through the folder's atomic, checked writes (`Folder.set_metatag(..., checked=True)`); the table, the
        preview and the message show the result. False (and the reason shown) when it cannot be set."""
        from ..slate import parse_metatag_text
        f, rel, name = self._folder, self.edited, (name or "").strip()
        if f is None or rel is None:
            return False
        try:
            if not name:
                raise SlateError("name the metatag to set")
            type_ = f.check_metatag(rel, name, None)
            value = None if text is None else parse_metatag_text(text, type_)
            f.set_metatag(rel, name, value, checked=True)
        except SlateError as exc:
            self.edit_message.value = message_html(f"{rel}: {name or '?'}: {exc}", "error")
            return False
        self.refresh()
        self.show_file(rel)
        shown = "removed" if value is None else f"= {json_text((self._tags.get(rel) or {}).get(name), None)}"
        self.edit_message.value = message_html(f"{rel}: {name} {shown}")
        return True

    # ---- the tree, one level at a time ------------------------------------------------------------------
    def _tab(self, change: dict) -> None:
        if change.get("new") == 1 and not self.tree.children:
            self._build_tree()

    def _build_tree(self) -> None:
        self._tree_files = []
        self.tree.children = tuple(self._level(""))

    def _level(self, sub: str) -> list:
        f = self._folder
        entries = (f.index(sub) or []) if f is not None else []
        files = [e for e in entries if not str(e["name"]).endswith("/")]
        dirs = [e for e in entries if str(e["name"]).endswith("/")]
        out = []
        for e in dirs[:DIR_ENTRIES]:
            path = f"{sub}/{str(e['name'])[:-1]}" if sub else str(e["name"])[:-1]
            out.append(Fold(head_html(tag("b", e["name"]), note(f"  {plural(int(e.get('files', 0)), 'file')}, "
                                                                 f"{fmt_bytes(int(e.get('size', 0)))}")),
                            functools.partial(self._level, path), cls="ladr-tree-dir").widget)
        if len(dirs) > DIR_ENTRIES:
            out.append(html(str(note(f"… {len(dirs) - DIR_ENTRIES} more subfolders (filter the Files tab)"))))
        box = html()
        self._tree_files.append((box, sub))
        self._render_files(box, sub, files)
        out.append(box)
        return out

    def _render_files(self, box: Any, sub: str, files: list | None = None) -> None:
        if files is None:
            f = self._folder
            files = [e for e in ((f.index(sub) or []) if f is not None else []) if not str(e["name"]).endswith("/")]
        lines = []
        for e in files[:DIR_ENTRIES * 2]:
            rel = f"{sub}/{e['name']}" if sub else str(e["name"])
            st = self.lit.get(rel)
            lines.append(tag("div", tag("code", e["name"]), note(f"  {fmt_bytes(int(e.get('size', 0)))} "),
                             badge(st) if st else None,
                             style=f"background: {LIT_STYLE.get(st, 'rgba(207,34,46,0.1)')}" if st else None))
        if len(files) > DIR_ENTRIES * 2:
            lines.append(note(f"… {len(files) - DIR_ENTRIES * 2} more files (filter the Files tab)"))
        box.value = str(join(lines))

    # ---- lighting a round's files ------------------------------------------------------------------------
    def light(self, trace: Any, step: str | None = None, node: int = 1, round: int = 1, iteration: int = 1) -> None:
        """Light the files a round fetched (`light(trace, step, node, round)`, the trace anything `Trace.of`
        takes, or `light(llm_call_event)`), with their status: fetched, not found, already in context, no
        match, left out."""
        if isinstance(trace, RoundStory):
            story = trace
        elif isinstance(trace, LlmCall):
            story = describe(trace)         # type: ignore[assignment]
        else:
            if step is None:
                raise TypeError("light(trace, step, node, round): name the step")
            story = describe(Trace.of(trace).call(step, node, round, iteration))      # type: ignore[assignment]
        assert isinstance(story, RoundStory)
        self.lit_round = story
        self._follow_folder(story.step)
        self._light_round()
        self._page_to_lit()
        self._redraw_lit()

    def _fetched_from(self, story: RoundStory) -> str | None:
        """`Knowledge / docs`: the slate folder a round's step retrieves from (None when the ladder is not known)."""
        s = self.ladder.step(story.step) if self.ladder is not None else None
        r = getattr(s, "retrieve", None)
        return f"{r.slate} / {r.folder}" if r is not None else None

    def _shown(self) -> str | None:
        if self._folder is None:
            return None
        return f"{self._slate.title} / {self._folder.name}" if self._slate is not None else None

    def _light_round(self) -> None:
        """Light the lit round's files when the folder shown is the one it fetched from; else only say where they
        are (a round's paths are of its own folder: listed under another slate's header they would mislead)."""
        story = self.lit_round
        self.lit = {}
        if story is None:
            self.lit_html.value = ""
            return
        where = self._fetched_from(story)
        if where is not None and self._shown() is not None and where != self._shown():
            self.lit_html.value = head_html(tag("b", story.label), note(
                f"  fetched {plural(len(story.fetched), 'entry', 'entries')} from {where} (shown there)"))
            return
        for r in story.fetched:
            if r.mode != "subfolders" and not (self.lit.get(r.path) in STRONG_STATUS and r.status not in STRONG_STATUS):
                self.lit[r.path] = r.status
        self._render_lit(story.label + (f" · from {where}" if where else ""), story.fetched)

    def clear_light(self) -> None:
        """Light nothing."""
        self.lit_round = None
        self._light_round()
        self._redraw_lit()

    def note_write(self, event: Write) -> None:
        """Show a write (the Stepper calls this as writes are made): the listing is read again and a written
        file of this folder is lit."""
        self.writes.append(event)
        self.refresh()
        target = event.target.split("#", 1)[0]
        if self._folder is not None and self._slate is not None:
            prefix = f"{self._slate.title}/{self._folder.name}/"
            if event.status == "written" and target.startswith(prefix):
                self.lit[target[len(prefix):]] = "written"
                self._redraw_lit()
        stories = [describe(x) for x in self.writes[-5:]]
        lines = [str(write_html(w, who=True)) for w in stories if isinstance(w, WriteStory)]
        head = head_html(tag("b", "writes of this run"), note(f"  {len(self.writes)}"
                                                              + (", the last 5" if len(self.writes) > 5 else "")))
        self.message.value = head + "".join(lines)

    def _follow_folder(self, step: str) -> None:
        if self.ladder is None or self.store is None:
            return
        s = self.ladder.step(step)
        if s is None or s.retrieve is None:
            return
        r = s.retrieve
        if self._slate is None or self._slate.title != r.slate or self._folder is None or self._folder.name != r.folder:
            if r.slate in self.store:
                self._choose(r.slate, r.folder)

    def _render_lit(self, label: str, rows: tuple[FetchRow, ...]) -> None:
        if not rows:
            self.lit_html.value = head_html(tag("b", label), note("  fetched nothing"))
            return
        cells = [[badge(r.status), r.mode, tag("code", r.path), note(r.detail.strip())] for r in rows]
        self.lit_html.value = head_html(tag("b", f"{label}: "), note(plural(len(rows), "entry", "entries")),
                                        table(["status", "mode", "path", ""], cells))

    def _page_to_lit(self) -> None:
        """Turn to the page of the first lit file when none is on the page shown (and no filter hides it)."""
        if not self.loaded or self.filter.value or not self.lit:
            return
        paths = [s[0] for s in self._stats]
        start = self.pages.start
        if set(paths[start:start + self.pages.size]) & set(self.lit):
            return
        import bisect
        first = min((p for p in self.lit if p in paths), default=None)
        if first is not None:
            self.pages.start = self.pages.start_of(bisect.bisect_left(paths, first))

    def _redraw_lit(self) -> None:
        if not self.loaded:
            return
        self._show()
        for box, sub in self._tree_files:
            self._render_files(box, sub)

    def static_html(self) -> str:
        """What the view shows now (the header, the lit round, the page of files), for a notebook saved without
        widget state (`folder.to_html()` is the whole folder's static view)."""
        return str(root(Html(self.header.value), Html(self.lit_html.value), Html(self.table.value),
                        cls="ladr-folder", title=None))
