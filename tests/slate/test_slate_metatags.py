"""User metatags in `.metatags.json`, system metatags, `contains` queries and metatag writes."""
from __future__ import annotations

import json
import os
import re
import threading

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ladr_lab.errors import PathRefused, SlateError
from ladr_lab.slate import SYSTEM_METATAGS, FolderSpec, SlateStore, contains_match, value_matches_type

ISO = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")


def test_metatags_of_listed_files(kdocs):
    tags = kdocs.metatags()
    assert set(tags) == {"core.md", "faq.md", "report-2024.md", "notes/calculus.md", "notes/algebra.md"}
    assert tags["core.md"] == {"tags": ["overview", "Security"], "priority": 2, "summary": "the core"}
    tags["core.md"]["tags"].append("mutated")
    assert kdocs.metatags()["core.md"]["tags"] == ["overview", "Security"]


def test_metatags_hide_hidden_and_missing_files(kdocs, kroot):
    sidecar = kroot / "docs" / ".metatags.json"
    data = json.loads(sidecar.read_text())
    data[".hidden.md"] = {"tags": ["secret"]}
    data["gone.md"] = {"tags": ["ghost"]}
    sidecar.write_text(json.dumps(data))
    assert ".hidden.md" not in kdocs.metatags() and "gone.md" not in kdocs.metatags()
    assert kdocs.metatag_query("tags", "secret") == []
    assert kdocs.metatag_query("tags", "ghost") == []
    assert kdocs.get_metatag(".hidden.md", "tags") is None


def test_get_metatag_user_values(kdocs):
    assert kdocs.get_metatag("core.md", "summary") == "the core"
    assert kdocs.get_metatag("notes/algebra.md", "tags") == ["math", "algebra"]
    assert kdocs.get_metatag("faq.md", "summary") is None
    assert kdocs.get_metatag("missing.md", "summary") is None
    assert kdocs.get_metatag("../private/secret.md", "size") is None


def test_metatag_values(kdocs):
    assert kdocs.metatag_values("summary") == [
        {"file": "core.md", "value": "the core"},
        {"file": "notes/algebra.md", "value": "algebra basics"},
    ]
    assert kdocs.metatag_values("priority") == [
        {"file": "core.md", "value": 2}, {"file": "report-2024.md", "value": 1},
    ]
    assert kdocs.metatag_values("nothing") == []
    sizes = kdocs.metatag_values("size")
    assert [v["file"] for v in sizes] == kdocs.files()
    assert {"file": "core.md", "value": 45} in sizes
    with pytest.raises(SlateError):
        kdocs.metatag_values("index")


def test_metatag_query_contains(kdocs):
    assert kdocs.metatag_query("tags") == ["core.md", "faq.md", "notes/algebra.md", "notes/calculus.md",
                                           "report-2024.md"]
    assert kdocs.metatag_query("tags", "secur") == ["core.md"]
    assert kdocs.metatag_query("tags", "SECURITY") == ["core.md"]
    assert kdocs.metatag_query("tags", "math") == ["notes/algebra.md", "notes/calculus.md"]
    assert kdocs.metatag_query("tags", "nothing-like-this") == []
    assert kdocs.metatag_query("summary", "ALGEBRA") == ["notes/algebra.md"]
    # number: contains is ignored, every file with the metatag set answers
    assert kdocs.metatag_query("priority", "zzz") == ["core.md", "report-2024.md"]
    assert kdocs.metatag_query("undeclared") == []


def test_contains_uses_declared_type(kroot):
    spec = FolderSpec("docs", metatags={"summary": "object"})
    folder = SlateStore().bind("K", kroot, [spec]).folder("docs")
    # declared object: contains ignored even though the stored value is a string
    assert folder.metatag_query("summary", "zzz") == ["core.md", "notes/algebra.md"]


def test_contains_match_rules():
    assert contains_match("Security", "secur")
    assert contains_match(["a", "Network Security"], "SECUR")
    assert not contains_match(["a", 3], "secur")
    assert contains_match(5, "x") and contains_match(True, "x") and contains_match({"a": "b"}, "zz")
    assert contains_match("anything", None)
    assert contains_match("abc", "zz", declared="number")
    assert not contains_match("abc", "zz", declared="string")


@given(st.lists(st.text(max_size=8), max_size=5), st.text(max_size=4))
def test_contains_on_lists_is_any_element(values, needle):
    expected = any(needle.casefold() in v.casefold() for v in values)
    assert contains_match(values, needle) == expected


def test_value_matches_type():
    assert value_matches_type(["a"], "string[]") and not value_matches_type(["a", 1], "string[]")
    assert value_matches_type(1.5, "number") and not value_matches_type(True, "number")
    assert value_matches_type(False, "boolean") and value_matches_type({"x": [1]}, "object")
    with pytest.raises(SlateError):
        value_matches_type(1, "integer")


