"""Where `ladr-lab search` keeps a run-file index between calls: a per-user cache folder, or the run folder.

One index file a key: the run folder's real path, the owner (its file stem), the record interpreter and the
masker (and the index's schema version). The file name is a readable slug and a hash of the key, so another
owner, interpreter or masker gets another file, and a changed run folder reuses its file incrementally.

The cache folder is `$LADR_LAB_CACHE_DIR/runfiles/` when that variable is set, else
`$XDG_CACHE_HOME/ladr_lab/runfiles/`, else `~/.cache/ladr_lab/runfiles/`; it is created private (0700), since an
unmasked index holds the run files' text. Inside a run folder the index goes to `RUN_DIR/.ladr_lab/`, under a
hidden name (a run folder's hidden files are never searched).
"""
from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path

from .index import SCHEMA_VERSION
from .masking import Masker
from .readings import RecordInterpreter

CACHE_ENV = "LADR_LAB_CACHE_DIR"
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def cache_dir() -> Path:
    """The folder cached run-file indexes go to (see the module docstring); not created here."""
    root = os.environ.get(CACHE_ENV)
    if root:
        return Path(root).expanduser() / "runfiles"
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg and os.path.isabs(os.path.expanduser(xdg)) else Path.home() / ".cache"
    return base / "ladr_lab" / "runfiles"


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


__all__ = ["CACHE_ENV", "cache_dir", "cached_index_path", "index_name"]
