"""The incremental index: each search reads only what was appended, and a changed file again from its start."""
from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

import ladr_lab.runfiles.index as index_mod
from ladr_lab.runfiles import Masker, RunFileRetriever
from tests.runfiles.helpers import rec

REQ = {"episode": 1, "conversation": "c", "top_k": 50}


def texts(result) -> list[str]:
    return sorted(p.text for p in result.pieces)


def base(path: Path) -> str:
    text = rec("18:00:00", "Alice", "has started episode 1.") + rec("18:00:01", "Alice", "kiwi first", "c")
    path.write_text(text)
    return text


def test_a_search_reads_only_what_was_appended(tmp_path: Path) -> None:
    h = tmp_path / "Alice.history"
    first = base(h)
    with RunFileRetriever(tmp_path, "Alice") as r:
        got = r.search("kiwi", **REQ)
        assert got.refresh.bytes_read == len(first) and texts(got) == ["kiwi first"]
        assert r.search("kiwi", **REQ).refresh.bytes_read == 0  # nothing new: nothing read
        more = rec("18:00:02", "Alice", "kiwi second", "c")
        with open(h, "a") as fh:
            fh.write(more)
        got = r.search("kiwi", **REQ)
        assert got.refresh.bytes_read == len(more) and got.refresh.reread == []
        assert texts(got) == ["kiwi first", "kiwi second"]
        assert [p.line for p in sorted(got.pieces, key=lambda p: p.line)] == [2, 3]


def test_a_file_that_shrank_is_read_again_from_its_start(tmp_path: Path) -> None:
    h = tmp_path / "Alice.history"
    base(h)
    with RunFileRetriever(tmp_path, "Alice") as r:
        r.search("kiwi", **REQ)
        short = rec("18:00:00", "Alice", "kiwi short")
        h.write_text(short)
        got = r.search("kiwi", **REQ)
        assert got.refresh.reread == ["Alice.history"] and got.refresh.bytes_read == len(short)
        assert texts(got) == ["kiwi short"]


def test_a_file_that_was_replaced_is_read_again_from_its_start(tmp_path: Path) -> None:
    h = tmp_path / "Alice.history"
    text = base(h)
    with RunFileRetriever(tmp_path, "Alice") as r:
        r.search("kiwi", **REQ)
        tmp = tmp_path / "new"
        # another inode, longer, and sharing the old content's first bytes
        tmp.write_text(text.replace("kiwi first", "kiwi fresh") + rec("18:00:05", "Alice", "kiwi more", "c"))
        keep = tmp_path / "keep"
        os.link(h, keep)  # hold the old inode so the new file cannot reuse its number
        os.replace(tmp, h)
        got = r.search("kiwi", **REQ)
        assert got.refresh.reread == ["Alice.history"]
        assert texts(got) == ["kiwi fresh", "kiwi more"]


def test_a_file_rewritten_in_place_is_read_again_from_its_start(tmp_path: Path) -> None:
    h = tmp_path / "Alice.history"
    text = base(h)
    with RunFileRetriever(tmp_path, "Alice") as r:
        r.search("kiwi", **REQ)
        st = os.stat(h)
        with open(h, "r+") as fh:  # same inode, same size, other bytes
            fh.write(text.replace("kiwi first", "kiwi frist"))
        os.utime(h, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))
        got = r.search("kiwi", **REQ)
        assert got.refresh.reread == ["Alice.history"] and texts(got) == ["kiwi frist"]
        # rewritten and grown: still from the start
        with open(h, "r+") as fh:
            fh.write(text.replace("kiwi first", "kiwi third") + rec("18:00:09", "Alice", "kiwi grown", "c"))
        got = r.search("kiwi", **REQ)
        assert got.refresh.reread == ["Alice.history"] and texts(got) == ["kiwi grown", "kiwi third"]


