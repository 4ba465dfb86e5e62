"""Slates: directories of files with typed metatags, read and written safely by ladder steps.

`SlateStore` binds slate titles to directories; `Slate.folder(name)` gives a `Folder`, which
resolves paths safely, reads files whole or as a bounded `Excerpt`, lists from an in-memory cache
kept current by file-system notifications, keeps metatags in `.metatags.json`, writes atomically
under per-file locks, and finds similar files through an `Embedder`. The package sits below
`config` (a folder's declared schema, `FolderSpec`, is a slate concept): see docs/ARCHITECTURE.md.

Decisions the spec leaves open (each is explained where it is implemented):

- Paths (paths.py): a `str` or `os.PathLike`, canonicalised: empty and `.` components are dropped
  (`./core.md`, `notes//a.md`, `core.md/` and `./notes/./a.md` become `core.md`, `notes/a.md`,
  `core.md` and `notes/a.md`); `..` anywhere, hidden components, backslashes, NUL, absolute and
  non-UTF-8 paths, and paths with nothing left, are refused. The canonical form is the key of
  metatags and of the retrieve loop's dedup. `resolve()` returns the *real* path. Links are
  followed only to regular, non-hidden files inside the folder; linked directories are never
  listed or descended; writes never go through a link, even one that stays inside.
- Reads: `read_text` reads the whole file; `read_excerpt(rel, max_chars)` reads at most
  `4 * max_chars + 4` bytes and never cuts a character in two (reading.py).
- `index(sub)`: None for a missing (or non-directory) `sub`, PathRefused for a refused one,
  [] while the folder itself does not exist. Entries are read-only dicts shared with the cache
  (copy with `dict(entry)`); JSON, pickle and deepcopy see plain dicts.
- Freshness (cache.py, watch.py): every listing read (`index`, `tree`, `files`, `file_stats`,
  `glob`, metatag queries, similarity) first drains the folder's inotify events without blocking
  and patches the cache per event, so a change another program finished before the read, even an
  in-place edit that leaves every directory alone, shows in that read. Without inotify (not Linux,
  `LADR_SLATE_WATCH=0`, `SlateStore(watch=False)`, out of watches) each read re-stats instead.
  Watches are released by `close()` on a folder, slate or store, or when it is garbage-collected.
- Bookkeeping lives in the folder's hidden `.ladr/`: `tmp/` (temporary files, renamed into
  place; stale ones are swept), `locks/` (64 flock stripes plus one for metatags) and
  `created.log` (the `created` metatag survives atomic rewrites, which replace the inode).
- Metatags: shown only for files that exist and are listed; setting one on a missing file is a
  SlateError; setting None removes it; values are not checked against the declared type (the
  ladder's writes may legitimately turn a scalar into an array): see `value_matches_type`; a person's edit
  (`set_metatag(..., checked=True)`: `ladr-lab slate set`, SlateView's edit box) is checked, names and types.
- `.ladr/` holds a `.gitignore` of `*`, so a folder of notes put under git keeps its bookkeeping out.
  `index`/`tree` are folder-level, so `get_metatag` answers None and `metatag_values`/`query`
  raise. A stored JSON null counts as not set.
- Glob: `**` is special as a whole component (and `**.md` reads as `**/*.md`); classes negate
  with `!`; a pattern ending in `/` matches nothing.
- Similarity: files with no positive cosine are left out. Vectors are computed lazily; once a
  folder's vectors are in use, each write recomputes the written file's vector.
- A slate bound without declarations accepts any safe folder name.
"""
from .embed import (
    Embedder,
    HashingEmbedder,
    SentenceTransformerEmbedder,
    get_embedder,
    register_embedder,
)
from .folder import Folder
from .metatags import (
    METATAG_TYPES,
    SYSTEM_METATAGS,
    contains_match,
    format_metatag_value,
    parse_metatag_text,
    value_matches_type,
)
from .paths import normalize_rel
from .reading import Excerpt
from .spec import FolderSpec
from .store import Slate, SlateStore

__all__ = [
    "Embedder",
    "Excerpt",
    "Folder",
    "FolderSpec",
    "HashingEmbedder",
    "METATAG_TYPES",
    "SYSTEM_METATAGS",
    "SentenceTransformerEmbedder",
    "Slate",
    "SlateStore",
    "contains_match",
    "format_metatag_value",
    "get_embedder",
    "normalize_rel",
    "parse_metatag_text",
    "register_embedder",
    "value_matches_type",
]
