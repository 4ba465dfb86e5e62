"""The run-file index cache stays bounded: stale indexes go, then the least recently used, never the one in use."""
from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from ladr_lab.runfiles import prune_cache
from ladr_lab.runfiles.cache import GRACE_SECONDS, MAX_AGE_ENV, MAX_BYTES_ENV
from tests.runfiles.test_search_cli import _search, cached_run, cli

DAY = 86400.0


def _index(folder: Path, name: str, size: int, age_s: float, now: float, *, journal: int = 0) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.sqlite"
    path.write_bytes(b"x" * size)
    os.utime(path, (now - age_s, now - age_s))
    if journal:
        (folder / f"{name}.sqlite-journal").write_bytes(b"j" * journal)
    return path


def test_an_index_unused_past_the_age_bound_goes_with_its_side_files(tmp_path: Path) -> None:
    now = time.time()
    old = _index(tmp_path, "old", 10, 31 * DAY, now, journal=5)
    recent = _index(tmp_path, "recent", 10, 29 * DAY, now)
    got = prune_cache(folder=tmp_path, max_bytes=1 << 30, max_age_days=30, now=now)
    assert got.removed == ("old.sqlite",) and got.freed == 15
    assert not old.exists() and not (tmp_path / "old.sqlite-journal").exists() and recent.exists()


def test_over_budget_the_least_recently_used_go_first_until_it_fits(tmp_path: Path) -> None:
    now = time.time()
    a = _index(tmp_path, "a", 100, 5 * DAY, now)   # oldest
    b = _index(tmp_path, "b", 100, 4 * DAY, now)
    c = _index(tmp_path, "c", 100, 3 * DAY, now)
    d = _index(tmp_path, "d", 100, 2 * DAY, now)
    got = prune_cache(folder=tmp_path, max_bytes=250, max_age_days=30, now=now)
    assert got.removed == ("a.sqlite", "b.sqlite") and got.freed == 200
    assert [p.exists() for p in (a, b, c, d)] == [False, False, True, True]


def test_the_index_in_use_and_any_used_within_the_grace_period_stay_even_over_budget(tmp_path: Path) -> None:
    now = time.time()
    mine = _index(tmp_path, "mine", 500, 60 * DAY, now)            # the oldest and stale, but just used
    beside = _index(tmp_path, "beside", 500, GRACE_SECONDS / 2, now)  # a search running beside this one
    other = _index(tmp_path, "other", 500, 2 * DAY, now)
    got = prune_cache(mine, folder=tmp_path, max_bytes=100, max_age_days=30, now=now)
    assert got.removed == ("other.sqlite",)
    assert mine.exists() and beside.exists() and not other.exists()
    assert abs(mine.stat().st_mtime - now) < 1   # marked as just used
    assert prune_cache(folder=tmp_path / "absent").removed == ()
    (tmp_path / "notes.txt").write_text("not an index")
    os.utime(tmp_path / "notes.txt", (now - 90 * DAY, now - 90 * DAY))
    prune_cache(folder=tmp_path, max_bytes=0, max_age_days=0, now=now)
    assert (tmp_path / "notes.txt").exists()   # only index files are ever removed


def test_the_bounds_come_from_the_environment_and_a_bad_one_is_named(tmp_path: Path, monkeypatch) -> None:
    now = time.time()
    _index(tmp_path, "a", 100, 2 * DAY, now)
    monkeypatch.setenv(MAX_AGE_ENV, "1")
    assert prune_cache(folder=tmp_path, now=now).removed == ("a.sqlite",)
    _index(tmp_path, "b", 100, 2 * DAY, now)
    monkeypatch.setenv(MAX_AGE_ENV, "30")
    monkeypatch.setenv(MAX_BYTES_ENV, "50")
    assert prune_cache(folder=tmp_path, now=now).removed == ("b.sqlite",)
    for bad in ("lots", "-1", "nan"):
        monkeypatch.setenv(MAX_BYTES_ENV, bad)
        with pytest.raises(ValueError, match=MAX_BYTES_ENV):
            prune_cache(folder=tmp_path, now=now)


def test_a_cached_search_prunes_stale_indexes_and_keeps_its_own(tmp_path: Path, monkeypatch) -> None:
    cache, run = cached_run(tmp_path, monkeypatch)
    first = _search(run)
    (mine,) = (cache / "runfiles").glob("*.sqlite")
    now = time.time()
    stale = _index(cache / "runfiles", "gone.Alice.0123", 1000, 40 * DAY, now)
    os.utime(mine, (now - 40 * DAY, now - 40 * DAY))   # only read since: its mtime is not its last use
    second = _search(run)
    assert "cache: removed 1 unused index file(s), 1000 bytes" in second.stderr
    assert not stale.exists() and mine.exists() and second.stdout == first.stdout
    assert abs(mine.stat().st_mtime - time.time()) < 60
    monkeypatch.setenv(MAX_BYTES_ENV, "lots")
    p = cli("search", str(run), "ACME", "--owner", "Alice", "--episode", "1", "--conversation", "c1", "--json")
    assert p.returncode == 0 and "WARN the index cache was not pruned: LADR_LAB_CACHE_MAX_BYTES" in p.stderr
