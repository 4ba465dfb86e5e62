"""The served slates' files as MCP resources: `slate:TITLE/FOLDER/PATH` URIs, listed in pages and read safely.

A resource URI is the `citation.uri` a hit carries (search/corpus.py), so a client reads a hit's whole
file by its citation. Only files the slate's own listing shows can be read: the path after the title is
checked by `normalize_rel` (a `..`, an absolute path, a hidden name or a backslash is refused) and located
in the folder's listing (`Folder.locate`), then read through `resolve_under`, which follows links only
while they stay inside the folder. A refusal is `ResourceRefused`, a file that is not (or no longer)
there `ResourceMissing`; the MCP face turns each into its JSON-RPC error. A file that changes while it is
located or read (say, a regular file swapped for a link out of the folder) is one of the two, never another
exception: whatever `read` meets on the way (PathRefused, OSError) becomes ResourceRefused or ResourceMissing.
"""
from __future__ import annotations

import mimetypes
import os
from dataclasses import dataclass
from urllib.parse import unquote

from ..errors import PathRefused
from ..slate import SlateStore
from ..slate.paths import normalize_rel, resolve_under
from ..slate.reading import read_regular_file

__all__ = ["Listed", "MAX_RESOURCE_BYTES", "PAGE_SIZE", "ResourceMissing", "ResourceRefused", "SCHEME",
           "SlateResources", "mime_type"]

SCHEME = "slate:"
PAGE_SIZE = 200                       # resources per `resources/list` page
MAX_RESOURCE_BYTES = 16 * 1024 * 1024  # a larger file is refused rather than read whole into one message
_TEXT_TYPES = {".md": "text/markdown", ".txt": "text/plain", ".json": "application/json", ".yaml": "application/yaml",
               ".yml": "application/yaml", ".csv": "text/csv", ".py": "text/x-python", ".jsonl": "application/jsonl"}


class ResourceRefused(Exception):
    """A resource URI that names nothing a served slate may show (bad scheme, unknown slate, a path escape); internal:
    the MCP face answers it as a JSON-RPC error (invalid params), so it never reaches a user as an exception."""


class ResourceMissing(Exception):
    """A well-formed resource URI whose file is not in the slate's listing (or is gone); internal: the MCP face
    answers it as a JSON-RPC error (resource not found)."""


@dataclass(frozen=True)
class Listed:
    """One listed file: its URI, its slate-relative path (`FOLDER/PATH`), its size and its MIME type."""

    uri: str
    path: str
    size: int
    mime_type: str


def mime_type(path: str) -> str:
    """The MIME type a file is served as, by its extension (`application/octet-stream` when unknown)."""
    ext = os.path.splitext(path)[1].lower()
    return _TEXT_TYPES.get(ext) or mimetypes.guess_type(path)[0] or "application/octet-stream"


class SlateResources:
    """The files of a store's slates as resources (see the module docstring)."""

    def __init__(self, store: SlateStore, page_size: int = PAGE_SIZE) -> None:
        self.store = store
        self.page_size = max(1, page_size)

    def iter_files(self) -> list[Listed]:
        """Every listed file of every served slate, slate by slate (binding order), each sorted by path."""
        out = []
        for title in self.store.titles():
            slate = self.store.slate(title)
            for name in slate.folder_names():
                folder = slate.folder(name)
                for rel, size, _mtime in folder.file_stats():
                    path = f"{name}/{rel}"
                    out.append(Listed(f"{SCHEME}{title}/{path}", path, size, mime_type(rel)))
        return out

    def page(self, cursor: str | None) -> tuple[list[Listed], str | None]:
        """One page of the listing from `cursor` (None: the first), and the next page's cursor (None: no more)."""
        start = 0
        if cursor is not None:
            if not cursor.isdigit() or len(cursor) > 12:
                raise ResourceRefused(f"cursor {cursor[:40]!r} is not a resources/list cursor of this server")
            start = int(cursor)
        files = self.iter_files()
        end = start + self.page_size
        return files[start:end], (str(end) if end < len(files) else None)

    def locate(self, uri: str) -> tuple[str, str, str]:
        """(title, folder, canonical path in the folder) of a resource URI; ResourceRefused or ResourceMissing."""
        if not isinstance(uri, str) or not uri.startswith(SCHEME):
            raise ResourceRefused(f"uri must start with {SCHEME!r} (got {str(uri)[:80]!r})")
        rest = unquote(uri[len(SCHEME):])
        title = next((t for t in sorted(self.store.titles(), key=len, reverse=True) if rest.startswith(t + "/")), None)
        if title is None:
            known = ", ".join(self.store.titles())
            raise ResourceRefused(f"uri {uri[:80]!r} names no served slate (served: {known})")
        try:
            path = normalize_rel(rest[len(title) + 1:])
        except PathRefused as exc:
            raise ResourceRefused(f"uri {uri[:80]!r} is refused: {exc}") from None
        name, _, rel = path.partition("/")
        slate = self.store.slate(title)
        if not rel or name not in slate.folder_names():
            raise ResourceMissing(f"uri {uri[:80]!r}: slate {title!r} has no such file")
        try:
            found = slate.folder(name).locate(rel)
        except PathRefused as exc:
            raise ResourceRefused(f"uri {uri[:80]!r} is refused: {exc}") from None
        except (OSError, ValueError):   # the listing's rescan met a path changing under it (a file turned link)
            raise ResourceMissing(f"uri {uri[:80]!r}: the file changed while it was located") from None
        if found is None:
            raise ResourceMissing(f"uri {uri[:80]!r}: slate {title!r} has no such file")
        return title, name, found

    def read(self, uri: str) -> tuple[bytes, str]:
        """The bytes and MIME type of the file a resource URI names (only listed files, never outside the folder)."""
        title, name, rel = self.locate(uri)
        folder_dir = os.path.join(self.store.slate(title).root, name)
        try:
            real = resolve_under(folder_dir, rel)
            size = os.stat(real).st_size
            if size > MAX_RESOURCE_BYTES:
                raise ResourceRefused(f"uri {uri[:80]!r}: the file is {size} bytes, over the limit of "
                                      f"{MAX_RESOURCE_BYTES}")
            data = read_regular_file(real)
        except PathRefused as exc:
            raise ResourceRefused(f"uri {uri[:80]!r} is refused: {exc}") from None
        except (OSError, ValueError):   # gone, or turned into something else, between the check and the read
            raise ResourceMissing(f"uri {uri[:80]!r}: the file is gone") from None
        if data is None:
            raise ResourceMissing(f"uri {uri[:80]!r}: the file is gone")
        return data, mime_type(rel)
