"""A held store never shows a stale listing: edits made by other programs show in the next read.

Every test that does not depend on notifications runs twice: with inotify watches (the default)
and with the re-stat fallback (`SlateStore(watch=False)`), which must give the same answers.
"""
from __future__ import annotations

import gc
import os
import shutil
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import pytest

from ladr_lab.slate import FolderSpec, SlateStore
from ladr_lab.slate.metatags import iso_utc
from ladr_lab.slate.watch import QUEUE_CAP, get_hub

HUB = get_hub()
needs_inotify = pytest.mark.skipif(not HUB.available, reason="no inotify here (not Linux, or disabled)")


def make_tree(root: Path) -> Path:
    docs = root / "docs"
    (docs / "notes" / "deep").mkdir(parents=True)
    (docs / "a.md").write_text("alpha")
    (docs / "b.md").write_text("bravo!")
    (docs / "notes" / "n.md").write_text("note")
    (docs / "notes" / "deep" / "d.md").write_text("deep")
    return docs


@pytest.fixture(params=[True, False], ids=["watch", "restat"])
def held(request, tmp_path):
    """(folder, docs directory) of a store that has already listed everything, as a kernel holds one."""
    docs = make_tree(tmp_path / "K")
    store = SlateStore(watch=request.param)
    folder = store.bind("K", tmp_path / "K", [FolderSpec("docs")]).folder("docs")
    folder.tree()
    folder.files()
    folder.file_stats()
    yield folder, docs
    store.close()


def snapshot(folder):
    return (folder.index(), folder.tree(), folder.files(), folder.file_stats(),
            folder.metatag_values("size"), folder.glob("**"))


def fresh_view(folder):
    """The same folder seen by a brand-new store: what any read must agree with."""
    return SlateStore(watch=False).bind("X", folder.path.parent, [FolderSpec(folder.name)]).folder(folder.name)


def keep_dir_mtime(path: Path):
    """Put a directory's mtime back, so only a notification or a re-stat can reveal the change."""
    st = os.stat(path)
    return lambda: os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))


def test_in_place_edit_shows_in_the_next_read(held):
    folder, docs = held
    assert {"name": "a.md", "size": 5} in folder.index()
    restore = keep_dir_mtime(docs)
    with open(docs / "a.md", "r+") as fh:  # in place: same inode, the directory untouched
        fh.seek(0, os.SEEK_END)
        fh.write(" and more")
    restore()
    assert {"name": "a.md", "size": 14} in folder.index()
    assert folder.get_metatag("a.md", "size") == 14
    assert {"name": "a.md", "size": 14} in folder.tree()
    assert {"file": "a.md", "value": 14} in folder.metatag_values("size")
    mtime = os.stat(docs / "a.md").st_mtime_ns
    assert ("a.md", 14, mtime) in folder.file_stats()
    assert {"file": "a.md", "value": iso_utc(mtime)} in folder.metatag_values("modified")
    assert snapshot(folder) == snapshot(fresh_view(folder))


def test_edit_by_another_process_shows_in_the_next_read(held):
    folder, docs = held
    script = textwrap.dedent(f"""
        import os
        with open({str(docs / "notes" / "deep" / "d.md")!r}, "r+b") as fh:
            fh.seek(0, os.SEEK_END)
            fh.write(b"x" * 1000)
        os.truncate({str(docs / "b.md")!r}, 2)
    """)
    subprocess.run([sys.executable, "-c", script], check=True)
    index = folder.index()
    assert {"name": "b.md", "size": 2} in index
    assert {"name": "notes/", "size": 4 + 1004, "files": 2} in index
    notes = next(e for e in folder.tree() if e["name"] == "notes/")
    deep = next(e for e in notes["children"] if e["name"] == "deep/")
    assert deep["children"] == [{"name": "d.md", "size": 1004}]
    assert folder.get_metatag("notes/deep/d.md", "size") == 1004
    assert snapshot(folder) == snapshot(fresh_view(folder))


