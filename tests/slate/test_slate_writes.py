"""Atomic, serialized writes: threads and processes appending to one file lose nothing."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

from ladr_lab.errors import PathRefused, SlateError
from ladr_lab.slate import FolderSpec, SlateStore
from ladr_lab.slate.cache import Tree


def make_folder(root: Path, name: str = "f"):
    return SlateStore().bind("S", root, [FolderSpec(name)]).folder(name)


def append(item: str):
    return lambda old: item if not old else old + "\n\n" + item


def test_write_text_creates_parents_and_overwrites(tmp_path):
    folder = make_folder(tmp_path)
    folder.write_text("a/b/c.md", "first")
    folder.write_text("a/b/c.md", "second")
    assert (tmp_path / "f" / "a" / "b" / "c.md").read_text() == "second"
    assert folder.read_text("a/b/c.md") == "second"


def test_update_text_sees_none_for_a_new_file(tmp_path):
    folder = make_folder(tmp_path)
    seen = []
    result = folder.update_text("log.md", lambda old: seen.append(old) or "one")
    assert seen == [None] and result == "one"
    assert folder.update_text("log.md", append("two")) == "one\n\ntwo"


def test_writes_refuse_unsafe_paths(kdocs, kroot, tmp_path):
    for rel in ("../private/x.md", "/tmp/x.md", ".hidden.md", "notes/.x", "a\x00b", "", "a\\b"):
        with pytest.raises(PathRefused):
            kdocs.write_text(rel, "nope")
    outside = tmp_path / "outside.md"
    outside.write_text("original")
    os.symlink(outside, kroot / "docs" / "out-link.md")
    os.symlink("core.md", kroot / "docs" / "in-link.md")
    os.symlink(kroot / "private", kroot / "docs" / "privdir")
    for rel in ("out-link.md", "in-link.md", "privdir/new.md", "privdir/secret.md"):
        with pytest.raises(PathRefused):
            kdocs.write_text(rel, "nope")
    assert outside.read_text() == "original"
    assert "SECRET-7731" in (kroot / "private" / "secret.md").read_text()
    assert not (kroot / "private" / "new.md").exists()
    with pytest.raises(SlateError):
        kdocs.write_text("notes", "a directory is not a file")
    with pytest.raises(SlateError):
        kdocs.write_text("core.md/inner.md", "a file is not a directory")


def test_non_string_contents_are_refused(tmp_path):
    folder = make_folder(tmp_path)
    with pytest.raises(SlateError):
        folder.update_text("x.md", lambda old: 42)  # type: ignore[arg-type, return-value]
    assert not folder.exists("x.md")


def test_failed_update_leaves_file_untouched(tmp_path):
    folder = make_folder(tmp_path)
    folder.write_text("x.md", "kept")

    def boom(old):
        raise RuntimeError("model exploded")

    with pytest.raises(RuntimeError):
        folder.update_text("x.md", boom)
    assert folder.read_text("x.md") == "kept"
    assert not list((tmp_path / "f" / ".ladr" / "tmp").iterdir())


def test_write_keeps_the_existing_file_mode(tmp_path):
    folder = make_folder(tmp_path)
    folder.write_text("x.md", "a")
    os.chmod(tmp_path / "f" / "x.md", 0o640)
    folder.write_text("x.md", "b")
    assert (os.stat(tmp_path / "f" / "x.md").st_mode & 0o777) == 0o640


def test_threads_appending_keep_every_item(tmp_path):
    folder = make_folder(tmp_path)

    def worker(k: int) -> None:
        for i in range(50):
            folder.update_text("shared.md", append(f"item-{k}-{i}"))

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    items = folder.read_text("shared.md").split("\n\n")
    assert len(items) == 400
    assert set(items) == {f"item-{k}-{i}" for k in range(8) for i in range(50)}
    assert {"name": "shared.md", "size": len(folder.read_text("shared.md").encode())} in folder.index()


def test_threads_writing_different_files_keep_cache_exact(tmp_path):
    folder = make_folder(tmp_path)
    folder.index()

    def worker(k: int) -> None:
        for i in range(20):
            folder.write_text(f"d{k % 3}/f{k}-{i}.md", "x" * (i + 1))

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    fresh = make_folder(tmp_path)
    assert folder.tree() == fresh.tree()
    assert folder.files() == fresh.files() and len(fresh.files()) == 120


WORKER = textwrap.dedent(
    """
    import sys
    from ladr_lab.slate import FolderSpec, SlateStore
    root, k, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    folder = SlateStore().bind("S", root, [FolderSpec("f")]).folder("f")
    for i in range(n):
        folder.update_text("shared.md", lambda old, i=i: (old + "\\n\\n" if old else "") + f"p{k}-{i}")
        folder.update_metatag("shared.md", "count", lambda old: (old or 0) + 1)
    """
)


def test_processes_appending_keep_every_item(tmp_path):
    folder = make_folder(tmp_path)
    folder.write_text("shared.md", "")
    env = dict(os.environ)
    repo = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = repo + os.pathsep + env.get("PYTHONPATH", "")
    procs = [
        subprocess.Popen([sys.executable, "-c", WORKER, str(tmp_path), str(k), "40"], env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        for k in range(4)
    ]
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err.decode()
    items = folder.read_text("shared.md").split("\n\n")
    assert sorted(items) == sorted(f"p{k}-{i}" for k in range(4) for i in range(40))
    assert folder.get_metatag("shared.md", "count") == 160
    # the other processes' writes moved the directory's mtime, so this process's cache sees them
    assert {"name": "shared.md", "size": (tmp_path / "f" / "shared.md").stat().st_size} in folder.index()


def test_own_writes_do_not_trigger_rescans(tmp_path, monkeypatch):
    folder = make_folder(tmp_path)
    for i in range(50):
        folder.write_text(f"n{i}.md", "x")
    folder.write_text("sub/a.md", "x")
    folder.index()
    folder.files()
    if not folder.watched:
        pytest.skip("no file-system notifications here: every read re-stats by design")
    calls = []
    real = Tree._read_level

    def counting(self, node):
        calls.append(node.path)
        return real(self, node)

    monkeypatch.setattr(Tree, "_read_level", counting)
    folder.write_text("n7.md", "longer text")
    folder.write_text("n99.md", "new")
    folder.write_text("sub/b.md", "new")
    folder.write_text("sub/deeper/c.md", "new")
    folder.set_metatag("n7.md", "tags", ["t"])
    index = folder.index()
    assert {"name": "n7.md", "size": 11} in index and {"name": "n99.md", "size": 3} in index
    assert {"name": "sub/", "size": 7, "files": 3} in index
    assert "sub/deeper/c.md" in folder.files()
    assert folder.glob("sub/**") == ["sub/a.md", "sub/b.md", "sub/deeper/c.md"]
    # Only the directory the store created is listed (once, when it is first watched): the
    # directories that were already cached are patched, never listed again.
    assert calls == [str(tmp_path / "f" / "sub" / "deeper")]


def test_folder_created_on_first_write_in_missing_slate_root(tmp_path):
    root = tmp_path / "not" / "yet"
    folder = make_folder(root, "docs")
    assert folder.files() == []
    folder.write_text("x.md", "hi")
    assert (root / "docs" / "x.md").read_text() == "hi"
    assert folder.files() == ["x.md"]


def test_update_function_may_write_another_file(tmp_path):
    folder = make_folder(tmp_path)

    def fn(old):
        for i in range(70):  # 70 files cover every lock stripe, including this file's own
            folder.write_text(f"side/{i}.md", "s")
        return "main"

    assert folder.update_text("main.md", fn) == "main"
    assert len(folder.glob("side/*.md")) == 70


def test_subdirectory_swapped_for_a_link_disappears_from_listings(kdocs, kroot, tmp_path):
    assert "notes/calculus.md" in kdocs.files()
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "leak.md").write_text("outside")
    notes = kroot / "docs" / "notes"
    for p in notes.iterdir():
        p.unlink()
    notes.rmdir()
    os.symlink(outside, notes)
    files = kdocs.files()
    assert not [f for f in files if f.startswith("notes")]
    assert kdocs.glob("**/leak.md") == []
    assert kdocs.read_text("notes/leak.md") is None
