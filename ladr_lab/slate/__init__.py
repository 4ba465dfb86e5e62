"""Slates: directories of files with typed metatags, read and written safely by ladder steps.

`SlateStore` binds slate titles to directories; `Slate.folder(name)` gives a `Folder`, which
resolves paths safely, lists from an in-memory cache, keeps metatags in `.metatags.json`, writes
atomically under per-file locks, and finds similar files through an `Embedder`.
"""
from ladr_lab.slate.embed import (
    Embedder,
    HashingEmbedder,
    LiteLLMEmbedder,
    SentenceTransformerEmbedder,
    get_embedder,
)
from ladr_lab.slate.folder import Folder
from ladr_lab.slate.metatags import METATAG_TYPES, SYSTEM_METATAGS, contains_match, value_matches_type
from ladr_lab.slate.paths import normalize_rel
from ladr_lab.slate.store import FolderSpec, Slate, SlateStore

__all__ = [
    "METATAG_TYPES",
    "SYSTEM_METATAGS",
    "Embedder",
    "Folder",
    "FolderSpec",
    "HashingEmbedder",
    "LiteLLMEmbedder",
    "SentenceTransformerEmbedder",
    "Slate",
    "SlateStore",
    "contains_match",
    "get_embedder",
    "normalize_rel",
    "value_matches_type",
]
