"""Embedders: the offline hashing one for real, the model-backed ones through fakes."""
from __future__ import annotations

import math
import subprocess
import sys
import types

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ladr_lab.errors import SlateError
from ladr_lab.slate import (
    FolderSpec,
    HashingEmbedder,
    SentenceTransformerEmbedder,
    SlateStore,
    get_embedder,
)


def cosine(a, b):
    return sum(x * y for x, y in zip(a, b, strict=True))


def test_hashing_is_deterministic_across_processes():
    code = "from ladr_lab.slate import HashingEmbedder; print(HashingEmbedder().embed_one('Ladders are YAML pipelines')[:40])"
    outs = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                           env={"PYTHONHASHSEED": seed, "PATH": ""}).stdout for seed in ("1", "2")}
    assert len(outs) == 1
    assert outs.pop().strip() == str(HashingEmbedder().embed_one("Ladders are YAML pipelines")[:40])


def test_hashing_shape_and_similarity():
    e = HashingEmbedder()
    assert e.dim == 384 and e.name.startswith("hashing")
    a, b, c = e.embed(["network security policy", "security of the network", "baking sourdough bread"])
    assert len(a) == 384
    assert abs(math.fsum(x * x for x in a) - 1.0) < 1e-9
    assert cosine(a, b) > cosine(a, c)
    assert cosine(e.embed_one("security"), e.embed_one("securities")) > 0
    assert e.embed_one("") == [0.0] * 384


@given(st.text(max_size=200))
def test_hashing_vectors_are_unit_or_zero(text):
    vec = HashingEmbedder(dim=64).embed_one(text)
    norm = math.fsum(x * x for x in vec)
    assert norm == 0.0 or abs(norm - 1.0) < 1e-9


def test_get_embedder_names():
    assert isinstance(get_embedder(None), HashingEmbedder)
    assert isinstance(get_embedder("offline"), HashingEmbedder)
    assert get_embedder("hashing:128").dim == 128
    with pytest.raises(SlateError):
        get_embedder("hashing:big")
    with pytest.raises(SlateError, match="unknown embedder"):
        get_embedder("word2vec")


def test_sentence_transformers_missing_is_a_clear_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)
    with pytest.raises(SlateError, match="sentence-transformers"):
        get_embedder("st:all-MiniLM-L6-v2")


def test_sentence_transformers_through_a_fake_module(monkeypatch):
    class FakeModel:
        def __init__(self, name):
            if name == "missing-model":
                raise OSError("not found")
            self.name = name

        def get_sentence_embedding_dimension(self):
            return 3

        def encode(self, texts, normalize_embeddings=True):
            return [[1.0, 0.0, 0.0] if "a" in t else [0.0, 1.0, 0.0] for t in texts]

    fake = types.ModuleType("sentence_transformers")
    fake.SentenceTransformer = FakeModel
    monkeypatch.setitem(sys.modules, "sentence_transformers", fake)
    emb = get_embedder("sentence-transformers/all-MiniLM-L6-v2")
    assert isinstance(emb, SentenceTransformerEmbedder) and emb.dim == 3
    assert emb.embed(["a", "b"]) == [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]
    with pytest.raises(SlateError, match="missing-model"):
        get_embedder("st:missing-model")


def test_litellm_missing_is_a_clear_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "litellm", None)
    with pytest.raises(SlateError, match="litellm"):
        get_embedder("litellm:text-embedding-3-small")


def test_litellm_through_a_fake_module(monkeypatch):
    from ladr_lab.models import LiteLLMEmbedder

    calls = []
    fake = types.ModuleType("litellm")

    def embedding(model, input):
        calls.append((model, list(input)))
        return {"data": [{"embedding": [3.0, 4.0]} for _ in input]}

    fake.embedding = embedding
    monkeypatch.setitem(sys.modules, "litellm", fake)
    monkeypatch.delenv("LITELLM_LOCAL_MODEL_COST_MAP", raising=False)
    emb = get_embedder("litellm:openai/text-embedding-3-small")
    assert isinstance(emb, LiteLLMEmbedder)
    import os

    assert os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] == "True"
    assert emb.embed(["x", "y"]) == [[0.6, 0.8], [0.6, 0.8]]
    assert emb.dim == 2 and calls == [("openai/text-embedding-3-small", ["x", "y"])]

    def failing(model, input):
        raise ConnectionError("no network")

    fake.embedding = failing
    with pytest.raises(SlateError, match="no network"):
        emb.embed(["x"])


