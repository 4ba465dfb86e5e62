"""similar(folder, text, top_k): the same answers as Folder.similar, from the engine's dense index."""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ladr_lab.search import folder_vectors, similar
from ladr_lab.slate import SlateStore

REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "sample_slates" / "knowledge"
FIXTURE_DOCS = REPO / "tests" / "fixtures" / "knowledge"

QUERIES = ["derivatives and integrals", "groups rings", "security report", "how does dedup work across rounds",
           "maxRounds budget exhausted", "qwertyuiop zxcvbnm", "", "the of and", "retrieve", "slate write append"]


def _folder(root: Path, name: str):
    store = SlateStore()
    store.bind("S", root)
    return store.slate("S").folder(name)


@pytest.mark.parametrize("source,name", [(SAMPLE, "docs"), (FIXTURE_DOCS, "docs")])
def test_identical_to_folder_similar_on_fixtures(tmp_path, source, name):
    root = Path(shutil.copytree(source, tmp_path / "s"))
    folder = _folder(root, name)
    for q in QUERIES:
        for k in (0, 1, 3, 5, 100):
            assert similar(folder, q, k) == folder.similar(q, k), (q, k)


def test_ties_break_by_path_and_non_positive_are_left_out(tmp_path):
    folder = _folder(tmp_path, "d")
    for rel in ("b.md", "a.md", "c/a.md"):
        folder.write_text(rel, "identical words here")
    folder.write_text("other.md", "completely unrelated content")
    got = similar(folder, "identical words", 10)
    assert [r for r, _ in got] == ["a.md", "b.md", "c/a.md"]
    assert got == folder.similar("identical words", 10)
    assert similar(folder, "nothing shared", 5) == folder.similar("nothing shared", 5) == []


def test_follows_writes_outside_changes_and_refresh(tmp_path):
    folder = _folder(tmp_path, "d")
    folder.write_text("a.md", "alpha beta gamma")
    assert similar(folder, "photosynthesis chlorophyll", 5) == []
    folder.write_text("bio/plants.md", "photosynthesis in plants uses chlorophyll")
    assert similar(folder, "photosynthesis chlorophyll", 5)[0][0] == "bio/plants.md"
    # another program adds a file into an existing and into an until-now empty directory
    (tmp_path / "d" / "empty").mkdir()
    similar(folder, "x", 1)
    (tmp_path / "d" / "outside.md").write_text("photosynthesis outside the store")
    (tmp_path / "d" / "empty" / "late.md").write_text("chlorophyll arrives late")
    got = similar(folder, "photosynthesis chlorophyll", 5)
    assert {"outside.md", "empty/late.md", "bio/plants.md"} <= {r for r, _ in got}
    assert got == folder.similar("photosynthesis chlorophyll", 5)
    # another program removes one
    os.remove(tmp_path / "d" / "bio" / "plants.md")
    got = similar(folder, "photosynthesis chlorophyll", 5)
    assert "bio/plants.md" not in {r for r, _ in got}
    assert got == folder.similar("photosynthesis chlorophyll", 5)
    # an in-place edit is seen after refresh, by both
    (tmp_path / "d" / "a.md").write_text("alpha photosynthesis chlorophyll chlorophyll")
    folder.refresh()
    got = similar(folder, "photosynthesis chlorophyll", 5)
    assert got[0][0] == "a.md"
    assert got == folder.similar("photosynthesis chlorophyll", 5)


def test_an_unchanged_folder_is_not_relisted(tmp_path):
    folder = _folder(tmp_path, "d")
    for i in range(20):
        folder.write_text(f"f{i}.md", f"file number {i} about topic {i % 3}")
    similar(folder, "topic", 3)
    similar(folder, "topic", 3)  # the first relist computes vectors, which moves the cache version once
    fv = folder_vectors(folder)
    before = fv.syncs
    for _ in range(5):
        similar(folder, "file number", 3)
    assert fv.syncs == before
    folder.write_text("f0.md", "changed text")
    similar(folder, "changed", 3)
    assert fv.syncs == before + 1


def test_one_index_per_folder_and_shared_vectors(tmp_path):
    folder = _folder(tmp_path, "d")
    folder.write_text("a.md", "some words")
    assert folder_vectors(folder) is folder_vectors(folder)
    similar(folder, "words", 1)
    view = folder_vectors(folder).view()
    assert view.vector("a.md") == folder.get_metatag("a.md", "embedding")


_words = st.sampled_from("alpha beta gamma delta slate ladder round model prompt vector index".split())
_texts = st.lists(_words, min_size=0, max_size=12).map(" ".join)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(files=st.dictionaries(st.sampled_from(["a.md", "b.md", "n/c.md", "n/d.md", "e.txt"]), _texts, max_size=5),
       queries=st.lists(_texts, min_size=1, max_size=4), k=st.integers(0, 6))
def test_property_identical_to_folder_similar(tmp_path_factory, files, queries, k):
    root = tmp_path_factory.mktemp("p")
    folder = _folder(root, "d")
    for rel, text in files.items():
        folder.write_text(rel, text)
    for q in queries:
        assert similar(folder, q, k) == folder.similar(q, k)
