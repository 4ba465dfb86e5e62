"""What a record means (seed 004): a RecordInterpreter reads each record as a note, a message the agent was told
or said, or a record left out.

Without an interpreter every record is a note. A host interpreter (any `RecordInterpreter` given to the
retriever) turns on two rules: a record of being told the turn message is not returned, and a message several
files record is given once. A note several files record is given once with any interpreter, and log records at
DEBUG and TRACE are always left out (the retriever applies both).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import PurePosixPath

from .records import AgentRecord

NOTE = "note"
TOLD = "told"
SAID = "said"
LEFT_OUT = "left_out"
KINDS = (NOTE, TOLD, SAID, LEFT_OUT)
QUIET_LEVELS = frozenset({"DEBUG", "TRACE"})


@dataclass(frozen=True)
class Reading:
    """What one record means: its kind (note, told, said or left_out), the evidence text, and the bare message."""

    kind: str
    text: str = ""
    message: str | None = None  # told/said: the message itself, compared with the turn message and deduplicated

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"a Reading is one of {', '.join(KINDS)} (got {self.kind!r})")

    @classmethod
    def note(cls, text: str) -> Reading:
        """A note: evidence that is not a message."""
        return cls(NOTE, text)

    @classmethod
    def told(cls, text: str, message: str | None = None) -> Reading:
        """A message the agent was told; `text` is the evidence, `message` the message itself (default: text)."""
        return cls(TOLD, text, text if message is None else message)

    @classmethod
    def said(cls, text: str, message: str | None = None) -> Reading:
        """A message the agent said; `text` is the evidence, `message` the message itself (default: text)."""
        return cls(SAID, text, text if message is None else message)

    @classmethod
    def left_out(cls) -> Reading:
        """A record that is not evidence."""
        return cls(LEFT_OUT)


class RecordInterpreter:
    """Tells the retriever what a host's records mean; this base reads every record as a note."""

    #: a name stored with an index, so an index built with another interpreter is built again
    name = "notes"

    def read(self, file: str, line: int, record: AgentRecord) -> Reading:
        """The reading of `record`, whose first line is `line` of `file` (a path relative to the run folder)."""
        return Reading.note(record.message)


_TOLD_RE = re.compile(r"was told (?:the system prompt|\(round \d+\)): ")
_SAID_RE = re.compile(r"said \(round \d+\): ")


class LadrInterpreter(RecordInterpreter):
    """The host interpreter of ladr_lab's own run files: ``was told …:`` is told, ``said (round N):`` is said."""

    name = "ladr"

    def read(self, file: str, line: int, record: AgentRecord) -> Reading:
        """Told and said records of `.history` files keep their whole text as evidence; the rest are notes."""
        if record.kind == "history" and PurePosixPath(file).suffix == ".history":
            m = _TOLD_RE.match(record.message)
            if m:
                return Reading.told(record.message, record.message[m.end():])
            m = _SAID_RE.match(record.message)
            if m:
                return Reading.said(record.message, record.message[m.end():])
        return Reading.note(record.message)


__all__ = ["KINDS", "LEFT_OUT", "LadrInterpreter", "NOTE", "QUIET_LEVELS", "Reading", "RecordInterpreter", "SAID",
           "TOLD"]
