"""Embeddings through litellm: the `litellm:MODEL` embedder of the slate store (SPEC §3.2).

This lives beside the litellm model so that `models` stays the only importer of litellm; importing
`ladr_lab.models` registers it with `ladr_lab.slate.get_embedder`.
"""
from __future__ import annotations

from typing import Any

from ..errors import ModelError, SlateError
from ..slate.embed import l2_normalize, register_embedder
from .litellm_model import import_litellm, no_stray_event_loop

__all__ = ["LiteLLMEmbedder"]


class LiteLLMEmbedder:
    """An embedding model reached through litellm.embedding (any provider litellm knows)."""

    def __init__(self, model: str) -> None:
        try:
            self._litellm = import_litellm()     # the cost map kept local, litellm's own prints off
        except ModelError as exc:
            raise SlateError(f'embedder "litellm:{model}" needs the litellm package: {exc}') from exc
        self.model = model
        self.name = f"litellm:{model}"
        self.dim = 0  # known after the first call
        self.max_chars = 8_000

    def embed(self, texts: list[str]) -> list[list[float]]:
        """Embed texts through litellm, normalised to unit length."""
        if not texts:
            return []
        try:
            with no_stray_event_loop():
                resp = self._litellm.embedding(model=self.model, input=list(texts))
        except Exception as exc:
            raise SlateError(f"{self.name} failed to embed: {exc}") from exc
        data = resp["data"] if isinstance(resp, dict) else getattr(resp, "data", None)
        if data is None or len(data) != len(texts):
            got = 0 if data is None else len(data)
            raise SlateError(f"{self.name} returned {got} vectors for {len(texts)} texts")
        vecs = [l2_normalize([float(x) for x in _item_vector(item)]) for item in data]
        if vecs and not self.dim:
            self.dim = len(vecs[0])
        return vecs


def _item_vector(item: Any) -> list:
    if isinstance(item, dict):
        return item["embedding"]
    return item.embedding


register_embedder("litellm", LiteLLMEmbedder)
