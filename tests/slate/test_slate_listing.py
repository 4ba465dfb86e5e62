"""index(), tree(), files() and glob() on the sample slate, and the listing cache's freshness."""
from __future__ import annotations

import copy
import json
import os
import pickle
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ladr_lab.errors import PathRefused, SlateError
from ladr_lab.slate import FolderSpec, SlateStore

TOP_MD = ["core.md", "faq.md", "glossary.md", "report-2024.md", "report-2025.md"]
ALL_FILES = [
    "core.md", "faq.md", "glossary.md", "notes/algebra.md", "notes/calculus.md", "notes/readme.txt",
    "report-2024.md", "report-2025.md", "research/2024-report.md", "research/notes.md", "summary.txt",
]


def bump_mtime(path) -> None:
    """Move a directory's mtime forward so a change is visible even on coarse-clock file systems."""
    st = os.stat(path)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 2_000_000_000))


def test_index_direct_entries(kdocs):
    index = kdocs.index()
    assert {"name": "core.md", "size": 45} in index
    names = [e["name"] for e in index]
    assert names == TOP_MD + ["summary.txt", "notes/", "research/"]
    notes = next(e for e in index if e["name"] == "notes/")
    assert notes == {"name": "notes/", "size": 31 + 41 + 22, "files": 3}
    assert ".hidden.md" not in names and ".metatags.json" not in names
    assert json.loads(json.dumps(index)) == index


def test_index_of_subfolder(kdocs):
    assert kdocs.index("research") == [{"name": "2024-report.md", "size": 31}, {"name": "notes.md", "size": 28}]
    assert kdocs.index("research/") == kdocs.index("research")
    assert kdocs.index("nope") is None
    assert kdocs.index("core.md") is None
    with pytest.raises(PathRefused):
        kdocs.index("../private")


def test_index_entries_are_read_only_but_copyable(kdocs):
    entry = kdocs.index()[0]
    with pytest.raises(TypeError):
        entry["name"] = "x"
    with pytest.raises(TypeError):
        entry.update(size=1)
    mutable = dict(entry)
    mutable["name"] = "x"
    assert copy.deepcopy(kdocs.index()) == kdocs.index()
    assert type(copy.deepcopy(entry)) is dict
    assert pickle.loads(pickle.dumps(entry)) == entry
    assert kdocs.index()[0]["name"] == "core.md"


def test_missing_folder_is_empty_until_first_write(kroot):
    store = SlateStore()
    folder = store.bind("K", kroot, [FolderSpec("later")]).folder("later")
    assert folder.index() == [] and folder.tree() == [] and folder.files() == [] and folder.glob("*") == []
    assert folder.metatags() == {} and folder.metatag_query("tags") == []
    folder.write_text("first.md", "hello")
    assert folder.index() == [{"name": "first.md", "size": 5}]
    assert (kroot / "later" / "first.md").read_text() == "hello"


def test_tree_depths(kdocs):
    assert kdocs.tree(depth=1) == kdocs.index()
    two = kdocs.tree(depth=2)
    notes = next(e for e in two if e["name"] == "notes/")
    assert [c["name"] for c in notes["children"]] == ["algebra.md", "calculus.md", "readme.txt"]
    assert notes["files"] == 3
    with pytest.raises(SlateError):
        kdocs.tree(depth=0)


def test_tree_cuts_off_at_depth_but_keeps_counts(kdocs):
    kdocs.write_text("notes/deep/deeper/x.md", "xx")
    unlimited = kdocs.tree()
    notes = next(e for e in unlimited if e["name"] == "notes/")
    deep = next(e for e in notes["children"] if e["name"] == "deep/")
    deeper = next(e for e in deep["children"] if e["name"] == "deeper/")
    assert deeper["children"] == [{"name": "x.md", "size": 2}]
    cut = next(e for e in kdocs.tree(depth=2) if e["name"] == "notes/")
    cut_deep = next(e for e in cut["children"] if e["name"] == "deep/")
    assert "children" not in cut_deep and cut_deep["files"] == 1 and cut_deep["size"] == 2
    assert notes["files"] == 4


def test_files_lists_everything_visible(kdocs):
    assert kdocs.files() == ALL_FILES


