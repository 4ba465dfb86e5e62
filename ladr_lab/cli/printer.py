"""The round-by-round printer of `ladr-lab run` (and `show`): one trace listener writing to a stream.

It prints the stories of `trace/story.py` (what the static HTML views and the notebook widgets render too):
for each model call its label and tag, the output (first 600 characters), why it was judged so, the deciding
schema keyword, every fetched entry, an error, and its tokens, cost, latency, speeds and provenance; each gate,
write and child run on one line; and how the run ended. With `live` (a `LiveCalls`, on a terminal), the calls in
flight are drawn below the printout as they write, and each block is printed above them.
"""
from __future__ import annotations

import contextlib

from ..trace import Event
from ..trace.story import OUTPUT_CLIP, EndStory, RoundStory, StepStory, describe
from .live import LiveCalls

__all__ = ["OutputClosed", "RoundPrinter"]


class OutputClosed(BaseException):
    """The reader of the printer's stream went away (`| head`): unwinds the run as Ctrl-C does (a BaseException,
    so the trace's listener guard does not swallow it); `main` ends quietly."""


class RoundPrinter:
    """Prints a run round by round as its events arrive."""

    def __init__(self, stream, width: int = 100, output_chars: int = OUTPUT_CLIP, live: LiveCalls | None = None) -> None:
        self.out = stream
        self.width = width
        self.output_chars = output_chars
        self.live = live

    def __call__(self, e: Event) -> None:
        story = describe(e)
        lines = story.text_lines(self.output_chars) if isinstance(story, RoundStory) else story.text_lines()
        if not lines:
            return
        # steps and the run's end stand at the left of their depth; what happens inside a step is indented
        pad = "  " * e.depth + ("" if isinstance(story, (StepStory, EndStory)) else "  ")
        try:
            with self.live.paused() if self.live is not None else contextlib.nullcontext():
                self.out.write("".join(pad + ln + "\n" for ln in lines))
                self.out.flush()
        except BrokenPipeError:
            raise OutputClosed from None
