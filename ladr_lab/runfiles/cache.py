"""Where `ladr-lab search` keeps a run-file index between calls: a per-user cache folder, or the run folder.

One index file a key: the run folder's real path, the owner (its file stem), the record interpreter and the
masker (and the index's schema version). The file name is a readable slug and a hash of the key, so another
owner, interpreter or masker gets another file, and a changed run folder reuses its file incrementally.

The cache folder is `$LADR_LAB_CACHE_DIR/runfiles/` when that variable is set, else
`$XDG_CACHE_HOME/ladr_lab/runfiles/`, else `~/.cache/ladr_lab/runfiles/`; it is created private (0700), since an
unmasked index holds the run files' text. Inside a run folder the index goes to `RUN_DIR/.ladr_lab/`, under a
hidden name (a run folder's hidden files are never searched).

The cache folder is kept bounded (`prune_cache`, after every cached search): an index unused for `MAX_AGE_DAYS` goes
(its run folder may be long gone), then the least recently used go until the folder is under `MAX_BYTES`; the
index just used and any used in the last `GRACE_SECONDS` (a search running beside this one) always stay.
`LADR_LAB_CACHE_MAX_BYTES` and `LADR_LAB_CACHE_MAX_AGE_DAYS` override the two bounds.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import time
from dataclasses import dataclass
from pathlib import Path

from ..cachedir import CACHE_ENV, cache_root
from .index import SCHEMA_VERSION
from .masking import Masker
from .readings import RecordInterpreter

MAX_BYTES = 2 << 30          # 2 GiB of indexes
MAX_AGE_DAYS = 30.0
GRACE_SECONDS = 600.0
MAX_BYTES_ENV = "LADR_LAB_CACHE_MAX_BYTES"
MAX_AGE_ENV = "LADR_LAB_CACHE_MAX_AGE_DAYS"
_SIDE_FILES = ("-journal", "-wal", "-shm")
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def cache_dir() -> Path:
    """The folder cached run-file indexes go to (see the module docstring); not created here."""
    return cache_root() / "runfiles"


def index_name(run_dir: str | Path, owner: str, *, interpreter: RecordInterpreter | None = None,
               masker: Masker | None = None) -> str:
    """The file name of the index of `owner`'s files in `run_dir` with this interpreter and masker."""
    real = os.path.realpath(run_dir)
    key = [SCHEMA_VERSION, real, owner, getattr(interpreter, "name", type(interpreter).__name__)
           if interpreter is not None else "none", masker.name if masker is not None else "none"]
    digest = hashlib.sha256(json.dumps(key).encode("utf-8", "surrogatepass")).hexdigest()[:20]
    slug = _UNSAFE.sub("_", f"{os.path.basename(real) or 'root'}.{owner}")[:60]
    return f"{slug}.{'masked.' if masker is not None else ''}{digest}.sqlite"


def cached_index_path(run_dir: str | Path, owner: str, *, interpreter: RecordInterpreter | None = None,
                      masker: Masker | None = None, in_run_dir: bool = False) -> Path:
    """The index file for this key in the cache folder (or in `RUN_DIR/.ladr_lab/`), its folder created."""
    name = index_name(run_dir, owner, interpreter=interpreter, masker=masker)
    if in_run_dir:
        folder, name = Path(os.path.realpath(run_dir)) / ".ladr_lab", "." + name
    else:
        folder = cache_dir()
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    return folder / name


def _bound(env: str, default: float) -> float:
    raw = os.environ.get(env, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ValueError(f"{env} must be a number (got {raw!r})") from None
    if not value >= 0:   # also refuses NaN
        raise ValueError(f"{env} must be >= 0 (got {raw!r})")
    return value


@dataclass(frozen=True)
class Pruned:
    """What `prune_cache` removed from the cache folder: index file names and the bytes freed."""

    removed: tuple[str, ...]
    freed: int


def prune_cache(keep: str | Path | None = None, *, folder: str | Path | None = None, max_bytes: float | None = None,
          max_age_days: float | None = None, now: float | None = None) -> Pruned:
    """Mark `keep` as just used, then drop stale and least recently used indexes until the folder fits its bounds."""
    folder = Path(folder) if folder is not None else cache_dir()
    max_bytes = _bound(MAX_BYTES_ENV, MAX_BYTES) if max_bytes is None else max_bytes
    max_age = 86400.0 * (_bound(MAX_AGE_ENV, MAX_AGE_DAYS) if max_age_days is None else max_age_days)
    now = time.time() if now is None else now
    if keep is not None:
        try:
            os.utime(keep, (now, now))   # last use, read back below: an index only read keeps its mtime otherwise
        except OSError:
            pass
    entries = []
    try:
        names = os.listdir(folder)
    except OSError:
        return Pruned((), 0)
    for name in names:
        if not name.endswith(".sqlite"):
            continue
        path = folder / name
        try:
            st = path.stat()
        except OSError:
            continue
        size = st.st_size + sum(_size(folder / (name + side)) for side in _SIDE_FILES)
        entries.append((st.st_mtime, name, size))
    entries.sort()   # least recently used first
    keep_name = Path(keep).name if keep is not None else None
    total = sum(size for _, _, size in entries)
    removed, freed = [], 0
    for mtime, name, size in entries:
        if name == keep_name or now - mtime < GRACE_SECONDS:
            continue
        if now - mtime <= max_age and total <= max_bytes:
            continue
        for side in ("", *_SIDE_FILES):
            try:
                os.unlink(folder / (name + side))
            except FileNotFoundError:
                pass
            except OSError:
                break
        else:
            removed.append(name)
            freed += size
            total -= size
    return Pruned(tuple(removed), freed)


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


__all__ = ["CACHE_ENV", "MAX_AGE_DAYS", "MAX_AGE_ENV", "MAX_BYTES", "MAX_BYTES_ENV", "Pruned", "cache_dir",
           "cached_index_path", "index_name", "prune_cache"]