def test_similar_ranks_the_document_sharing_words_first(kdocs):
    ranked = kdocs.similar("derivatives and integrals", top_k=3)
    assert ranked[0][0] == "notes/calculus.md"
    assert all(0 < score <= 1.0 + 1e-9 for _, score in ranked)
    assert [s for _, s in ranked] == sorted((s for _, s in ranked), reverse=True)
    assert kdocs.similar("groups rings")[0][0] == "notes/algebra.md"
    assert kdocs.similar("qwertyuiop zxcvbnm") == []
    assert kdocs.similar("derivatives", top_k=0) == []


def test_similar_follows_writes(kdocs):
    assert kdocs.similar("photosynthesis chlorophyll") == []
    kdocs.write_text("bio/plants.md", "Photosynthesis needs chlorophyll and light.")
    assert kdocs.similar("photosynthesis chlorophyll")[0][0] == "bio/plants.md"
    kdocs.write_text("bio/plants.md", "Nothing about that any more.")
    assert kdocs.similar("photosynthesis chlorophyll") == []


def test_similar_ties_break_by_path(tmp_path):
    folder = SlateStore().bind("S", tmp_path, [FolderSpec("f")]).folder("f")
    for name in ("c.md", "a.md", "b.md"):
        folder.write_text(name, "identical words here")
    ranked = folder.similar("identical words", top_k=2)
    assert [r for r, _ in ranked] == ["a.md", "b.md"]


def test_similar_never_includes_hidden_or_outside_files(kdocs):
    ranked = dict(kdocs.similar("secret hidden top", top_k=50))
    assert not [r for r in ranked if r.startswith(".") or "private" in r]


def test_store_uses_a_custom_embedder(kroot):
    class Constant:
        name, dim = "const", 2

        def embed(self, texts):
            return [[1.0, 0.0] for _ in texts]

    store = SlateStore(embedder=Constant())
    folder = store.bind("K", kroot, [FolderSpec("docs")]).folder("docs")
    assert store.embedder.name == "const"
    ranked = folder.similar("anything", top_k=100)
    assert [r for r, _ in ranked] == folder.files()
    assert SlateStore(embedder="hashing:64").embedder.dim == 64


class CountingEmbedder(HashingEmbedder):
    """Records every text it embeds."""

    def __init__(self):
        super().__init__()
        self.seen: list[str] = []

    def embed(self, texts):
        self.seen.extend(texts)
        return super().embed(texts)


def test_vectors_are_computed_at_write_time_once_similarity_is_in_use(tmp_path):
    emb = CountingEmbedder()
    folder = SlateStore(embedder=emb).bind("S", tmp_path, [FolderSpec("f")]).folder("f")
    folder.write_text("cold.md", "written before anyone asked for similarity")
    assert emb.seen == []  # a folder nobody queries is not charged an embedding per write
    folder.similar("similarity")
    assert "written before anyone asked for similarity" in emb.seen
    emb.seen.clear()
    folder.write_text("warm.md", "orchids and tulips")
    assert emb.seen == ["orchids and tulips"]  # kept current by the write itself
    emb.seen.clear()
    assert folder.similar("tulips")[0][0] == "warm.md"
    assert emb.seen == ["tulips"]  # only the query: every file's vector was current
    assert folder.get_metatag("warm.md", "embedding") == HashingEmbedder().embed_one("orchids and tulips")


def test_failing_embedder_does_not_lose_a_write(tmp_path):
    class Flaky(HashingEmbedder):
        fail = False

        def embed(self, texts):
            if self.fail:
                raise SlateError("embedding service down")
            return super().embed(texts)

    emb = Flaky()
    folder = SlateStore(embedder=emb).bind("S", tmp_path, [FolderSpec("f")]).folder("f")
    folder.write_text("a.md", "alpha")
    folder.similar("alpha")
    emb.fail = True
    folder.write_text("a.md", "beta gamma")
    assert folder.read_text("a.md") == "beta gamma"
    emb.fail = False
    assert folder.similar("gamma")[0][0] == "a.md"
