"""A ladder file watched for changes (anywidget's watched file, for ladders): `watch(path)` loads it, and loads it
again whenever its text changes on disk, calling each function in `changed`.

    w = ladr_lab.watch("examples/research.yaml")
    w.changed.append(lambda w: print("reloaded", w.ladder.name, w.problems))
    ...                       # edit the file in any editor: w.ladder is the new ladder
    w.close()

`ladder` is the last version that loaded without errors; `problems` are the current text's problems (so a
half-typed edit never replaces a good ladder, and shows why). A change is noticed by a thread that re-stats
the file (`backend="poll"`, the default: the file's size, modification time and inode, every `interval`
seconds), or by watchfiles' notifications on the file's directory (`backend="watchfiles"`); both see editors
that save by renaming a new file over the old one. `check()` looks now, without waiting for the thread (what
tests and a cell that must see the edit at once use). Why polling is the default: see docs/DECISIONS.md
(`python benchmarks/watch_ladder.py`).
"""
from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..display import Displayable
from ..errors import ConfigError
from .model import Ladder

__all__ = ["BACKENDS", "WatchedLadder", "watch"]

BACKENDS = ("poll", "watchfiles")


def _stamp(path: Path) -> tuple | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_size, st.st_mtime_ns, st.st_ino)


class WatchedLadder(Displayable):
    """A ladder file, reloaded when its text changes: `ladder` (the last good version), `problems` (of the text
    now on disk), `changed` (functions called with this object after each reload), `check()`, `close()`."""

    def __init__(self, path: str | os.PathLike, *, knobs: dict | None = None, interval: float = 0.25,
                 backend: str = "poll", start: bool = True) -> None:
        if backend not in BACKENDS:
            raise ValueError(f"backend must be one of {', '.join(BACKENDS)} (got {backend!r})")
        self.path = Path(path).resolve()
        self.knobs = knobs
        self.interval = interval
        self.backend = backend
        self.changed: list[Callable[[WatchedLadder], Any]] = []
        self.ladder: Ladder | None = None
        self.problems: list[ConfigError] = []
        self.reloads = 0
        self.errors: list[BaseException] = []       # what `changed` callbacks raised (they never stop the watch)
        self._text: str | None = None
        self._stamp: tuple | None = None
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._load(initial=True)
        if start:
            self.start()

    # ---- loading --------------------------------------------------------------------------------------
    def _load(self, initial: bool = False) -> bool:
        from .loader import check_text, read_ladder_file
        with self._lock:
            stamp = _stamp(self.path)
            try:
                text = read_ladder_file(self.path)
            except ConfigError as exc:
                if initial:
                    raise
                changed = self._text is not None
                self._text, self._stamp, self.problems = None, stamp, [exc]
                return changed
            self._stamp = stamp
            if text == self._text:
                return False
            self._text = text
            built, problems = check_text(text, file=str(self.path), knobs=self.knobs, base_dir=self.path.parent)
            self.problems = problems
            if built is not None:
                self.ladder = built
            elif initial:
                from ..errors import ConfigErrors
                raise ConfigErrors([p for p in problems if p.severity == "error"])
            self.reloads += 0 if initial else 1
        return True

    def check(self) -> bool:
        """Look at the file now; reload it (and call `changed`) if its text changed. True when it did."""
        if _stamp(self.path) == self._stamp:
            return False
        if not self._load():
            return False
        for fn in list(self.changed):
            try:
                fn(self)
            except Exception as exc:  # a broken callback must not end the watch
                self.errors.append(exc)
        return True

    # ---- the thread ---------------------------------------------------------------------------------
    def start(self) -> None:
        """Start watching in a background thread (done by `watch()`)."""
        if self._thread is not None:
            return
        self._stop.clear()
        target = self._poll if self.backend == "poll" else self._notify
        self._thread = threading.Thread(target=target, name=f"ladr-watch:{self.path.name}", daemon=True)
        self._thread.start()

    def _poll(self) -> None:
        while not self._stop.wait(self.interval):
            self.check()

    def _notify(self) -> None:
        import watchfiles
        target = str(self.path)
        for _changes in watchfiles.watch(self.path.parent, stop_event=self._stop, debounce=50, step=20,
                                         watch_filter=lambda _c, p: p == target, recursive=False,
                                         raise_interrupt=False):
            self.check()

    def close(self) -> None:
        """Stop watching (the thread ends within `interval` seconds)."""
        self._stop.set()
        thread, self._thread = self._thread, None
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=max(1.0, self.interval * 4))

    @property
    def watching(self) -> bool:
        """True while the background thread runs."""
        return self._thread is not None and self._thread.is_alive()

    def __enter__(self) -> WatchedLadder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- display ------------------------------------------------------------------------------------
    def __repr__(self) -> str:
        state = "watching" if self.watching else "closed"
        errors = sum(p.severity == "error" for p in self.problems)
        return (f"<WatchedLadder {self.path.name} ({state}, {self.reloads} reload(s)"
                + (f", {errors} error(s) now" if errors else "") + ")>")

    def to_text(self) -> str:
        """The ladder, or the problems of the text on disk."""
        errors = [p for p in self.problems if p.severity == "error"]
        if errors:
            return repr(self) + "\n" + "\n".join(p.format() for p in errors)
        return repr(self) + ("\n" + self.ladder.to_text() if self.ladder is not None else "")

    def to_html(self) -> str:
        """The ladder as a static view, or the text on disk with its problems at their lines."""
        from .html import problems_html
        errors = [p for p in self.problems if p.severity == "error"]
        if errors and self._text is not None:
            return problems_html(self._text, self.problems, title=f"{self.path.name}: not reloaded")
        return self.ladder.to_html() if self.ladder is not None else ""


def watch(path: str | os.PathLike, *, knobs: dict | None = None, interval: float = 0.25,
          backend: str = "poll") -> WatchedLadder:
    """Load a ladder file and reload it whenever its text changes on disk; returns the WatchedLadder
    (`.ladder`, `.problems`, `.changed` callbacks, `.close()`)."""
    return WatchedLadder(path, knobs=knobs, interval=interval, backend=backend)