def test_a_same_size_rewrite_in_the_middle_with_its_mtime_put_back_is_read_again(tmp_path: Path) -> None:
    h = tmp_path / "Alice.history"
    pad = "".join(rec("18:00:02", "Alice", f"padding {i} " + "x" * 80, "c") for i in range(200))  # > 2 x 4 KiB
    text = rec("18:00:00", "Alice", "has started episode 1.") + pad + rec("18:00:03", "Alice", "kiwi mango", "c") \
        + pad
    h.write_text(text)
    db = tmp_path / "idx.sqlite"
    with RunFileRetriever(tmp_path, "Alice", index_path=db) as r:
        assert [p.text for p in r.search("kiwi", **REQ).pieces] == ["kiwi mango"]
    st = os.stat(h)
    time.sleep(0.05)  # past the file system's timestamp granularity
    middle = text.index("kiwi mango")
    assert 4096 < middle < len(text) - 4096  # neither in the first nor the last 4 KiB
    with open(h, "r+") as fh:
        fh.seek(middle)
        fh.write("kiwi melon")
    os.utime(h, ns=(st.st_atime_ns, st.st_mtime_ns))  # the mtime put back; the ctime moves all the same
    assert os.stat(h).st_size == st.st_size and os.stat(h).st_mtime_ns == st.st_mtime_ns
    with RunFileRetriever(tmp_path, "Alice", index_path=db) as r:  # a later process, as the search cache is
        got = r.search("kiwi", **REQ)
        assert got.refresh.reread == ["Alice.history"] and [p.text for p in got.pieces] == ["kiwi melon"]
        assert r.search("kiwi", **REQ).refresh.bytes_read == 0  # and nothing again once read


def test_a_removed_file_takes_its_records_along(tmp_path: Path) -> None:
    base(tmp_path / "Alice.history")
    with RunFileRetriever(tmp_path, "Alice") as r:
        assert r.search("kiwi", **REQ).pieces
        (tmp_path / "Alice.history").unlink()
        assert r.search("kiwi", **REQ).pieces == []


def test_a_line_still_being_written_is_read_again_whole(tmp_path: Path) -> None:
    h = tmp_path / "Alice.history"
    base(h)
    with RunFileRetriever(tmp_path, "Alice") as r:
        with open(h, "a") as fh:
            fh.write("2026-10-21 18:00:02 [running] [c] Alice the word is wat")
        assert texts(r.search("watermelon", **REQ)) == []
        with open(h, "a") as fh:
            fh.write("ermelon\n  and a second line\n")
        got = r.search("watermelon", **REQ)
        assert [(p.text, p.line, p.conversation) for p in got.pieces] == \
            [("the word is watermelon", 3, "c")]
        assert texts(r.search("second", **REQ)) == ["and a second line"]
        assert len(r.search("word", **REQ).pieces) == 1  # the part read first is gone


def test_a_record_continued_by_a_later_append_keeps_its_fields(tmp_path: Path) -> None:
    h = tmp_path / "Alice.history"
    base(h)
    with RunFileRetriever(tmp_path, "Alice") as r:
        with open(h, "a") as fh:
            fh.write(rec("18:00:02", "Alice", "kiwi head line", "conv-x"))
        r.search("kiwi", **REQ)
        with open(h, "a") as fh:
            fh.write("  kiwi continued later\n")
        got = r.search("continued", episode=1, conversation="conv-x")
        assert [(p.line, p.piece_line, p.conversation, p.episode) for p in got.pieces] == [(3, 4, "conv-x", 1)]


