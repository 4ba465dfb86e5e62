"""`ladr_lab.watch(path)`: a ladder file reloaded when its text changes; a broken edit keeps the good ladder and
says why; `check()` sees a change at once (no sleeping); the thread notices one by itself."""
from __future__ import annotations

import os
import threading

import pytest

import ladr_lab
from ladr_lab.errors import ConfigErrors

GOOD = "name: {name}\nsteps:\n  - id: a\n"


@pytest.fixture
def path(tmp_path):
    p = tmp_path / "ladder.yaml"
    p.write_text(GOOD.format(name="first"))
    return p


def _save_by_rename(path, text):
    tmp = path.with_suffix(".new")
    tmp.write_text(text)
    os.replace(tmp, path)


def test_check_reloads_a_changed_file_and_calls_changed(path):
    w = ladr_lab.watch(path, interval=3600)         # the thread will not look again during the test
    seen = []
    w.changed.append(lambda x: seen.append(x.ladder.name))
    assert w.ladder.name == "first" and w.problems == [] and not w.check()
    _save_by_rename(path, GOOD.format(name="second"))
    assert w.check() and w.ladder.name == "second" and seen == ["second"] and w.reloads == 1
    path.write_text(GOOD.format(name="third"))      # an in-place save
    os.utime(path, ns=(1, 1))                       # even one that keeps an old mtime: size or inode tell
    assert w.check() and w.ladder.name == "third"
    w.close()
    assert not w.watching


def test_a_touch_that_keeps_the_text_is_not_a_reload(path):
    w = ladr_lab.watch(path, interval=3600)
    os.utime(path, ns=(10**18, 10**18))
    assert not w.check() and w.reloads == 0
    w.close()


def test_a_broken_edit_keeps_the_good_ladder_and_shows_the_problems(path):
    with ladr_lab.watch(path, interval=3600) as w:
        path.write_text("name: broken\nsteps:\n  - id: a\n    tpye: normal\n")
        assert w.check()
        assert w.ladder.name == "first" and w.problems and w.problems[0].line == 4
        assert "not reloaded" in w.to_html() and "tpye" in w.to_html() and "error" in repr(w)
        path.write_text(GOOD.format(name="fixed"))
        assert w.check() and w.ladder.name == "fixed" and w.problems == []


def test_a_callback_that_raises_does_not_stop_the_watch(path):
    with ladr_lab.watch(path, interval=3600) as w:
        w.changed.append(lambda _w: 1 / 0)
        path.write_text(GOOD.format(name="again"))
        assert w.check() and isinstance(w.errors[0], ZeroDivisionError) and w.ladder.name == "again"


def test_a_file_that_is_invalid_from_the_start_is_an_error(tmp_path):
    p = tmp_path / "bad.yaml"
    p.write_text("name: x\nsteps: 3\n")
    with pytest.raises(ConfigErrors):
        ladr_lab.watch(p)


@pytest.mark.parametrize("backend", ["poll", "watchfiles"])
def test_the_thread_notices_a_change_by_itself(path, backend):
    if backend == "watchfiles":
        pytest.importorskip("watchfiles")
    done = threading.Event()
    with ladr_lab.watch(path, interval=0.05, backend=backend) as w:
        w.changed.append(lambda _w: done.set())
        assert w.watching
        import time
        time.sleep(0.3 if backend == "watchfiles" else 0)   # watchfiles' thread must have started watching
        _save_by_rename(path, GOOD.format(name="by-thread"))
        assert done.wait(10), "the watcher did not notice the change"
        assert w.ladder.name == "by-thread"
    assert not w.watching


def test_an_unknown_backend_is_refused(path):
    with pytest.raises(ValueError, match="backend"):
        ladr_lab.watch(path, backend="magic")