@pytest.mark.parametrize(
    "pattern, expected",
    [
        ("*.md", TOP_MD),
        ("notes/*.md", ["notes/algebra.md", "notes/calculus.md"]),
        ("**/*.md", [f for f in ALL_FILES if f.endswith(".md")]),
        ("**.md", [f for f in ALL_FILES if f.endswith(".md")]),
        ("**", ALL_FILES),
        ("notes/**", ["notes/algebra.md", "notes/calculus.md", "notes/readme.txt"]),
        ("*/*", ["notes/algebra.md", "notes/calculus.md", "notes/readme.txt",
                 "research/2024-report.md", "research/notes.md"]),
        ("report-*", ["report-2024.md", "report-2025.md"]),
        ("report-202?.md", ["report-2024.md", "report-2025.md"]),
        ("[cf]*.md", ["core.md", "faq.md"]),
        ("[!cf]*.md", ["glossary.md", "report-2024.md", "report-2025.md"]),
        ("2024-*", []),
        ("**/2024-*", ["research/2024-report.md"]),
        ("research/**/notes.md", ["research/notes.md"]),
        ("*", TOP_MD + ["summary.txt"]),
        ("core.md", ["core.md"]),
        ("notes/calculus.md", ["notes/calculus.md"]),
        ("*hidden*", []),
        (".*", []),
        ("**/.*", []),
        ("../private/*", []),
        ("notes/../*.md", []),
        ("/etc/*", []),
        ("*\x00", []),
        ("", []),
        ("notes/", []),
    ],
)
def test_glob(kdocs, pattern, expected):
    assert kdocs.glob(pattern) == expected


def test_glob_resists_pathological_patterns(kdocs):
    kdocs.write_text("a" * 60 + ".md", "x")
    assert kdocs.glob("*a*a*a*a*a*a*a*a*a*a*a*a*b") == []
    assert kdocs.glob("**/**/**/**/**/**/*.txt") == ["notes/readme.txt", "summary.txt"]


def test_write_updates_cached_index(kdocs):
    kdocs.index()
    kdocs.write_text("zeta.md", "12345")
    index = kdocs.index()
    assert {"name": "zeta.md", "size": 5} in index
    assert [e["name"] for e in index][:7] == TOP_MD + ["summary.txt", "zeta.md"]
    kdocs.write_text("zeta.md", "1234567")
    assert {"name": "zeta.md", "size": 7} in kdocs.index()
    kdocs.write_text("notes/new.md", "abc")
    notes = next(e for e in kdocs.index() if e["name"] == "notes/")
    assert notes["files"] == 4 and notes["size"] == 94 + 3
    assert "notes/new.md" in kdocs.files()
    assert kdocs.glob("notes/*.md") == ["notes/algebra.md", "notes/calculus.md", "notes/new.md"]
    kdocs.write_text("brand/new/dir/f.md", "f")
    assert {"name": "brand/", "size": 1, "files": 1} in kdocs.index()
    assert kdocs.index("brand/new") == [{"name": "dir/", "size": 1, "files": 1}]


def test_cache_matches_a_fresh_scan_after_many_writes(kdocs, kroot):
    kdocs.files()
    for i in range(30):
        kdocs.write_text(f"w/{i % 4}/f{i}.md", "x" * i)
        kdocs.update_text("core.md", lambda old: (old or "") + "+")
    cached = (kdocs.index(), kdocs.tree(), kdocs.files(), kdocs.glob("**/*.md"))
    fresh = SlateStore().bind("K", kroot, [FolderSpec("docs")]).folder("docs")
    assert cached == (fresh.index(), fresh.tree(), fresh.files(), fresh.glob("**/*.md"))


def test_external_removal_is_seen_through_directory_mtime(kdocs, kroot):
    assert "faq.md" in kdocs.files()
    os.remove(kroot / "docs" / "faq.md")
    bump_mtime(kroot / "docs")
    assert "faq.md" not in [e["name"] for e in kdocs.index()]
    assert "faq.md" not in kdocs.files()
    os.remove(kroot / "docs" / "notes" / "algebra.md")
    bump_mtime(kroot / "docs" / "notes")
    assert kdocs.glob("notes/*.md") == ["notes/calculus.md"]
    assert kdocs.index("notes") == [{"name": "calculus.md", "size": 41}, {"name": "readme.txt", "size": 22}]


def test_external_addition_of_a_subtree(kdocs, kroot):
    kdocs.index()
    (kroot / "docs" / "ext" / "inner").mkdir(parents=True)
    (kroot / "docs" / "ext" / "inner" / "e.md").write_text("external")
    bump_mtime(kroot / "docs")
    assert {"name": "ext/", "size": 8, "files": 1} in kdocs.index()
    assert kdocs.glob("ext/**") == ["ext/inner/e.md"]


def test_in_place_edit_is_seen_after_refresh(kdocs, kroot):
    assert {"name": "faq.md", "size": 29} in kdocs.index()
    path = kroot / "docs" / "faq.md"
    st = os.stat(kroot / "docs")
    with open(path, "a") as fh:
        fh.write("more")
    os.utime(kroot / "docs", ns=(st.st_atime_ns, st.st_mtime_ns))  # the directory did not change
    kdocs.refresh()
    assert {"name": "faq.md", "size": 33} in kdocs.index()