def test_a_record_across_a_block_boundary_is_masked_whole(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(index_mod, "BLOCK_BYTES", 64)
    key = "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\nSECRETBODY\n-----END PRIVATE KEY-----"
    (tmp_path / "Alice.history").write_text(rec("18:00:00", "Alice", "has started episode 1.")
                                            + rec("18:00:01", "Alice", "kiwi key:\n" + key, "c")
                                            + rec("18:00:02", "Alice", "kiwi after", "c"))
    with RunFileRetriever(tmp_path, "Alice", masker=Masker.hiding_outside(tmp_path)) as r:
        got = r.search("kiwi", **REQ)
        assert got.refresh.bytes_read == (tmp_path / "Alice.history").stat().st_size
        assert texts(got) == ["kiwi after", "kiwi key:"]
        assert texts(r.search("masked secret", **REQ)) == ["[masked secret]"]
        assert r.search("SECRETBODY", **REQ).pieces == []
        assert r.search("MIIEvQIBADANBgkqhkiG9w0BAQEFAASC", **REQ).pieces == []


def test_known_limit_a_record_read_in_parts_is_masked_in_parts(tmp_path: Path) -> None:
    h = tmp_path / "Alice.history"
    base(h)
    with RunFileRetriever(tmp_path, "Alice", masker=Masker.hiding_outside(tmp_path)) as r:
        with open(h, "a") as fh:
            fh.write(rec("18:00:02", "Alice", "kiwi key:\n-----BEGIN PRIVATE KEY-----\nPARTONE", "c"))
        r.search("kiwi", **REQ)  # the record is still being written: its first lines are read now
        with open(h, "a") as fh:
            fh.write("  PARTTWO\n")
        r.search("kiwi", **REQ)
        with open(h, "a") as fh:
            fh.write("  PARTTHREE\n  -----END PRIVATE KEY-----\n")
        assert r.search("PARTONE", **REQ).pieces == []  # masked with its BEGIN line
        assert r.search("PARTTHREE", **REQ).pieces == []  # masked with its END line
        # the middle part, read alone, has neither: it stays visible
        assert texts(r.search("PARTTWO", **REQ)) == ["PARTTWO"]


def test_nul_bytes_appended_into_the_first_8_kib_leave_the_file_out(tmp_path: Path) -> None:
    h = tmp_path / "Alice.history"
    base(h)
    with RunFileRetriever(tmp_path, "Alice") as r:
        assert r.search("kiwi", **REQ).pieces
        with open(h, "ab") as fh:
            fh.write(b"kiwi\x00\n")
        got = r.search("kiwi", **REQ)
        assert got.pieces == [] and got.warnings == ["Alice.history: left out: a NUL byte in its first 8 KiB"]


def test_episodes_move_when_a_marker_arrives_later_in_another_file(tmp_path: Path) -> None:
    (tmp_path / "Alice.log").write_text(rec("18:00:05", "Alice", "kiwi logged", "c", level="INFO"))
    (tmp_path / "Alice.history").write_text(rec("18:00:00", "Alice", "has started episode 1."))
    with RunFileRetriever(tmp_path, "Alice") as r:
        assert [p.episode for p in r.search("kiwi", **REQ).pieces] == [1]
        with open(tmp_path / "Alice.history", "a") as fh:
            fh.write(rec("18:00:03", "Alice", "has started episode 2."))
        assert [p.episode for p in r.search("kiwi", **REQ).pieces] == [2]
        (tmp_path / "Alice.history").write_text(rec("18:00:00", "Alice", "has started episode 7."))
        assert [p.episode for p in r.search("kiwi", **REQ).pieces] == [7]


def test_an_index_file_carries_over_between_retrievers(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    first = base(run / "Alice.history")
    db = tmp_path / "alice.sqlite"
    with RunFileRetriever(run, "Alice", index_path=db) as r:
        assert r.search("kiwi", **REQ).refresh.bytes_read == len(first)
    more = rec("18:00:02", "Alice", "kiwi second", "c")
    with open(run / "Alice.history", "a") as fh:
        fh.write(more)
    with RunFileRetriever(run, "Alice", index_path=db) as r:
        got = r.search("kiwi", **REQ)
        assert got.refresh.bytes_read == len(more) and texts(got) == ["kiwi first", "kiwi second"]
    # another masker: the index is built again
    with RunFileRetriever(run, "Alice", index_path=db, masker=Masker.credentials()) as r:
        assert r.search("kiwi", **REQ).refresh.bytes_read == len(first) + len(more)


@pytest.mark.parametrize("size", [1, 3])
def test_blocks_never_cut_a_line(tmp_path: Path, monkeypatch, size: int) -> None:
    monkeypatch.setattr(index_mod, "BLOCK_BYTES", size)
    (tmp_path / "Alice").mkdir()
    (tmp_path / "Alice" / "n.txt").write_text("kiwi  caf\u00e9 one\n\nkiwi two\n")
    with RunFileRetriever(tmp_path, "Alice") as r:
        got = r.search("kiwi", top_k=5)
    assert sorted((p.line, p.text) for p in got.pieces) == [(1, "kiwi  caf\u00e9 one"), (3, "kiwi two")]


def test_a_failed_refresh_leaves_the_index_as_it_was(tmp_path: Path, monkeypatch) -> None:
    base(tmp_path / "Alice.history")
    with RunFileRetriever(tmp_path, "Alice") as r:
        assert texts(r.search("kiwi", **REQ)) == ["kiwi first"]
        with open(tmp_path / "Alice.history", "a") as fh:
            fh.write(rec("18:00:02", "Alice", "kiwi second", "c"))

        def boom(*a, **k):
            raise OSError("disk gone")

        monkeypatch.setattr(r.index, "_recompute", boom)
        monkeypatch.setattr(r.index, "_scan_markers", boom)
        with pytest.raises(OSError):
            r.search("kiwi", **REQ)
        monkeypatch.undo()
        got = r.search("kiwi", **REQ)
        assert texts(got) == ["kiwi first", "kiwi second"] and got.refresh.bytes_read > 0


def _all(r: RunFileRetriever) -> set[tuple]:
    got = r.search("kiwi", episode=0, conversation="-", top_k=10_000)
    return {(p.line, p.piece_line, p.text, p.conversation, p.episode) for p in got.pieces}


try:
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st
except ImportError:  # pragma: no cover - hypothesis is a dev dependency
    given = None

if given is not None:
    @settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(st.lists(st.tuples(st.integers(0, 3), st.integers(1, 3), st.sampled_from(["-", "c1", "c2"])),
                    min_size=1, max_size=12),
           st.lists(st.floats(0, 1), max_size=6))
    def test_appending_in_any_pieces_indexes_what_one_read_does(tmp_path_factory, records, cuts) -> None:
        run = tmp_path_factory.mktemp("run")
        text = ""
        for i, (episode_mark, lines, conv) in enumerate(records):
            if episode_mark == 0:
                text += rec(f"18:00:{i:02d}", "Alice", f"has started episode {i}.")
            body = "\n".join(f"kiwi w{i}x{j}" for j in range(lines))
            text += rec(f"18:00:{i:02d}", "Alice", body, conv, level="INFO" if i % 2 else None)
        data = text.encode()
        points = sorted({int(c * len(data)) for c in cuts} | {len(data)})
        with RunFileRetriever(run, "Alice") as r:
            done = 0
            for p in points:
                with open(run / "Alice.history", "ab") as fh:
                    fh.write(data[done:p])
                done = p
                r.search("kiwi", episode=0, conversation="-")
            incremental = _all(r)
        fresh = tmp_path_factory.mktemp("fresh")
        (fresh / "Alice.history").write_bytes(data)
        with RunFileRetriever(fresh, "Alice") as r:
            assert incremental == _all(r)


def test_an_index_of_an_older_version_is_built_again(tmp_path: Path) -> None:
    import sqlite3

    base(tmp_path / "Alice.history")
    db = tmp_path / "idx.sqlite"
    with RunFileRetriever(tmp_path, "Alice", index_path=db) as r:
        r.search("kiwi", **REQ)
    con = sqlite3.connect(db)  # as an index of version 3 was: no ctime column, its version in meta
    con.execute("UPDATE meta SET v = '3' WHERE k = 'version'")
    con.execute("ALTER TABLE files DROP COLUMN ctime")
    con.commit()
    con.close()
    with RunFileRetriever(tmp_path, "Alice", index_path=db) as r:
        got = r.search("kiwi", **REQ)
        assert texts(got) == ["kiwi first"] and got.refresh.bytes_read > 0
        assert r.search("kiwi", **REQ).refresh.bytes_read == 0
