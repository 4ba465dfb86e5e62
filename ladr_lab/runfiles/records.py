"""AgentRecordFormat lines (seed 004): formatting one record, and parsing a file's text back into records.

A history line is ``<YYYY-MM-DD HH:MM:SS> [<state>] [<conversation>] <agent> <message>``; a log line puts the
level, left-justified to five characters and a space, after the timestamp. A message of several lines is
written with two spaces before every line after its first, so an indented line continues the record above
it and never starts one. The parser also reads lines written without the conversation field.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

TIMESTAMP_FORMAT = "%Y-%m-%d %H:%M:%S"
CONTINUATION_INDENT = "  "
NO_CONVERSATION = "-"
# NUL would make the searcher drop the whole file (seed 004: a file with a NUL byte is left out).
NUL_REPLACEMENT = "\u2400"

_RECORD_RE = re.compile(
    r"(?P<ts>\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}(?:[.,]\d{1,9})?)"
    r" (?:(?P<level>[A-Z]+) +)?"
    r"\[(?P<state>[^\]]*)\]"
    r"(?: \[(?P<conv>[^\]]*)\])?"
    r" (?P<agent>[^\s\[]\S*)"
    r"(?: (?P<msg>.*))?\Z",
    re.DOTALL,
)


def format_timestamp(when: datetime) -> str:
    """The record timestamp of a datetime, ``YYYY-MM-DD HH:MM:SS`` as given (no time-zone conversion)."""
    return when.strftime(TIMESTAMP_FORMAT)


def message_lines(message: str) -> list[str]:
    """A message's lines as they are written: split at every line boundary, NUL made visible, never empty."""
    text = str(message).replace("\x00", NUL_REPLACEMENT)
    # str.splitlines knows every boundary a reader may split at (\r, \x0b, \x1c, \u2028, ...); after it the
    # file holds "\n" only, so every reader counts the same lines.
    lines = text.splitlines()
    if not lines or text.endswith(("\n", "\r", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x85",
                                   "\u2028", "\u2029")):
        lines.append("")
    return lines


def format_record(timestamp: str | datetime, agent: str, message: str, *, state: str,
                  conversation: str | None = NO_CONVERSATION, level: str | None = None) -> str:
    """One record as it is written, newline-terminated: a history line, or a log line when `level` is given."""
    ts = format_timestamp(timestamp) if isinstance(timestamp, datetime) else timestamp
    conv = NO_CONVERSATION if conversation is None else conversation
    head = f"{ts} {level:<5} " if level else f"{ts} "
    first, *rest = message_lines(message)
    out = [f"{head}[{state}] [{conv}] {agent} {first}"]
    out.extend(CONTINUATION_INDENT + line for line in rest)
    return "\n".join(out) + "\n"


@dataclass(frozen=True)
class AgentRecord:
    """One record of a run file (AgentRecordFormat): its first line's number, its fields and its whole message."""

    line: int
    timestamp: str | None
    level: str | None
    state: str | None
    conversation: str | None
    agent: str | None
    message: str
    kind: str  # "history" | "log" | "preamble"

    @property
    def line_count(self) -> int:
        """How many lines of the file the record spans."""
        return self.message.count("\n") + 1

    @property
    def end_line(self) -> int:
        """The 1-based number of the record's last line."""
        return self.line + self.line_count - 1


Record = AgentRecord     # its older name (it collided with `round.records.Record`, the trace records' base)


def split_lines(text: str) -> list[str]:
    """The lines of a file's text, split at ``\\n`` only (a ``\\r`` before it dropped), without a final empty one.

    Only ``\\n`` ends a line, as for logback, grep and ripgrep, so every reader numbers lines alike; the
    writer turns every other line break of a message into ``\\n`` plus the continuation indent.
    """
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [line[:-1] if line.endswith("\r") else line for line in lines]


def parse_record_line(line: str) -> dict | None:
    """The fields of a line that starts a record, or None when the line continues one."""
    m = _RECORD_RE.match(line)
    if m is None:
        return None
    return {"timestamp": m["ts"], "level": m["level"], "state": m["state"], "conversation": m["conv"],
            "agent": m["agent"], "message": m["msg"] or "", "kind": "log" if m["level"] else "history"}


class RecordParser:
    """Parses AgentRecordFormat text into records, each starting at a line that begins with a record header."""

    def parse(self, text: str, start_line: int = 1) -> list[AgentRecord]:
        """The records of `text`, whose first line is line `start_line` of its file."""
        records: list[AgentRecord] = []
        head: dict | None = None
        first = start_line
        body: list[str] = []

        def close() -> None:
            if head is None:
                records.append(AgentRecord(first, None, None, None, None, None, "\n".join(body), "preamble"))
            else:
                records.append(AgentRecord(first, head["timestamp"], head["level"], head["state"], head["conversation"],
                                      head["agent"], "\n".join([head["message"], *body]), head["kind"]))

        started = False
        for number, line in enumerate(split_lines(text), start=start_line):
            fields = None if line.startswith(" ") else parse_record_line(line)
            if fields is not None:
                if started:
                    close()
                head, first, body, started = fields, number, [], True
                continue
            if not started:
                head, first, body, started = None, number, [], True
            # Only a message's own lines carry the indent; a line without it (a stack trace, a pre-0.18.6
            # line) still continues the record above, kept as it is.
            body.append(line[len(CONTINUATION_INDENT):] if head is not None and line.startswith(CONTINUATION_INDENT)
                        else line)
        if started:
            close()
        return records

    def parse_file(self, path: str | Path) -> list[AgentRecord]:
        """The records of the file at `path` (UTF-8; undecodable bytes replaced)."""
        with open(path, encoding="utf-8", errors="replace", newline="") as fh:
            return self.parse(fh.read())


def parse_file(path: str | Path) -> list[AgentRecord]:
    """The records of the file at `path`, parsed with a default RecordParser."""
    return RecordParser().parse_file(path)
