"""The security boundary: resolve() and every read refuse paths that leave the folder or are hidden."""
from __future__ import annotations

import json
import os
from pathlib import Path, PurePosixPath

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
    "notes/..",
    "..",
    "./../core.md",
    "/etc/passwd",
    "//etc/passwd",
    "a\x00b",
    ".hidden.md",
    "notes/.x",
    "./.hidden.md",
    ".metatags.json",
    ".ladr/created.log",
    "...",
    "notes\\calculus.md",
    "..\\private\\secret.md",
    "",
    ".",
    "./",
    ".//./",
    "/",
    "bad\udcffname.md",
]

# The shapes a model writes, and their canonical forms.
CANONICAL = [
    ("core.md", "core.md"),
    ("./core.md", "core.md"),
    ("core.md/", "core.md"),
    ("core.md//", "core.md"),
    ("notes//calculus.md", "notes/calculus.md"),
    ("./notes/./calculus.md", "notes/calculus.md"),
    ("notes/calculus.md/.", "notes/calculus.md"),
    ("notes/", "notes"),
    (Path("notes") / "calculus.md", "notes/calculus.md"),
    (PurePosixPath("./core.md"), "core.md"),
]


@pytest.mark.parametrize("rel", REFUSED)
def test_resolve_refuses(kdocs, rel):
    with pytest.raises(PathRefused):
        kdocs.resolve(rel)
    assert kdocs.read_text(rel) is None
    assert kdocs.exists(rel) is False


@pytest.mark.parametrize("rel, canonical", CANONICAL)
def test_requested_paths_are_canonicalised(kdocs, rel, canonical):
    assert normalize_rel(rel) == canonical
    assert kdocs.normalize(rel) == canonical
    assert kdocs.resolve(rel) == kdocs.resolve(canonical)
    if canonical != "notes":
        assert kdocs.read_text(rel) == kdocs.read_text(canonical) is not None
        assert kdocs.exists(rel)
        assert kdocs.get_metatag(rel, "size") == kdocs.get_metatag(canonical, "size") is not None


def test_every_path_taking_function_takes_a_pathlike(kdocs, kroot):
    p = Path("core.md")
    assert "CORE-7731" in kdocs.read_text(p)
    assert kdocs.read_excerpt(p, 4).text == kdocs.read_text("core.md")[:4]
    assert kdocs.exists(p) and kdocs.resolve(p) == kdocs.resolve("core.md")
    assert kdocs.get_metatag(p, "size") == 45
    assert kdocs.index(Path("research")) == kdocs.index("research")
    assert kdocs.glob(Path("notes") / "*.md") == ["notes/algebra.md", "notes/calculus.md"]
    kdocs.write_text(Path("new") / "p.md", "via a Path")
    assert kdocs.read_text("new/p.md") == "via a Path"
    kdocs.update_text(Path("new/p.md"), lambda old: old + "!")
    kdocs.set_metatag(Path("new/p.md"), "tags", ["p"])
    kdocs.update_metatag(Path("./new/p.md"), "summary", lambda old: "s")
    assert kdocs.metatags()["new/p.md"] == {"tags": ["p"], "summary": "s"}
    store = SlateStore()
    slate = store.bind("K", str(kroot), [FolderSpec("docs")])
    assert slate.root == kroot and slate.folder(Path("docs")).read_text("core.md") == kdocs.read_text("core.md")
    assert FolderSpec("docs", files={"core.md": {"v": "boolean"}}).effective_schema(Path("core.md")) == {"v": "boolean"}
    with pytest.raises(PathRefused):
        normalize_rel(b"core.md")  # bytes are not a text path


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


# --- properties of the canonical form -------------------------------------------------------------

SEGMENTS = ["", ".", "..", "a", "b.md", "notes", ".x", "..x", "x..", "\x00", "\\", "é", "\udcff", " ", "~"]
any_path = st.one_of(
    st.text(max_size=30),
    st.lists(st.sampled_from(SEGMENTS), max_size=7).map("/".join),
)


@settings(max_examples=600, deadline=None)
@given(rel=any_path)
def test_canonical_form_names_only_descendants_and_is_a_fixed_point(rel):
    try:
        canon = normalize_rel(rel)
    except PathRefused:
        return
    parts = canon.split("/")
    assert all(p and not p.startswith(".") and "\x00" not in p and "\\" not in p for p in parts)
    assert normalize_rel(canon) == canon
    base = "/base/folder"
    joined = os.path.normpath(os.path.join(base, canon))
    assert joined.startswith(base + "/") and joined != base  # a descendant, never the folder or above
    # the same components, only empty and "." ones dropped: the request and its canonical form
    # name the same directory entry
    assert [p for p in rel.split("/") if p not in ("", ".")] == parts


@settings(max_examples=300, deadline=None)
@given(rel=st.lists(st.sampled_from(["notes", "calculus.md", ".", "", "research", "notes.md"]),
                    min_size=1, max_size=6).map("/".join))
def test_equal_files_get_equal_canonical_paths(ref_docs, rel):
    kdocs = ref_docs
    try:
        canon = normalize_rel(rel)
    except PathRefused:
        assert rel.startswith("/") or not [p for p in rel.split("/") if p not in ("", ".")]
        return
    target = os.path.join(kdocs.path, rel)
    if os.path.isfile(target):
        # every accepted spelling of an existing file canonicalises to its one listed path
        assert canon in kdocs.files()
        assert os.path.samefile(target, os.path.join(kdocs.path, canon))
        same = [f for f in kdocs.files() if os.path.samefile(os.path.join(kdocs.path, f), target)]
        assert same == [canon]


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
