"""SlateStore binding and lookup, FolderSpec schemas."""
from __future__ import annotations

import pytest

from ladr_lab.errors import SlateError
from ladr_lab.slate import FolderSpec, SlateStore


def test_bind_and_lookup(tmp_path):
    store = SlateStore()
    a = store.bind("A", tmp_path / "a", [FolderSpec("docs")])
    store.bind("B", str(tmp_path / "b"))
    assert store.titles() == ["A", "B"]
    assert store.slate("A") is a and "A" in store
    assert a.title == "A" and a.root == tmp_path / "a"
    with pytest.raises(SlateError, match='"Nope"'):
        store.slate("Nope")


def test_rebinding_replaces(tmp_path):
    store = SlateStore()
    store.bind("A", tmp_path / "one", [FolderSpec("docs")])
    again = store.bind("A", tmp_path / "two", [FolderSpec("docs")])
    assert store.slate("A") is again and store.titles() == ["A"]
    assert again.folder("docs").path == tmp_path / "two" / "docs"


def test_undeclared_slate_accepts_safe_folder_names(kroot):
    slate = SlateStore().bind("K", kroot)
    assert slate.folder_names() == ["docs", "private"]
    assert "core.md" in slate.folder("docs").files()
    for bad in ("..", ".hidden", "a/../b", "/abs", ""):
        with pytest.raises(SlateError):
            slate.folder(bad)


def test_bad_declarations(tmp_path):
    store = SlateStore()
    with pytest.raises(SlateError):
        store.bind("A", tmp_path, [FolderSpec("../up")])
    with pytest.raises(SlateError, match="twice"):
        store.bind("A", tmp_path, [FolderSpec("docs"), FolderSpec("docs")])


def test_effective_schema():
    spec = FolderSpec("docs", metatags={"tags": "string[]", "summary": "string"},
                      files={"core.md": {"verified": "boolean", "summary": "object"}})
    assert spec.effective_schema("core.md") == {"tags": "string[]", "summary": "object", "verified": "boolean"}
    assert spec.effective_schema("other.md") == {"tags": "string[]", "summary": "string"}
    spec.effective_schema("other.md")["x"] = "number"
    assert "x" not in spec.metatags


def test_folder_spec_from_config():
    spec = FolderSpec.from_config({
        "name": "docs",
        "metatags": {"tags": "string[]"},
        "files": [{"name": "core.md", "metatags": {"verified": "boolean"}}, {"name": "faq.md"}],
    })
    assert spec == FolderSpec("docs", {"tags": "string[]"}, {"core.md": {"verified": "boolean"}, "faq.md": {}})


def test_child_run_shares_the_store(tmp_path):
    store = SlateStore()
    parent_view = store.bind("M", tmp_path, [FolderSpec("f")]).folder("f")
    child_view = store.slate("M").folder("f")
    child_view.write_text("x.md", "from child")
    assert parent_view is child_view and parent_view.read_text("x.md") == "from child"
