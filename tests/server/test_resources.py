"""The served slates' files as resources: `slate:` URIs listed in pages, read only inside the slate's folders."""
from __future__ import annotations

import os

import pytest

from ladr_lab.server.resources import ResourceMissing, ResourceRefused, SlateResources
from ladr_lab.slate import SlateStore


@pytest.fixture
def resources(tmp_path):
    root = tmp_path / "My Notes"
    (root / "docs" / "sub").mkdir(parents=True)
    (root / "docs" / "a.md").write_text("# A\n", encoding="utf-8")
    (root / "docs" / "sub" / "b.json").write_text("{}", encoding="utf-8")
    (root / "docs" / "bin.dat").write_bytes(b"\xff\x00\xfe")
    (root / "docs" / ".hidden.md").write_text("secret", encoding="utf-8")
    (root / "top.md").write_text("not in a folder", encoding="utf-8")
    (tmp_path / "outside.md").write_text("outside", encoding="utf-8")
    os.symlink(tmp_path / "outside.md", root / "docs" / "link.md")
    store = SlateStore()
    store.bind("Notes", root)
    return SlateResources(store, page_size=2)


def test_listing_pages_through_every_file_of_every_folder(resources):
    seen, cursor = [], None
    while True:
        page, cursor = resources.page(cursor)
        assert len(page) <= 2
        seen += page
        if cursor is None:
            break
    assert [f.uri for f in seen] == ["slate:Notes/docs/a.md", "slate:Notes/docs/bin.dat", "slate:Notes/docs/sub/b.json"]
    assert [f.mime_type for f in seen] == ["text/markdown", "application/octet-stream", "application/json"]
    assert seen[0].size == 4
    with pytest.raises(ResourceRefused, match="cursor"):
        resources.page("-1")


def test_a_listed_file_reads_back_and_a_percent_encoded_uri_names_it_too(resources):
    assert resources.read("slate:Notes/docs/a.md") == (b"# A\n", "text/markdown")
    assert resources.read("slate:Notes/docs/sub%2Fb.json")[0] == b"{}"
    assert resources.read("slate:Notes/./docs//a.md")[0] == b"# A\n"


@pytest.mark.parametrize("uri, error, match", [
    ("slate:Notes/docs/../top.md", ResourceRefused, r"'\.\.'"),
    ("slate:Notes/docs/%2E%2E/top.md", ResourceRefused, r"'\.\.'"),
    ("slate:Notes//etc/passwd", ResourceRefused, "absolute path"),
    ("slate:Notes/docs/.hidden.md", ResourceRefused, "hidden"),
    ("slate:Notes/docs/link.md", ResourceMissing, "no such file"),   # a link out of the folder is never listed
    ("slate:Notes/top.md", ResourceMissing, "no such file"),         # not in a folder: not served
    ("slate:Notes/docs/missing.md", ResourceMissing, "no such file"),
    ("slate:Other/docs/a.md", ResourceRefused, "no served slate"),
    ("file:///etc/passwd", ResourceRefused, "must start with 'slate:'"),
    ("slate:Notes/docs\\..\\a.md", ResourceRefused, "refused"),
])
def test_a_uri_outside_the_listing_is_refused_or_missing(resources, uri, error, match):
    with pytest.raises(error, match=match):
        resources.read(uri)