@pytest.mark.parametrize("change", ["append", "truncate", "delete", "create_in_subfolder", "rename_file",
                                    "move_across", "rename_dir", "new_subtree", "remove_subtree",
                                    "dir_becomes_file", "utime", "replace_dir"])
def test_every_kind_of_outside_change(held, change):
    folder, docs = held
    if change == "append":
        with open(docs / "notes" / "n.md", "a") as fh:
            fh.write("++")
    elif change == "truncate":
        os.truncate(docs / "a.md", 0)
    elif change == "delete":
        os.remove(docs / "notes" / "deep" / "d.md")
    elif change == "create_in_subfolder":
        (docs / "notes" / "deep" / "e.md").write_text("echo")
    elif change == "rename_file":
        os.rename(docs / "a.md", docs / "z.md")
    elif change == "move_across":
        os.rename(docs / "b.md", docs / "notes" / "deep" / "b.md")
    elif change == "rename_dir":
        os.rename(docs / "notes", docs / "renamed")
        (docs / "renamed" / "deep" / "after.md").write_text("written after the rename")
    elif change == "new_subtree":
        (docs / "fresh" / "x" / "y").mkdir(parents=True)
        (docs / "fresh" / "x" / "y" / "f.md").write_text("f")
        (docs / "fresh" / "top.md").write_text("top")
    elif change == "remove_subtree":
        shutil.rmtree(docs / "notes")
    elif change == "dir_becomes_file":
        shutil.rmtree(docs / "notes" / "deep")
        (docs / "notes" / "deep").write_text("now a file")
    elif change == "utime":
        os.utime(docs / "a.md", ns=(1_000_000_000, 1_000_000_000))
    elif change == "replace_dir":
        shutil.rmtree(docs / "notes")
        (docs / "notes").mkdir()
        (docs / "notes" / "other.md").write_text("a different directory of the same name")
    assert snapshot(folder) == snapshot(fresh_view(folder))
    # and a second read, with nothing new, agrees too
    assert snapshot(folder) == snapshot(fresh_view(folder))


def test_folder_deleted_and_recreated(held):
    folder, docs = held
    shutil.rmtree(docs)
    assert folder.index() == [] and folder.files() == [] and folder.file_stats() == []
    docs.mkdir()
    (docs / "again.md").write_text("again")
    assert folder.index() == [{"name": "again.md", "size": 5}]


def test_linked_file_follows_its_target(held):
    folder, docs = held
    os.symlink("a.md", docs / "alias.md")
    assert {"name": "alias.md", "size": 5} in folder.index()
    with open(docs / "a.md", "a") as fh:
        fh.write("12345")
    assert {"name": "alias.md", "size": 10} in folder.index()
    os.remove(docs / "a.md")
    assert "alias.md" not in folder.files()


def test_own_writes_and_outside_edits_interleave(held):
    folder, docs = held
    for i in range(20):
        folder.write_text(f"notes/w{i}.md", "w" * i)
        with open(docs / "a.md", "a") as fh:
            fh.write("!")
        if i % 5 == 0:
            (docs / "notes" / f"ext{i}.md").write_text("outside")
        assert folder.get_metatag("a.md", "size") == 6 + i
        assert {"name": "a.md", "size": 6 + i} in folder.index()
    assert snapshot(folder) == snapshot(fresh_view(folder))


def test_file_stats(held):
    folder, docs = held
    stats = folder.file_stats()
    assert [s[0] for s in stats] == sorted(s[0] for s in stats) == folder.files()
    for rel, size, mtime_ns in stats:
        st = os.stat(docs / rel)
        assert (size, mtime_ns) == (st.st_size, st.st_mtime_ns)
    with open(docs / "notes" / "n.md", "a") as fh:
        fh.write("longer")
    st = os.stat(docs / "notes" / "n.md")
    assert ("notes/n.md", st.st_size, st.st_mtime_ns) in folder.file_stats()


def test_metatag_queries_see_new_files(held):
    folder, docs = held
    folder.set_metatag("a.md", "tags", ["x"])
    os.remove(docs / "a.md")
    assert folder.metatags() == {} and folder.metatag_query("tags") == []
    (docs / "a.md").write_text("back")
    assert folder.metatag_query("tags") == ["a.md"]


