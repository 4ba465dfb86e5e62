"""The per-user cache folder ladr_lab keeps things in between processes (run-file indexes, assembled model weights).

`$LADR_LAB_CACHE_DIR` when that variable is set, else `$XDG_CACHE_HOME/ladr_lab`, else `~/.cache/ladr_lab`; each
user of it takes a subfolder (`runfiles/`, `models/`).
"""
from __future__ import annotations

import os
from pathlib import Path

CACHE_ENV = "LADR_LAB_CACHE_DIR"

__all__ = ["CACHE_ENV", "cache_root"]


def cache_root() -> Path:
    """The cache folder (see the module docstring); not created here."""
    root = os.environ.get(CACHE_ENV)
    if root:
        return Path(root).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg and os.path.isabs(os.path.expanduser(xdg)) else Path.home() / ".cache"
    return base / "ladr_lab"
