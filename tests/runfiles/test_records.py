"""RecordParser and format_record: AgentRecordFormat lines of seed 004, read back record by record."""
from __future__ import annotations

from datetime import datetime

import pytest

from ladr_lab.runfiles import Record, RecordParser, format_record, parse_file, parse_record_line

TS = "2026-10-21 18:00:00"


def parse(text: str, start_line: int = 1) -> list[Record]:
    return RecordParser().parse(text, start_line)


def test_seed_history_and_log_lines() -> None:
    text = (f"{TS} [running] [conv-1] Alice has started episode 1.\n"
            f"{TS} INFO  [running] [-] Alice chat started\n")
    h, lg = parse(text)
    assert h == Record(1, TS, None, "running", "conv-1", "Alice", "has started episode 1.", "history")
    assert lg == Record(2, TS, "INFO", "running", "-", "Alice", "chat started", "log")


def test_lines_without_the_conversation_field() -> None:
    text = (f"{TS} [running] Alice has started episode 1.\n"
            f"{TS} WARN  [finished] Alice something odd\n"
            f"{TS} [running] [conv-2] Alice said hi\n")
    a, b, c = parse(text)
    assert (a.kind, a.state, a.conversation, a.agent, a.message) == \
        ("history", "running", None, "Alice", "has started episode 1.")
    assert (b.kind, b.level, b.state, b.conversation, b.agent, b.message) == \
        ("log", "WARN", "finished", None, "Alice", "something odd")
    assert c.conversation == "conv-2"


def test_dash_conversation_stays_dash() -> None:
    (r,) = parse(f"{TS} [running] [-] Alice x\n")
    assert r.conversation == "-"


def test_indented_lines_continue_and_never_start_a_record() -> None:
    text = (f"{TS} [running] [conv-1] Alice was told: first line\n"
            f"  {TS} [running] [conv-2] Bob said something else\n"
            "  \n"
            "  last line\n"
            f"{TS} [running] [conv-1] Alice said: ok\n")
    a, b = parse(text)
    assert a.line == 1 and a.conversation == "conv-1" and a.agent == "Alice"
    assert a.message == f"was told: first line\n{TS} [running] [conv-2] Bob said something else\n\nlast line"
    assert (a.line_count, a.end_line) == (4, 4)
    assert b.line == 5 and b.message == "said: ok"


def test_unindented_non_record_lines_continue_as_they_are() -> None:
    # a stack trace logback appends after a message is not indented; it still belongs to the record above
    text = (f"{TS} ERROR [running] [-] Alice boom\n"
            "Traceback (most recent call last):\n"
            "\tat thing\n"
            f"{TS} not a record: no state field\n")
    (r,) = parse(text)
    assert r.message == f"boom\nTraceback (most recent call last):\n\tat thing\n{TS} not a record: no state field"


def test_preamble_is_one_record_without_fields() -> None:
    text = "some header\n  indented header\n" + f"{TS} [running] [-] Alice hello\n"
    pre, rec = parse(text)
    assert pre == Record(1, None, None, None, None, None, "some header\n  indented header", "preamble")
    assert rec.line == 3 and rec.kind == "history"


def test_only_preamble_and_empty_text() -> None:
    assert parse("") == []
    (pre,) = parse("no records here\n")
    assert pre.kind == "preamble" and pre.message == "no records here"


def test_start_line_offsets_line_numbers() -> None:
    text = f"  tail of a record\n{TS} [running] [-] Alice next\n"
    pre, rec = parse(text, start_line=41)
    assert (pre.line, pre.kind, pre.message) == (41, "preamble", "  tail of a record")
    assert rec.line == 42


def test_crlf_and_missing_final_newline() -> None:
    text = f"{TS} [running] [-] Alice a\r\n  b\r\n{TS} INFO  [running] [-] Alice c"
    a, c = parse(text)
    assert a.message == "a\nb" and c.line == 3 and c.message == "c"


def test_empty_message_and_trailing_space() -> None:
    a, b = parse(f"{TS} [running] [-] Alice\n{TS} [running] [-] Alice said: \n")
    assert a.agent == "Alice" and a.message == ""
    assert b.message == "said: "


def test_a_line_without_agent_does_not_start_a_record() -> None:
    assert parse_record_line(f"{TS} [running] [conv-1]") is None
    assert parse_record_line(f"{TS} [running] [conv-1] Alice x")["agent"] == "Alice"


@pytest.mark.parametrize("level", ["INFO", "WARN", "DEBUG", "ERROR", "TRACE"])
def test_format_pads_the_level_to_five(level: str) -> None:
    line = format_record(TS, "Alice", "m", state="running", conversation="-", level=level)
    assert line == f"{TS} {level:<5} [running] [-] Alice m\n"
    assert line.startswith(f"{TS} {level} " + " " * (5 - len(level)) + "[")


def test_format_indents_continuation_lines_and_accepts_a_datetime() -> None:
    line = format_record(datetime(2026, 10, 21, 18, 0, 0), "Alice", "one\ntwo\n\nthree", state="running",
                         conversation="conv-1")
    assert line == f"{TS} [running] [conv-1] Alice one\n  two\n  \n  three\n"


ATTACK = f"x\n{TS} [running] [conv-9] Mallory has started episode 9.\n{TS} INFO  [running] [-] Mallory hi"


@pytest.mark.parametrize(("message", "expected"), [
    ("plain", "plain"),
    ("", ""),
    ("trailing newline\n", "trailing newline\n"),
    ("\n\nleading blanks", "\n\nleading blanks"),
    ("a\r\nb\rc", "a\nb\nc"),
    ("line\u2028separator\x85next", "line\nseparator\nnext"),
    (ATTACK, ATTACK),
    ("nul\x00byte", "nul\u2400byte"),
])
def test_format_then_parse_round_trips(message: str, expected: str) -> None:
    text = (format_record(TS, "Alice", message, state="running", conversation="node-1")
            + format_record(TS, "Alice", "after", state="finished", conversation="-", level="INFO"))
    assert "\x00" not in text and "\r" not in text
    first, second = parse(text)
    assert (first.agent, first.conversation, first.message) == ("Alice", "node-1", expected)
    assert second.line == first.end_line + 1 and second.message == "after"


def test_parse_file(tmp_path) -> None:
    p = tmp_path / "Alice.history"
    p.write_bytes(f"{TS} [running] [-] Alice caf\xc3\xa9 \xff\n".encode("latin-1"))
    (r,) = parse_file(p)
    assert r.message.startswith("caf\u00e9 ")
    assert RecordParser().parse_file(p) == [r]


try:
    from hypothesis import given
    from hypothesis import strategies as st
except ImportError:  # pragma: no cover - hypothesis is a dev dependency
    given = None

if given is not None:
    @given(st.text(), st.sampled_from([None, "INFO", "DEBUG"]))
    def test_no_message_can_start_a_record_of_its_own(message: str, level: str | None) -> None:
        from ladr_lab.runfiles.records import message_lines

        text = format_record(TS, "Alice", message, state="running", conversation="node-1", level=level)
        (rec,) = parse(text + f"{TS} [running] [-] Alice end\n")[:-1]
        assert rec.line == 1 and rec.agent == "Alice" and rec.conversation == "node-1"
        assert rec.message == "\n".join(message_lines(message))
        assert "\x00" not in text
