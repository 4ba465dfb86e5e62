"""Bounded reads: `Folder.read_excerpt` reads only as far as it needs and never cuts a character."""
from __future__ import annotations

import os
import tracemalloc
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ladr_lab.errors import SlateError
from ladr_lab.slate import Excerpt, FolderSpec, SlateStore

MB = 1024 * 1024


@pytest.fixture
def folder(tmp_path):
    (tmp_path / "S" / "f").mkdir(parents=True)
    return SlateStore().bind("S", tmp_path / "S", [FolderSpec("f")]).folder("f")


def put(folder, rel: str, data: bytes) -> Path:
    path = folder.path / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def test_whole_and_cut(folder):
    put(folder, "a.md", b"hello world")
    assert folder.read_excerpt("a.md", 100) == Excerpt("hello world", 11, False)
    assert folder.read_excerpt("a.md", 11) == Excerpt("hello world", 11, False)
    assert folder.read_excerpt("a.md", 5) == Excerpt("hello", 11, True)
    assert folder.read_excerpt("a.md", 0) == Excerpt("", 11, True)
    put(folder, "empty.md", b"")
    assert folder.read_excerpt("empty.md", 0) == Excerpt("", 0, False)
    assert folder.read_excerpt("empty.md", 10) == Excerpt("", 0, False)


def test_never_splits_a_character_at_the_cut(folder):
    text = "€uro 😀 naïve ß"
    put(folder, "u.md", text.encode())
    for n in range(len(text) + 2):
        ex = folder.read_excerpt("u.md", n)
        assert ex.text == text[:n]
        assert "\ufffd" not in ex.text
        assert ex.truncated == (n < len(text))
        assert ex.total_bytes == len(text.encode())


def test_undecodable_bytes_are_replaced_like_read_text(folder):
    data = b"ab\xffcd\xe2\x82"  # a stray byte inside, an incomplete character at the very end
    put(folder, "bad.md", data)
    whole = folder.read_text("bad.md")
    assert whole == data.decode("utf-8", errors="replace")
    for n in range(len(whole) + 2):
        ex = folder.read_excerpt("bad.md", n)
        assert ex.text == whole[:n] and ex.truncated == (n < len(whole))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.one_of(st.text(max_size=300).map(str.encode), st.binary(max_size=300)),
       max_chars=st.integers(min_value=0, max_value=320))
def test_excerpt_is_a_prefix_of_the_decoded_file(folder, data, max_chars):
    put(folder, "p.md", data)
    whole = data.decode("utf-8", errors="replace")
    ex = folder.read_excerpt("p.md", max_chars)
    assert ex.text == whole[:max_chars]
    assert ex.truncated == (len(whole) > max_chars)
    assert ex.total_bytes == len(data)


def test_a_200_mb_file_costs_a_bounded_read(folder, monkeypatch):
    path = folder.path / "huge.md"
    with open(path, "wb") as fh:
        fh.write("é".encode() * 1000)
        fh.truncate(200 * MB)  # sparse: 200 MB on paper, nothing on disk
    real_read = os.read
    got: list[int] = []

    def counting_read(fd, n):
        data = real_read(fd, n)
        got.append(len(data))
        return data

    monkeypatch.setattr(os, "read", counting_read)
    tracemalloc.start()
    try:
        ex = folder.read_excerpt("huge.md", 10_000)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    monkeypatch.undo()
    assert ex.total_bytes == 200 * MB and ex.truncated
    assert ex.text == "é" * 1000 + "\x00" * 9000
    assert sum(got) <= 4 * 10_000 + 4
    assert peak < 1 * MB


def test_bytes_read_by_the_process_stay_bounded(folder):
    io = Path("/proc/self/io")
    if not io.exists():
        pytest.skip("no /proc/self/io here")

    def rchar() -> int:
        return int(next(line for line in io.read_text().splitlines() if line.startswith("rchar")).split()[1])

    path = folder.path / "big.txt"
    with open(path, "wb") as fh:
        fh.truncate(300 * MB)
    before = rchar()
    ex = folder.read_excerpt("big.txt", 50_000)
    after = rchar()
    assert ex.truncated and len(ex.text) == 50_000
    assert after - before < 1 * MB  # the counter includes reading /proc/self/io itself


def test_same_safety_rules_as_read_text(folder, tmp_path):
    put(folder, "ok.md", b"ok")
    (tmp_path / "outside.md").write_text("OUTSIDE")
    os.symlink(tmp_path / "outside.md", folder.path / "leak.md")
    os.symlink("ok.md", folder.path / "alias.md")
    put(folder, ".hidden.md", b"hidden")
    (folder.path / "dir").mkdir()
    if hasattr(os, "mkfifo"):
        os.mkfifo(folder.path / "pipe.md")
        assert folder.read_excerpt("pipe.md", 10) is None  # and it did not hang
    for rel in ("leak.md", ".hidden.md", "../S/f/ok.md", "/etc/passwd", "dir", "missing.md", "a\x00b"):
        assert folder.read_excerpt(rel, 10) is None
        assert folder.read_text(rel) is None
    assert folder.read_excerpt("alias.md", 10) == Excerpt("ok", 2, False)
    assert folder.read_excerpt("./ok.md/", 10) == Excerpt("ok", 2, False)
    assert folder.read_excerpt(Path("ok.md"), 1) == Excerpt("o", 2, True)


@pytest.mark.parametrize("bad", [-1, 1.5, "10", True, None])
def test_max_chars_must_be_a_non_negative_int(folder, bad):
    put(folder, "a.md", b"a")
    with pytest.raises(SlateError):
        folder.read_excerpt("a.md", bad)  # type: ignore[arg-type]


def test_read_text_still_reads_everything(folder):
    put(folder, "long.md", b"x" * 300_000)
    assert folder.read_text("long.md") == "x" * 300_000
