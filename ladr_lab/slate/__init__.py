"""Slates: directories of files with typed metatags, read and written safely by ladder steps.

`SlateStore` binds slate titles to directories; `Slate.folder(name)` gives a `Folder`, which
resolves paths safely, lists from an in-memory cache, keeps metatags in `.metatags.json`, writes
atomically under per-file locks, and finds similar files through an `Embedder`.

Decisions the spec leaves open (each is explained where it is implemented):

- Paths: `..` and `.` are refused outright (even `notes/../core.md`), as are empty components,
  backslashes, NUL, absolute and non-UTF-8 paths; one trailing `/` is accepted and dropped.
  `resolve()` returns the *real* path. Links are followed only to regular, non-hidden files
  inside the folder; linked directories are never listed or descended; writes never go through
  a link, even one that stays inside.
- `index(sub)`: None for a missing (or non-directory) `sub`, PathRefused for a refused one,
  [] while the folder itself does not exist. Entries are read-only dicts shared with the cache
  (copy with `dict(entry)`); JSON, pickle and deepcopy see plain dicts.
- Freshness: each read stats the directories it touches and rescans only a directory whose
  mtime moved. In-place edits that leave every directory's mtime alone, and subfolder totals
  below directories the read did not touch, are current again after `refresh()`.
- Bookkeeping lives in the folder's hidden `.ladr/`: `tmp/` (temporary files, renamed into
  place; stale ones are swept), `locks/` (64 flock stripes plus one for metatags) and
  `created.log` (the `created` metatag survives atomic rewrites, which replace the inode).
- Metatags: shown only for files that exist and are listed; setting one on a missing file is a
  SlateError; setting None removes it; values are not checked against the declared type (the
  ladder's writes may legitimately turn a scalar into an array): see `value_matches_type`.
  `index`/`tree` are folder-level, so `get_metatag` answers None and `metatag_values`/`query`
  raise. A stored JSON null counts as not set.
- Glob: `**` is special as a whole component (and `**.md` reads as `**/*.md`); classes negate
  with `!`; a pattern ending in `/` matches nothing.
- Similarity: files with no positive cosine are left out. Vectors are computed lazily; once a
  folder's vectors are in use, each write recomputes the written file's vector.
- A slate bound without declarations accepts any safe folder name.
"""
from ladr_lab.slate.embed import (
    Embedder,
    HashingEmbedder,
    SentenceTransformerEmbedder,
    get_embedder,
    register_embedder,
)
from ladr_lab.slate.folder import Folder
from ladr_lab.slate.metatags import METATAG_TYPES, SYSTEM_METATAGS, contains_match, value_matches_type
from ladr_lab.slate.paths import normalize_rel
from ladr_lab.slate.store import FolderSpec, Slate, SlateStore

__all__ = [
    "Embedder",
    "Folder",
    "FolderSpec",
    "HashingEmbedder",
    "METATAG_TYPES",
    "SYSTEM_METATAGS",
    "SentenceTransformerEmbedder",
    "Slate",
    "SlateStore",
    "contains_match",
    "get_embedder",
    "normalize_rel",
    "register_embedder",
    "value_matches_type",
]
