"""The calls being made now, drawn at the bottom of a terminal while they run (`ladr-lab run` on a terminal).

`LiveCalls` is a `CallWatcher` (models/stream.py): each call in flight gets a line saying where it is (step, node,
round, model), how far it has got (reading the prompt, or tokens written and tokens per second) and the last lines
of its text as the model writes it. A call shows once it writes, or once it has run `SHOW_AFTER` seconds (an instant
answer never flashes by); the region is redrawn as text comes (at most every `INTERVAL` seconds, and by a ticker while
a call is still reading its prompt) and erased when the call ends, so the round printout that follows
(`RoundPrinter`) is the same as without it. The printer pauses the region around each block it prints.

Drawing is plain ANSI (carriage return, cursor up, erase to the end of the screen): the region's rows are wrapped
here to the terminal's width, by each character's display width, so the cursor moves exactly as far as it drew.
It is only used on a terminal (`sys.stdout.isatty()`), never in `--json` mode or with `--no-stream`.
"""
from __future__ import annotations

import contextlib
import shutil
import time
import unicodedata
from collections.abc import Iterator
from typing import TextIO

from ..models import TokenStream
from ..models.stream import LiveDrawing

__all__ = ["INTERVAL", "LiveCalls", "MAX_ROWS", "SHOW_AFTER", "TICK", "display_width", "wrap_rows"]

INTERVAL = 0.1          # seconds between two redraws as text comes
TICK = 0.25             # seconds between two redraws while no text comes (the elapsed time moves on)
SHOW_AFTER = 0.3        # a call that writes nothing shows after this long (an instant answer never flashes by)
MAX_ROWS = 12           # rows of the region at most (fewer on a short terminal)


def display_width(ch: str) -> int:
    """Columns a character takes on a terminal: 2 for wide East Asian characters, 0 for combining marks."""
    if unicodedata.combining(ch) or ch in "\u200b\u200d\ufe0f":
        return 0
    return 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1


def wrap_rows(text: str, width: int) -> list[str]:
    """`text` cut into rows of at most `width` columns (each line of it at least one row; tabs as spaces, other
    control characters left out)."""
    rows: list[str] = []
    for line in text.replace("\t", "    ").split("\n"):
        row: list[str] = []
        used = 0
        for ch in line:
            if ch < " " or ch == "\x7f":
                continue
            w = display_width(ch)
            if used + w > width and row:
                rows.append("".join(row))
                row, used = [], 0
            row.append(ch)
            used += w
        rows.append("".join(row))
    return rows


class LiveCalls(LiveDrawing):
    """A terminal region showing the calls in flight and their text as it grows (see the module docstring); a call
    ends by leaving the region (its round is printed next, by the printer)."""

    interval = INTERVAL
    tick = TICK

    def __init__(self, out: TextIO, *, columns: int | None = None, lines: int | None = None) -> None:
        super().__init__()
        self.out = out
        self._columns, self._lines = columns, lines
        self._drawn = 0                  # rows of the region on screen (the cursor is on its last one)
        self._paused = 0

    # ---- the printer's side -------------------------------------------------------------------------------
    @contextlib.contextmanager
    def paused(self) -> Iterator[None]:
        """Erase the region while the block writes (a round's printout), then draw it again below."""
        with self._lock:
            self._erase()
            self._paused += 1
            try:
                yield
            finally:
                self._paused -= 1
                self._draw()

    def close(self) -> None:
        """Erase the region and forget the calls (the run has ended, or was interrupted)."""
        with self._lock:
            self._active.clear()
            self._erase()

    # ---- drawing -----------------------------------------------------------------------------------------
    def _size(self) -> tuple[int, int]:
        size = shutil.get_terminal_size((100, 24))
        return self._columns or size.columns, self._lines or size.lines

    def rows(self) -> list[str]:
        """The region's rows as they are drawn now (each fits the terminal's width)."""
        columns, lines = self._size()
        width = max(20, columns - 1)             # never the last column: some terminals wrap there
        budget = max(2, min(MAX_ROWS, lines - 2))
        streams = [s for s in self._active if (s.pieces and not s.whole) or s.elapsed >= SHOW_AFTER][: budget // 2]
        out: list[str] = []
        for i, s in enumerate(streams):
            share = (budget - len(out)) // (len(streams) - i)
            out.append(_fit(_headline(s), width))
            text_rows = wrap_rows(s.text, width - 4) if s.text else []
            keep = max(0, share - 1)
            if len(text_rows) > keep:
                text_rows = text_rows[len(text_rows) - keep:] if keep else []
            out += ["  │ " + r for r in text_rows]
        return out

    def _erase(self) -> None:
        if not self._drawn:
            return
        up = f"\x1b[{self._drawn - 1}A" if self._drawn > 1 else ""
        self._write("\r" + up + "\x1b[J")
        self._drawn = 0

    def _draw(self) -> None:
        if self._paused:
            return
        self._last = time.monotonic()
        rows = self.rows()
        if not rows and not self._drawn:
            return
        up = f"\x1b[{self._drawn - 1}A" if self._drawn > 1 else ""
        self._write(("\r" + up + "\x1b[J" if self._drawn else "") + "\n".join(rows))
        self._drawn = len(rows)

    def _write(self, text: str) -> None:
        with contextlib.suppress(OSError, ValueError):     # a closed terminal: the printer says so, not this
            self.out.write(text)
            self.out.flush()


def _headline(s: TokenStream) -> str:
    """`▸ research · node 1 · round 2 → local:qwen2.5-coder-0.5b · 34 tokens · 11.8 tok/s · 3.1 s`."""
    info = s.info
    where = " · ".join([*info.caller, info.step, f"node {info.node}", f"round {info.round}"]) if info else "call"
    bits = [f"▸ {where} → {s.model}" if s.model else f"▸ {where}"]
    if s.cancelled:
        bits.append("stopping…")
    elif s.first_at is None:
        bits.append("reading the prompt…")
    else:
        bits.append(f"{s.pieces} token{'s' if s.pieces != 1 else ''}")
        tps = s.tokens_per_s
        if tps:
            bits.append(f"{tps:.1f} tok/s")
    bits.append(f"{s.elapsed:.1f} s")
    return " · ".join(bits)


def _fit(row: str, width: int) -> str:
    """`row` cut to `width` columns (ending in an ellipsis when cut)."""
    if sum(display_width(ch) for ch in row) <= width:
        return row
    used, out = 0, []
    for ch in row:
        w = display_width(ch)
        if used + w > width - 1:
            break
        out.append(ch)
        used += w
    return "".join(out) + "…"