def test_many_folders_in_one_store(tmp_path):
    names = [f"f{i:02d}" for i in range(40)]
    for n in names:
        (tmp_path / "S" / n / "sub").mkdir(parents=True)
        (tmp_path / "S" / n / "sub" / "x.md").write_text("x")
    fds_before = len(os.listdir("/proc/self/fd")) if os.path.isdir("/proc/self/fd") else None
    with SlateStore() as store:
        slate = store.bind("S", tmp_path / "S", [FolderSpec(n) for n in names])
        folders = [slate.folder(n) for n in names]
        for f in folders:
            assert f.index() == [{"name": "sub/", "size": 1, "files": 1}]
        for i, n in enumerate(names):
            with open(tmp_path / "S" / n / "sub" / "x.md", "a") as fh:
                fh.write("y" * i)
        for i, f in enumerate(folders):
            assert f.index() == [{"name": "sub/", "size": 1 + i, "files": 1}]
        if fds_before is not None and HUB.available:
            # one notification descriptor for the whole process, however many folders
            assert len(os.listdir("/proc/self/fd")) <= fds_before + 1


# --- notifications specifically ----------------------------------------------------------------

def _watched(tmp_path, name="K"):
    docs = make_tree(tmp_path / name)
    store = SlateStore()
    folder = store.bind(name, tmp_path / name, [FolderSpec("docs")]).folder("docs")
    folder.files()
    return store, folder, docs


@needs_inotify
def test_watches_are_released_on_close_and_garbage_collection(tmp_path):
    gc.collect()  # folders of earlier tests let go of their watches first
    base = HUB.watch_count()
    store, folder, _ = _watched(tmp_path)
    assert folder.watched and HUB.watch_count() == base + 3  # docs, notes, notes/deep
    folder.close()
    assert HUB.watch_count() == base
    assert "a.md" in folder.files()  # a closed folder still works: it watches again
    assert HUB.watch_count() == base + 3
    store.close()
    assert HUB.watch_count() == base
    folder.files()
    del store, folder
    gc.collect()
    assert HUB.watch_count() == base


@needs_inotify
def test_runs_binding_the_same_directory_do_not_leak(tmp_path):
    from ladr_lab.config import load_ladder_text
    from ladr_lab.engine import Run
    from ladr_lab.models import ScriptedModel

    make_tree(tmp_path / "K")
    ladder = load_ladder_text(textwrap.dedent("""
        name: leak-check
        slates:
          - title: K
            folders: [{ name: docs }]
        steps:
          - id: look
            fields:
              - { name: FileIndex, type: slateRead, from: { slate: K, folder: docs, metatag: index } }
            systemPrompt: Summarise.
    """))

    def one_run(store=None):
        run = Run(ladder, model=ScriptedModel(lambda messages, **hints: "ok"), slates={"K": tmp_path / "K"},
                  store=store)
        assert run.run().status == "completed"
        return run

    one_run()
    gc.collect()
    base_watches = HUB.watch_count()
    base_fds = len(os.listdir("/proc/self/fd"))
    for _ in range(25):
        one_run()
    gc.collect()
    assert HUB.watch_count() == base_watches
    assert len(os.listdir("/proc/self/fd")) <= base_fds
    # a store shared between runs that bind the same directory keeps its slate (and warm cache)
    store = SlateStore()
    first = one_run(store).store.slate("K")
    for _ in range(5):
        assert one_run(store).store.slate("K") is first
    assert HUB.watch_count() == base_watches + 3


@needs_inotify
def test_two_stores_on_one_directory_share_the_kernel_watch(tmp_path):
    gc.collect()  # folders of earlier tests let go of their watches first
    base = HUB.watch_count()
    store1, f1, docs = _watched(tmp_path)
    store2 = SlateStore()
    f2 = store2.bind("K", tmp_path / "K", [FolderSpec("docs")]).folder("docs")
    f2.files()
    assert HUB.watch_count() == base + 3
    store1.close()
    with open(docs / "a.md", "a") as fh:
        fh.write("!!")
    assert {"name": "a.md", "size": 7} in f2.index()
    store2.close()
    assert HUB.watch_count() == base


