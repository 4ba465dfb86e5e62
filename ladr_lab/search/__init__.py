"""Search over slates: BM25 (tantivy) + dense vectors + fusion + MMR + filters, in one engine.

`EmbeddedEngine` runs seed 002's `retrieve` pipeline over the slates it is given and is what
`ladr-lab serve` serves; `SearchEngine` is the interface another backend would implement.
`similar(folder, text, top_k)` answers seed 001's `similarTo` mode from the same dense index.
`sanitize(text)` is what the engine takes out of a hit's text before serving it, with its report.
"""
from .corpus import Corpus, Snapshot
from .dense import DenseIndex, DenseView
from .errors import InvalidRequestParams, OptionUnsupported, RequestTimeout, SearchError, SnapshotGone
from .filters import load_filter
from .pipeline import EmbeddedEngine, SearchEngine
from .request import PARAMS_SCHEMA, RetrieveRequest, load_request
from .rerank import CrossEncoderReranker, Reranker
from .sanitizer import sanitize
from .similar import FolderVectors, folder_vectors, similar
from .sparse import SparseIndex, SparseView

__all__ = [
    "Corpus",
    "CrossEncoderReranker",
    "DenseIndex",
    "DenseView",
    "EmbeddedEngine",
    "FolderVectors",
    "InvalidRequestParams",
    "OptionUnsupported",
    "PARAMS_SCHEMA",
    "RequestTimeout",
    "Reranker",
    "RetrieveRequest",
    "SearchEngine",
    "SearchError",
    "Snapshot",
    "SnapshotGone",
    "SparseIndex",
    "SparseView",
    "folder_vectors",
    "load_filter",
    "load_request",
    "sanitize",
    "similar",
]