def test_system_metatags(kdocs):
    assert SYSTEM_METATAGS == ("index", "tree", "created", "modified", "size", "embedding")
    assert kdocs.get_metatag("core.md", "size") == 45
    modified = kdocs.get_metatag("core.md", "modified")
    created = kdocs.get_metatag("core.md", "created")
    assert ISO.match(modified) and ISO.match(created)
    assert created <= modified
    assert kdocs.get_metatag("core.md", "index") is None
    assert kdocs.get_metatag("nope.md", "created") is None
    vec = kdocs.get_metatag("core.md", "embedding")
    assert isinstance(vec, list) and all(isinstance(x, float) for x in vec)
    assert abs(sum(x * x for x in vec) - 1.0) < 1e-9


def test_created_is_recorded_once_for_a_store_created_file(tmp_path):
    folder = SlateStore().bind("S", tmp_path, [FolderSpec("f")]).folder("f")
    folder.write_text("a.md", "one")
    created = folder.get_metatag("a.md", "created")
    assert created == folder.get_metatag("a.md", "modified")
    for text in ("two", "three"):
        folder.write_text("a.md", text)
    assert folder.get_metatag("a.md", "created") == created
    log = (tmp_path / "f" / ".ladr" / "created.log").read_text().splitlines()
    assert [json.loads(line)[0] for line in log] == ["a.md"]
    assert {v["file"]: v["value"] for v in folder.metatag_values("created")} == {"a.md": created}


def test_created_of_a_file_written_first_by_someone_else_is_kept(kdocs, kroot):
    path = kroot / "docs" / "faq.md"
    old = 1_500_000_000 * 10**9
    os.utime(path, ns=(old, old))
    before = kdocs.get_metatag("faq.md", "created")
    assert before == "2017-07-14T02:40:00Z"
    kdocs.update_text("faq.md", lambda t: t + "more")
    assert kdocs.get_metatag("faq.md", "created") == before
    assert kdocs.get_metatag("faq.md", "modified") > before
    assert {v["file"]: v["value"] for v in kdocs.metatag_values("created")}["faq.md"] == before


def test_set_and_update_metatag(kdocs, kroot):
    kdocs.set_metatag("faq.md", "summary", "questions")
    assert kdocs.get_metatag("faq.md", "summary") == "questions"
    on_disk = json.loads((kroot / "docs" / ".metatags.json").read_text())
    assert on_disk["faq.md"] == {"tags": ["help"], "summary": "questions"}
    assert list(on_disk)[:2] == ["core.md", "faq.md"]  # order kept
    new = kdocs.update_metatag("faq.md", "tags", lambda old: (old or []) + ["extra"])
    assert new == ["help", "extra"]
    assert kdocs.metatag_query("tags", "EXTRA") == ["faq.md"]
    kdocs.set_metatag("notes/readme.txt", "tags", ["nested"])
    assert kdocs.metatags()["notes/readme.txt"] == {"tags": ["nested"]}
    kdocs.set_metatag("faq.md", "summary", None)
    assert kdocs.get_metatag("faq.md", "summary") is None
    assert not [p for p in os.listdir(kroot / "docs" / ".ladr" / "tmp")]


def test_set_metatag_refusals(kdocs):
    with pytest.raises(SlateError, match="no file"):
        kdocs.set_metatag("missing.md", "summary", "x")
    with pytest.raises(PathRefused):
        kdocs.set_metatag("../private/secret.md", "summary", "x")
    with pytest.raises(SlateError, match="system metatag"):
        kdocs.set_metatag("core.md", "size", 3)
    with pytest.raises(SlateError, match="not a JSON value"):
        kdocs.set_metatag("core.md", "summary", {1, 2})
    assert kdocs.get_metatag("core.md", "summary") == "the core"


def test_sidecar_changed_by_another_program_is_reread(kdocs, kroot):
    assert kdocs.get_metatag("core.md", "summary") == "the core"
    sidecar = kroot / "docs" / ".metatags.json"
    sidecar.write_text(json.dumps({"core.md": {"summary": "rewritten elsewhere"}}))
    st = os.stat(sidecar)
    os.utime(sidecar, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
    assert kdocs.get_metatag("core.md", "summary") == "rewritten elsewhere"


@pytest.mark.parametrize("content", ["{not json", "[1, 2]", '{"core.md": 3}'])
def test_corrupt_sidecar_names_the_file(kdocs, kroot, content):
    (kroot / "docs" / ".metatags.json").write_text(content)
    with pytest.raises(SlateError, match=r"\.metatags\.json"):
        kdocs.metatags()


def test_empty_sidecar_is_no_metatags(kdocs, kroot):
    (kroot / "docs" / ".metatags.json").write_text("")
    assert kdocs.metatags() == {}
    (kroot / "docs" / ".metatags.json").unlink()
    assert kdocs.metatag_query("tags") == []


def test_concurrent_metatag_updates_lose_nothing(kdocs):
    def worker(k: int) -> None:
        for i in range(25):
            kdocs.update_metatag("faq.md", "tags", lambda old, k=k, i=i: (old or []) + [f"{k}-{i}"])

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    tags = kdocs.get_metatag("faq.md", "tags")
    assert len(tags) == 1 + 6 * 25 and tags[0] == "help"