def test_write_leaves_no_temporary_files_in_listings(kdocs, kroot):
    for i in range(20):
        kdocs.write_text(f"t{i}.md", "x" * i)
    listed = kdocs.files()
    assert not [f for f in listed if "tmp" in f or f.startswith(".")]
    on_disk = sorted(p for p in os.listdir(kroot / "docs") if not p.startswith("."))
    assert on_disk == sorted(e["name"].rstrip("/") for e in kdocs.index())
    tmp_dir = kroot / "docs" / ".ladr" / "tmp"
    assert not list(tmp_dir.iterdir())


def test_undeclared_folder_is_an_error(kstore):
    slate = kstore.slate("Knowledge")
    with pytest.raises(SlateError, match='no folder "nope"'):
        slate.folder("nope")
    assert slate.folder_names() == ["docs", "private"]
    assert slate.folder("docs") is slate.folder("docs")


def test_many_files_index_stays_sorted(tmp_path):
    folder = SlateStore().bind("S", tmp_path, [FolderSpec("f")]).folder("f")
    names = [f"n{(i * 7919) % 101:03d}.md" for i in range(101)]
    folder.write_text(names[0], "x")
    folder.index()
    for n in names[1:]:
        folder.write_text(n, "y" * 3)
    index = folder.index()
    assert [e["name"] for e in index] == sorted(set(names))
    assert folder.files() == sorted(set(names))


# --- property: the tree walk agrees with a plain regex reading of the glob rules ---------------

def _reference_component(comp: str) -> str:
    out, i = "", 0
    while i < len(comp):
        c = comp[i]
        if c == "*":
            out += "[^/]*"
        elif c == "?":
            out += "[^/]"
        elif c == "[" and "]" in comp[i + 2:]:
            end = comp.index("]", i + 2)
            body = comp[i + 1:end]
            out += "(?!/)[" + ("^" + body[1:] if body.startswith("!") else body) + "]"
            i = end
        else:
            out += re.escape(c)
        i += 1
    return out


def _reference_regex(pattern: str) -> str:
    comps = pattern.split("/")
    out = ""
    for i, comp in enumerate(comps):
        last = i == len(comps) - 1
        if comp == "**":
            out += "[^/]+(?:/[^/]+)*" if last else "(?:[^/]+/)*"
            continue
        if comp.startswith("**"):
            out += "(?:[^/]+/)*"
            comp = "*" + comp.lstrip("*")
        out += _reference_component(comp) + ("" if last else "/")
    return out


GLOB_PIECES = ["*", "**", "?", "notes", "research", "*.md", "n*", "[a-c]*", "report-*", "core.md",
               "*.txt", "*e*", "2024-*", "**.md", "[!n]*"]


@settings(max_examples=300, deadline=None)
@given(pattern=st.lists(st.sampled_from(GLOB_PIECES), min_size=1, max_size=4).map("/".join))
def test_glob_matches_reference(ref_docs, pattern):
    folder = ref_docs
    expected = [f for f in folder.files() if re.fullmatch(_reference_regex(pattern), f, re.S)]
    assert folder.glob(pattern) == expected


def test_stale_temporary_files_are_swept(tmp_path):
    folder = SlateStore().bind("S", tmp_path, [FolderSpec("f")]).folder("f")
    folder.write_text("a.md", "a")
    tmp_dir = tmp_path / "f" / ".ladr" / "tmp"
    old, fresh = tmp_dir / "w-old.tmp", tmp_dir / "w-fresh.tmp"
    old.write_text("torn")
    fresh.write_text("in flight")
    os.utime(old, (1_000_000_000, 1_000_000_000))
    again = SlateStore().bind("S", tmp_path, [FolderSpec("f")]).folder("f")
    again.write_text("b.md", "b")
    assert not old.exists() and fresh.exists()
    assert again.files() == ["a.md", "b.md"]


def test_unreadable_subfolder_is_left_out(kdocs, kroot, monkeypatch):
    locked = kroot / "docs" / "locked"
    locked.mkdir()
    (locked / "x.md").write_text("x")
    real_scandir = os.scandir

    def scandir(path="."):
        if str(path).endswith("locked"):
            raise PermissionError(13, "Permission denied", str(path))
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", scandir)  # a chmod 0 directory, even when tests run as root
    kdocs.refresh()
    assert not [e for e in kdocs.index() if e["name"] == "locked/"]
    assert kdocs.files() == ALL_FILES
    assert kdocs.glob("locked/*") == []
