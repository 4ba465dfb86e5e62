"""Search over slates: BM25 (tantivy) + dense vectors + fusion + MMR + filters, in one engine.

`EmbeddedEngine` runs seed 002's `retrieve` pipeline over the slates it is given and is what
`ladr-lab serve` serves; `SearchEngine` is the interface another backend would implement.
`similar(folder, text, top_k)` answers seed 001's `similarTo` mode from the same dense index.
"""
from ladr_lab.search.corpus import Corpus, Snapshot
from ladr_lab.search.dense import DenseIndex, DenseView
from ladr_lab.search.errors import InvalidRequestParams, OptionUnsupported, SearchError, SnapshotGone
from ladr_lab.search.filters import load_filter
from ladr_lab.search.pipeline import EmbeddedEngine, SearchEngine
from ladr_lab.search.request import RetrieveRequest, load_request
from ladr_lab.search.rerank import CrossEncoderReranker, Reranker
from ladr_lab.search.similar import FolderVectors, folder_vectors, similar
from ladr_lab.search.sparse import SparseIndex, SparseView

__all__ = [
    "Corpus",
    "CrossEncoderReranker",
    "DenseIndex",
    "DenseView",
    "EmbeddedEngine",
    "FolderVectors",
    "InvalidRequestParams",
    "OptionUnsupported",
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
    "similar",
]
