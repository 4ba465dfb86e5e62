"""A person's metatag edits (issue 31: metatags without Python): values typed as written, checked against the
folder's declarations, and the `.ladr/` bookkeeping kept out of git."""
from __future__ import annotations

import json
import subprocess

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ladr_lab.errors import SlateError
from ladr_lab.slate import FolderSpec, SlateStore, format_metatag_value, parse_metatag_text

DECLARED = {"summary": "string", "tags": "string[]", "confidence": "number", "verified": "boolean",
            "extra": "object"}


@pytest.fixture
def folder(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_text("A")
    store = SlateStore()
    store.bind("K", tmp_path, [FolderSpec("docs", DECLARED, {"a.md": {"owner": "string"}})])
    return store.slate("K").folder("docs")


@pytest.mark.parametrize("type_, text, value", [
    ("string", " How it works ", " How it works "), ("string[]", "breakfast, recipe,", ["breakfast", "recipe"]),
    ("string[]", '["a, b", "c"]', ["a, b", "c"]), ("string[]", "", []), ("number", "0.8", 0.8), ("number", "3", 3),
    ("number", "-2e3", -2000.0), ("boolean", "True", True), ("boolean", "no", False),
    ("object", '{"k": [1, 2]}', {"k": [1, 2]}), (None, "42", 42), (None, "plain words", "plain words"),
])
def test_text_is_read_for_the_declared_type(type_, text, value):
    got = parse_metatag_text(text, type_)
    assert got == value and type(got) is type(value)


@pytest.mark.parametrize("type_, text, why", [
    ("number", "high", "is not a number"), ("number", "nan", "not a finite number"),
    ("boolean", "maybe", "is not a boolean"), ("object", "{nope", "is not JSON"),
    ("string[]", "[1, 2]", "is not a JSON array of strings"), ("strng", "x", 'unknown metatag type "strng"'),
])
def test_text_that_is_not_of_the_type_is_refused_saying_why(type_, text, why):
    with pytest.raises(SlateError, match=why):
        parse_metatag_text(text, type_)


_VALUES = st.one_of(st.tuples(st.just("string"), st.text()),
                    st.tuples(st.just("string[]"), st.lists(st.text(), max_size=4)),
                    st.tuples(st.just("number"), st.one_of(st.integers(-10**6, 10**6),
                                                           st.floats(allow_nan=False, allow_infinity=False))),
                    st.tuples(st.just("boolean"), st.booleans()),
                    st.tuples(st.just("object"), st.dictionaries(st.text(max_size=3), st.integers(), max_size=3)))


@given(_VALUES)
def test_what_the_edit_box_shows_reads_back_as_the_same_value(pair):
    type_, value = pair
    assert parse_metatag_text(format_metatag_value(value, type_), type_) == value


def test_a_checked_edit_enforces_the_declared_names_and_types(folder):
    folder.set_metatag("a.md", "tags", ["x", "y"], checked=True)
    folder.set_metatag("a.md", "owner", "ann", checked=True)       # the file's own declaration
    assert folder.metatags()["a.md"] == {"tags": ["x", "y"], "owner": "ann"}
    with pytest.raises(SlateError, match=r'"sumary" is not declared .*did you mean "summary"'):
        folder.set_metatag("a.md", "sumary", "x", checked=True)
    with pytest.raises(SlateError, match="declared number"):
        folder.set_metatag("a.md", "confidence", "high", checked=True)
    with pytest.raises(SlateError, match="system metatag"):
        folder.set_metatag("a.md", "size", 3, checked=True)
    folder.set_metatag("a.md", "tags", None, checked=True)          # removing is always of the type
    assert folder.metatags()["a.md"] == {"owner": "ann"}
    folder.set_metatag("a.md", "anything", 1)                        # unchecked (a ladder's write): as before
    assert folder.get_metatag("a.md", "anything") == 1


def test_a_folder_with_no_declarations_takes_any_name(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_text("A")
    store = SlateStore()
    store.bind("K", tmp_path)
    f = store.slate("K").folder("docs")
    f.set_metatag("a.md", "whatever", [1], checked=True)
    assert f.get_metatag("a.md", "whatever") == [1]


def test_the_bookkeeping_is_ignored_by_git_the_notes_and_metatags_are_not(folder, tmp_path):
    folder.write_text("notes/b.md", "B")
    folder.set_metatag("a.md", "summary", "S")
    ignore = tmp_path / "docs" / ".ladr" / ".gitignore"
    assert ignore.read_text().splitlines()[-1] == "*"
    git = subprocess.run(["git", "init", "-q", str(tmp_path)], capture_output=True)
    if git.returncode != 0:
        pytest.skip("git is not installed")
    out = subprocess.run(["git", "-C", str(tmp_path), "status", "--porcelain", "--untracked-files=all"],
                         capture_output=True, text=True, check=True).stdout
    paths = sorted(line[3:] for line in out.splitlines())
    assert paths == ["docs/.metatags.json", "docs/a.md", "docs/notes/b.md"]


def test_an_older_ladr_folder_gets_its_gitignore(tmp_path):
    (tmp_path / "docs" / ".ladr" / "locks").mkdir(parents=True)
    (tmp_path / "docs" / ".ladr" / "tmp").mkdir()
    (tmp_path / "docs" / "a.md").write_text("A")
    store = SlateStore()
    store.bind("K", tmp_path)
    store.slate("K").folder("docs").set_metatag("a.md", "n", 1)
    assert (tmp_path / "docs" / ".ladr" / ".gitignore").is_file()
    assert json.loads((tmp_path / "docs" / ".metatags.json").read_text()) == {"a.md": {"n": 1}}
