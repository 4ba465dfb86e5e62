"""Fixtures for the server: a small slate, an engine, a dispatcher."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from ladr_lab.search import EmbeddedEngine
from ladr_lab.server import Dispatcher
from ladr_lab.slate import SlateStore

DOCS = {
    "attention.md": ("# Attention\n\nSelf-attention in the transformer is quadratic in sequence length.",
                     {"year": 2017, "lang": "en"}),
    "bert.md": ("# BERT\n\nBidirectional transformer pre-training with masked language modelling.",
                {"year": 2018, "lang": "en"}),
    "resnet.md": ("# ResNet\n\nResidual connections train very deep convolutional networks.", {"year": 2015, "lang": "en"}),
    "lstm.md": ("# LSTM\n\nGated recurrent networks remember over long sequences.", {"year": 1997, "lang": "en"}),
    "fr.md": ("# Transformeur\n\nUn modèle d'attention pour la traduction.", {"year": 2019, "lang": "fr"}),
}


@pytest.fixture(scope="session")
def slate_dir(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("served") / "Papers"
    folder = root / "papers"
    folder.mkdir(parents=True)
    for rel, (text, _) in DOCS.items():
        (folder / rel).write_text(text, encoding="utf-8")
    (folder / ".metatags.json").write_text(json.dumps({rel: meta for rel, (_, meta) in DOCS.items()}))
    return root


@pytest.fixture
def dispatcher(slate_dir) -> Dispatcher:
    store = SlateStore()
    store.bind("Papers", slate_dir)
    return Dispatcher(EmbeddedEngine.from_store(store))
