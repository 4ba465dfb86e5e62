"""Static views of slates: a `Folder` (its index, a tree by depth, every file with size, date and metatags),
a `Slate` and a `SlateStore` (their folders with counts).

Bounded for large folders: the file table shows its first `FILE_ROWS` files, the tree opens `TREE_DEPTH`
levels and each directory's first `DIR_ENTRIES` entries; the rest is counted, not listed (the widget
`SlateView` pages through everything).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..display import (
    Html,
    concat,
    details,
    fmt_bytes,
    join,
    json_text,
    kv_table,
    note,
    plural,
    root,
    table,
    tag,
)
from .metatags import iso_utc

if TYPE_CHECKING:
    from .folder import Folder
    from .store import Slate, SlateStore

__all__ = ["DIR_ENTRIES", "FILE_ROWS", "TREE_DEPTH", "file_rows", "folder_html", "folder_text", "slate_html",
           "store_html", "tree_html"]

FILE_ROWS = 200
TREE_DEPTH = 3
DIR_ENTRIES = 100


def file_rows(folder: Folder, start: int = 0, count: int = FILE_ROWS, *, contains: str = "",
              stats: list | None = None, tags: dict | None = None) -> tuple[list[dict], int]:
    """One page of the folder's files, `{path, size, modified, metatags}` each, sorted by path, and how many
    files match `contains` (a case-insensitive substring of the path) in all."""
    stats = folder.file_stats() if stats is None else stats
    if contains:
        needle = contains.lower()
        stats = [s for s in stats if needle in s[0].lower()]
    tags = folder.metatags() if tags is None else tags
    rows = [{"path": rel, "size": size, "modified": iso_utc(mtime), "metatags": tags.get(rel) or {}}
            for rel, size, mtime in stats[start:start + count]]
    return rows, len(stats)


def _tags(t: dict) -> Html:
    if not t:
        return Html("")
    return join((concat(tag("b", k), ": ", json_text(v, None)[:120]) for k, v in t.items()), Html("<br>"))


def tree_html(folder: Folder, sub: str = "", depth: int = TREE_DEPTH, entries: int = DIR_ENTRIES) -> Html:
    """The folder as a tree of collapsible subfolders, `depth` levels deep, at most `entries` per directory."""
    items = folder.index(sub) or []
    out = []
    for e in items[:entries]:
        name = str(e["name"])
        if name.endswith("/"):
            path = f"{sub}/{name[:-1]}" if sub else name[:-1]
            head = concat(tag("b", name), note(f"  {plural(int(e.get('files', 0)), 'file')}, "
                                               f"{fmt_bytes(int(e.get('size', 0)))}"))
            body = tree_html(folder, path, depth - 1, entries) if depth > 1 else note("(deeper levels not shown)")
            out.append(details(head, body))
        else:
            out.append(tag("div", name, note(f"  {fmt_bytes(int(e.get('size', 0)))}")))
    if len(items) > entries:
        out.append(note(f"… {len(items) - entries} more entries"))
    return join(out) if out else note("(empty)")


def folder_html(folder: Folder) -> str:
    """A folder: counts, its index (direct entries), the tree, and its files with sizes, dates and metatags."""
    stats = folder.file_stats()
    tags = folder.metatags()
    total = sum(s[1] for s in stats)
    spec = folder.spec
    pairs = [("path", str(folder.path)), ("files", f"{len(stats):,} ({fmt_bytes(total)})"),
             ("metatags declared", tag("code", json_text(dict(spec.metatags), None)) if spec.metatags else None),
             ("with metatags", f"{len(tags):,} file(s)" if tags else None)]
    index = folder.index() or []
    index_t = table(["name", "size", "files"], [[e["name"], fmt_bytes(int(e.get("size", 0))),
                                                 str(e["files"]) if "files" in e else ""] for e in index[:DIR_ENTRIES]])
    if len(index) > DIR_ENTRIES:
        index_t = concat(index_t, note(f"… {len(index) - DIR_ENTRIES} more entries"))
    rows, n = file_rows(folder, 0, FILE_ROWS, stats=stats, tags=tags)
    files_t = table(["path", "size", "modified", "metatags"],
                    [[tag("code", r["path"]), fmt_bytes(r["size"]), r["modified"], _tags(r["metatags"])] for r in rows],
                    cls="ladr-files")
    if n > FILE_ROWS:
        files_t = concat(files_t, note(f"… {n - FILE_ROWS:,} more files (SlateView pages through them all)"))
    return root(kv_table(pairs),
                details(concat(tag("b", "index"), note(f"  {plural(len(index), 'entry', 'entries')}")), index_t,
                        open=len(index) <= 30),
                details(concat(tag("b", "tree"), note(f"  {TREE_DEPTH} levels")), tree_html(folder)),
                details(concat(tag("b", "files"), note(f"  {len(stats):,}")), files_t, open=len(stats) <= 30),
                cls="ladr-folder", title=f"Folder {folder.name}")


def folder_text(folder: Folder, rows: int = 20) -> str:
    """A folder as text: its path and counts, then its first files."""
    stats = folder.file_stats()
    lines = [f"{folder!r}: {len(stats):,} file(s), {fmt_bytes(sum(s[1] for s in stats))}"]
    lines += [f"  {rel}  ({size:,} B)" for rel, size, _ in stats[:rows]]
    if len(stats) > rows:
        lines.append(f"  … {len(stats) - rows:,} more")
    return "\n".join(lines)


def _folder_row(slate: Slate, name: str) -> list:
    try:
        stats = slate.folder(name).file_stats()
    except Exception as exc:  # an unreadable folder is shown as such, never breaks the view
        return [tag("code", name), note(f"({type(exc).__name__}: {exc})"), ""]
    return [tag("code", name), f"{len(stats):,}", fmt_bytes(sum(s[1] for s in stats))]


def slate_html(slate: Slate) -> str:
    """A slate: its root and its folders with file counts and sizes."""
    rows = [_folder_row(slate, n) for n in slate.folder_names()]
    return root(kv_table([("root", str(slate.root))]), table(["folder", "files", "size"], rows),
                cls="ladr-slate", title=f"Slate {slate.title}")


def store_html(store: SlateStore) -> str:
    """Every bound slate with its folders."""
    parts = [Html(slate_html(store.slate(t))) for t in store.titles()]
    return root(join(parts) if parts else note("no slate bound"), cls="ladr-store", title="Slates")
