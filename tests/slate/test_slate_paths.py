"""The security boundary: resolve() and every read refuse paths that leave the folder or are hidden."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ladr_lab.errors import PathRefused, SlateError
from ladr_lab.slate import FolderSpec, SlateStore, normalize_rel

REFUSED = [
    "../x",
    "../private/secret.md",
    "notes/../../private/secret.md",
    "notes/../core.md",
    "/etc/passwd",
    "a\x00b",
    ".hidden.md",
    "notes/.x",
    ".metatags.json",
    ".ladr/created.log",
    "./core.md",
    "notes\\calculus.md",
    "..\\private\\secret.md",
    "",
    "/",
    "notes//calculus.md",
]


@pytest.mark.parametrize("rel", REFUSED)
def test_resolve_refuses(kdocs, rel):
    with pytest.raises(PathRefused):
        kdocs.resolve(rel)
    assert kdocs.read_text(rel) is None
    assert kdocs.exists(rel) is False


def test_path_refused_is_a_slate_error():
    assert issubclass(PathRefused, SlateError)


def test_resolve_accepts_nested_file(kdocs, kroot):
    p = kdocs.resolve("notes/calculus.md")
    assert p == Path(os.path.realpath(kroot / "docs" / "notes" / "calculus.md"))
    assert "CALCULUS-7731" in kdocs.read_text("notes/calculus.md")
    assert kdocs.exists("notes/calculus.md")


def test_resolve_accepts_missing_file_and_trailing_slash(kdocs):
    assert kdocs.resolve("new/thing.md").name == "thing.md"
    assert kdocs.exists("new/thing.md") is False
    assert kdocs.read_text("new/thing.md") is None
    assert kdocs.resolve("notes/") == kdocs.resolve("notes")
    assert normalize_rel("notes/") == "notes"


def test_directory_is_not_a_readable_file(kdocs):
    assert kdocs.exists("notes") is False
    assert kdocs.read_text("notes") is None


def test_symlink_leading_out_is_refused(kdocs, kroot, tmp_path):
    outside = tmp_path / "outside.md"
    outside.write_text("OUTSIDE-SECRET")
    os.symlink(outside, kroot / "docs" / "link.md")
    os.symlink(kroot / "private", kroot / "docs" / "privdir")
    for rel in ("link.md", "privdir/secret.md"):
        with pytest.raises(PathRefused):
            kdocs.resolve(rel)
        assert kdocs.read_text(rel) is None
    assert "link.md" not in kdocs.files()
    assert not any(e["name"].startswith("privdir") for e in kdocs.index())


def test_symlink_inside_folder_is_followed_but_not_to_hidden(kdocs, kroot):
    os.symlink("core.md", kroot / "docs" / "alias.md")
    os.symlink(".hidden.md", kroot / "docs" / "sneaky.md")
    assert "CORE-7731" in kdocs.read_text("alias.md")
    assert kdocs.read_text("sneaky.md") is None
    kdocs.refresh()
    assert "alias.md" in kdocs.files()
    assert "sneaky.md" not in kdocs.files()


def test_fifo_does_not_hang_a_read(kdocs, kroot):
    if not hasattr(os, "mkfifo"):
        pytest.skip("no FIFOs here")
    os.mkfifo(kroot / "docs" / "pipe.md")
    assert kdocs.read_text("pipe.md") is None
    assert "pipe.md" not in kdocs.files()


def test_non_string_path_is_refused(kdocs):
    with pytest.raises(PathRefused):
        kdocs.resolve(None)  # type: ignore[arg-type]


# --- property: whatever the path, nothing outside the folder is ever returned ------------------

MARKER = "OUT-OF-BOUNDS-9431"


@pytest.fixture(scope="module")
def guarded(tmp_path_factory):
    base = tmp_path_factory.mktemp("guard")
    (base / "secret.md").write_text(f"{MARKER} top secret")
    root = base / "slate"
    docs = root / "docs"
    (docs / "notes").mkdir(parents=True)
    (root / "private").mkdir()
    (root / "private" / "secret.md").write_text(f"{MARKER} private")
    (docs / ".hidden.md").write_text(f"{MARKER} hidden")
    (docs / ".metatags.json").write_text(json.dumps({".hidden.md": {"note": MARKER}, "core.md": {"note": "ok"}}))
    (docs / "core.md").write_text("core contents")
    (docs / "notes" / "a.md").write_text("note a")
    os.symlink(base / "secret.md", docs / "leak.md")
    os.symlink(root / "private", docs / "notes" / "up")
    os.symlink(docs / ".hidden.md", docs / "alias.md")
    store = SlateStore()
    folder = store.bind("S", root, [FolderSpec("docs")]).folder("docs")
    inside = {
        p.read_text()
        for p in docs.rglob("*")
        if p.is_file() and not p.is_symlink() and not any(s.startswith(".") for s in p.relative_to(docs).parts)
    }
    return folder, inside


PIECES = ["..", ".", "", "docs", "notes", "core.md", "a.md", "leak.md", "up", "secret.md", "private",
          ".hidden.md", ".metatags.json", "alias.md", "\x00", "\\", "/", "~", "slate", "guard"]
paths = st.one_of(
    st.text(max_size=40),
    st.lists(st.sampled_from(PIECES), max_size=8).map("/".join),
    st.lists(st.sampled_from(PIECES), max_size=6).map(lambda parts: "/" + "/".join(parts)),
)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rel=paths)
def test_read_text_never_leaves_the_folder(guarded, rel):
    folder, inside = guarded
    text = folder.read_text(rel)
    if text is not None:
        assert MARKER not in text
        assert text in inside
    real = None
    try:
        real = folder.resolve(rel)
    except PathRefused:
        assert text is None
    if real is not None:
        base = os.path.realpath(folder.path)
        assert str(real).startswith(base + os.sep)
    for value in (folder.get_metatag(rel, "note"), folder.get_metatag(rel, "size")):
        assert value is None or MARKER not in str(value)
