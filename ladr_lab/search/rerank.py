"""Rerankers: a stage that rescores the top candidates against the query, inside the call.

`CrossEncoderReranker` runs a sentence-transformers CrossEncoder (the optional `rerank` extra),
loaded from a local directory or by name; its scores are logits, turned into `confidence` by the
logistic function. An engine without a reranker answers a rerank request with OptionUnsupported (strict) or
a note in `usage.notes`, never with a pretend reranking.
"""
from __future__ import annotations

from typing import Protocol, runtime_checkable

from .errors import SearchError

__all__ = ["CrossEncoderReranker", "Reranker"]


@runtime_checkable
class Reranker(Protocol):
    """Anything that scores (query, passage) pairs; higher is more relevant."""

    method: str
    model: str

    def score(self, query: str, passages: list[str]) -> list[float]:
        """One score per passage, in order."""
        ...


class CrossEncoderReranker:
    """A sentence-transformers CrossEncoder, loaded when the reranker is created."""

    method = "cross-encoder"

    def __init__(self, model: str, max_chars: int = 4000) -> None:
        try:
            from sentence_transformers import CrossEncoder
        except ImportError as exc:
            raise SearchError(f'reranker "{model}" needs sentence-transformers (pip install "ladr_lab[rerank]"): '
                              f"{exc}") from exc
        try:
            self._model = CrossEncoder(model)
        except Exception as exc:  # the library raises many kinds; one clear message
            raise SearchError(f'could not load cross-encoder "{model}": {exc}') from exc
        self.model = model
        self.max_chars = max_chars

    def score(self, query: str, passages: list[str]) -> list[float]:
        """Cross-encoder logits for (query, passage) pairs."""
        if not passages:
            return []
        out = self._model.predict([(query, p[: self.max_chars]) for p in passages], show_progress_bar=False)
        return [float(x) for x in out]