@needs_inotify
def test_subscription_queue_overflow_rescans(tmp_path):
    store, folder, docs = _watched(tmp_path)
    # More events than a subscription keeps: alternating writes are not coalesced by the kernel.
    with open(docs / "a.md", "a") as fa, open(docs / "b.md", "a") as fb:
        for _ in range(QUEUE_CAP // 2 + 100):
            fa.write("a")
            fa.flush()
            fb.write("b")
            fb.flush()
    (docs / "notes" / "late.md").write_text("late")
    os.remove(docs / "notes" / "deep" / "d.md")
    assert snapshot(folder) == snapshot(fresh_view(folder))
    assert folder.watched
    store.close()


@needs_inotify
def test_kernel_queue_overflow_rescans(tmp_path):
    try:
        limit = int(Path("/proc/sys/fs/inotify/max_queued_events").read_text())
    except OSError:
        pytest.skip("kernel queue size unknown")
    if limit > 100_000:
        pytest.skip("kernel queue too large to overflow quickly")
    store, folder, docs = _watched(tmp_path)
    with open(docs / "a.md", "a") as fa, open(docs / "b.md", "a") as fb:
        for _ in range(limit // 2 + 200):
            fa.write("a")
            fa.flush()
            fb.write("b")
            fb.flush()
    (docs / "notes" / "after-overflow.md").write_text("x")
    assert snapshot(folder) == snapshot(fresh_view(folder))
    assert folder.watched
    store.close()


@needs_inotify
def test_forked_child_does_not_steal_the_parents_events(tmp_path):
    store, folder, docs = _watched(tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # Python 3.12 warns about fork with threads
        pid = os.fork()
    if pid == 0:  # child: its own instance; reading must not consume the parent's events
        code = 1
        try:
            with open(docs / "a.md", "a") as fh:
                fh.write("child")
            code = 0 if {"name": "a.md", "size": 10} in folder.index() else 2
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert {"name": "a.md", "size": 10} in folder.index()
    with open(docs / "b.md", "a") as fh:
        fh.write("parent")
    assert {"name": "b.md", "size": 12} in folder.index()
    store.close()


def test_environment_switch_turns_notifications_off(tmp_path):
    code = textwrap.dedent(f"""
        from ladr_lab.slate import SlateStore, FolderSpec
        from ladr_lab.slate.watch import get_hub
        f = SlateStore().bind("K", {str(tmp_path / "K")!r}, [FolderSpec("docs")]).folder("docs")
        f.index()
        print(get_hub().available, f.watched, get_hub().watch_count())
    """)
    make_tree(tmp_path / "K")
    env = dict(os.environ, LADR_SLATE_WATCH="0")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False", "0"]


def test_change_token_moves_with_every_edit_and_only_then(tmp_path):
    import os
    import shutil

    from ladr_lab.slate import SlateStore

    (tmp_path / "S" / "notes").mkdir(parents=True)
    path = tmp_path / "S" / "notes" / "a.md"
    path.write_text("one", encoding="utf-8")
    store = SlateStore()
    store.bind("S", tmp_path / "S")
    folder = store.slate("S").folder("notes")
    token = folder.change_token()
    assert folder.change_token() == token                 # nothing changed: the same token
    before = os.stat(path)
    with open(path, "w", encoding="utf-8") as fh:          # same size, mtime put back: ctime moves
        fh.write("two")
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert folder.change_token() != token
    assert [s[0] for s in folder.file_signatures()] == ["a.md"]
    token = folder.change_token()
    (tmp_path / "S" / "notes" / ".metatags.json").write_text('{"a.md": {"k": 1}}', encoding="utf-8")
    assert folder.change_token() != token
    shutil.rmtree(tmp_path / "S" / "notes")
    gone = folder.change_token()
    assert folder.change_token() == gone                  # a missing folder stays one state
