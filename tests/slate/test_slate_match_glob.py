"""`match_glob(pattern, path)` answers for one path what the tree walk answers for a folder: it is True exactly for
the files `Folder.glob` (walk_glob) yields."""
from __future__ import annotations

import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ladr_lab.slate import FolderSpec, SlateStore
from ladr_lab.slate.globbing import compile_glob, match_glob, walk_glob

PATHS = ["core.md", "faq.md", "notes.md", "x", "report-2024.md", "summary.txt", "notes/a.md", "notes/b.txt",
         "notes/deep/c.md", "notes/deep/x", "research/2024-report.md", "research/notes/r.txt", "a/b/c/d.md",
         "a/a/a/a.md", "[x].md", "weird name.md"]
PIECES = ["*", "**", "?", "notes", "research", "deep", "*.md", "n*", "[a-c]*", "report-*", "core.md", "x",
          "*.txt", "*e*", "2024-*", "**.md", "[!n]*", "a", "?.md", "[[]x].md", ".", ""]


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    root = tmp_path_factory.mktemp("glob") / "S"
    f = SlateStore().bind("S", root, [FolderSpec("docs")]).folder("docs")
    for p in PATHS:
        f.write_text(p, p)
    (root / "docs" / ".hidden.md").write_text("never listed")
    assert f.files() == sorted(PATHS)
    return f


def _matched(pattern: str) -> list[str]:
    return sorted(p for p in PATHS if match_glob(pattern, p))


@pytest.mark.parametrize("pattern", [
    "*", "**", "*.md", "**/*.md", "**.md", "notes/**", "notes/*", "*/*", "**/x", "x/**", "notes/**/c.md",
    "a/**/a.md", "**/a/**/a.md", "**/deep/**", "research/**/notes/*", "[!cn]*", "?", "[[]x].md", "weird*",
    "core.md", "notes/deep/x", "notes/", "./notes/*.md", "notes//a.md", "**/**/**", "", "/core.md",
    "../core.md", "notes/../core.md", "notes\\a.md", "*\x00", ".*", "**/.*",
])
def test_match_glob_picks_what_the_walk_yields(folder, pattern):
    assert _matched(pattern) == folder.glob(pattern)


@settings(max_examples=300, deadline=None)
@given(pattern=st.lists(st.sampled_from(PIECES), min_size=1, max_size=5).map("/".join))
def test_match_glob_agrees_with_the_walk_on_any_pattern(folder, pattern):
    assert _matched(pattern) == folder.glob(pattern)


def test_match_glob_agrees_with_walk_glob_on_a_tree_of_dicts():
    class Node:
        def __init__(self):
            self.files, self.dirs = {}, {}

    root = Node()
    for p in PATHS:
        *dirs, name = p.split("/")
        node = root
        for d in dirs:
            node = node.dirs.setdefault(d, Node())
        node.files[name] = {}
    for pattern in ("**", "**/*.md", "a/**/a.md", "*/deep/*", "x/**"):
        assert _matched(pattern) == walk_glob(root, compile_glob(pattern))


@pytest.mark.parametrize(("pattern", "path", "expected"), [
    ("*.md", "core.md", True),
    ("*.md", "./core.md", True),          # the path is read as walk_glob spells its answers
    ("notes/*.md", "notes//a.md", True),
    ("*.md", "notes/a.md", False),        # a star stays in one folder
    ("**", "notes/a.md", True),
    ("notes/**", "notes", False),         # a last `**` matches files below the folder, not the folder
    ("*/*.md", "../core.md", False),
    ("*", "", False),
    ("*", "/", False),
    ("", "core.md", False),
    ("/etc/*", "etc/passwd", False),
    ("*.md", "a\x00.md", False),
    (3, "core.md", False),
    ("*.md", None, False),
])
def test_match_glob_table(pattern, path, expected):
    assert match_glob(pattern, path) is expected


def test_match_glob_is_linear_in_its_stars():
    pattern = "/".join(["**", "a"] * 40) + "/b.md"
    path = "/".join(["a"] * 400) + "/c.md"
    started = time.perf_counter()
    assert match_glob(pattern, path) is False
    assert match_glob(pattern, path.replace("c.md", "b.md")) is True
    assert time.perf_counter() - started < 2
