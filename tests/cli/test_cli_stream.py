"""`ladr-lab run` on a terminal shows the model writing (cli/live.py): the call in flight and its text as it comes, drawn
below the printout and erased when the call ends, so what stays on the screen is the printout a pipe gets, with the
call's speeds. Never into a pipe, never with --json, not with --no-stream. The model is a fake OpenAI-compatible
server on 127.0.0.1 that streams its answer a piece at a time."""
from __future__ import annotations

import fcntl
import json
import os
import pty
import re
import struct
import subprocess
import sys
import termios
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ladr_lab.cli.live import LiveCalls, display_width, wrap_rows
from ladr_lab.models import CallInfo, TokenStream
from tests.helpers_openai import Fake, serve

ROOT = Path(__file__).resolve().parents[2]
LADDER = """\
name: streamed
steps:
  - id: research
    fields:
      - { name: Question, type: text, from: input.context }
    retrieve:
      to: { slate: Knowledge, folder: docs }
      as: Docs
      maxRounds: 1
      requestMatch: { type: object, required: [files], properties: { files: { type: array } } }
slates:
  - title: Knowledge
    path: KNOWLEDGE
    folders: [{ name: docs }]
"""
REQUEST = '{"files": ["core.md"]}'
FINAL = "Dedup is per step:\neach node keeps its own set of paths — “seen” — 😀 so a file comes once."
COLUMNS, LINES = 100, 40


@pytest.fixture
def base():
    with serve() as url:
        yield url


def _ladder(tmp_path: Path) -> Path:
    path = tmp_path / "streamed.yaml"
    path.write_text(LADDER.replace("KNOWLEDGE", str(ROOT / "tests" / "fixtures" / "knowledge")))
    return path


def _args(tmp_path: Path, base: str, *extra: str) -> list[str]:
    return [sys.executable, "-m", "ladr_lab", "run", str(_ladder(tmp_path)), "--input", "How does dedup work?",
            "--model", "openai/fake", "-O", f"api_base={base}", "-O", "api_key=x", "--no-cache", *extra]


def _env() -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    return {**env, "PYTHONPATH": str(ROOT), "TERM": "xterm"}


def _on_terminal(args: list[str]) -> str:
    """Run `args` with stdout on a pseudo-terminal of COLUMNS × LINES; everything it wrote there."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", LINES, COLUMNS, 0, 0))
    proc = subprocess.Popen(args, stdout=slave, stderr=subprocess.PIPE, cwd=ROOT, env=_env())
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:          # EIO: the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    os.close(master)
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err.decode()[-3000:]
    return b"".join(chunks).decode("utf-8").replace("\r\n", "\n")


def _piped(args: list[str]) -> str:
    done = subprocess.run(args, capture_output=True, text=True, cwd=ROOT, env=_env(), timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def screen(raw: str, columns: int = COLUMNS) -> str:
    """What a terminal shows after `raw`: text, newlines, carriage returns, cursor up (ESC[nA), erase to the end of
    the screen (ESC[J) and of the line (ESC[K); a row wraps at `columns` (rows a line wrapped into are joined back,
    so the result reads as the lines written)."""
    rows: list[list[str]] = [[]]
    wrapped: set[int] = set()          # rows that continue the row above
    r = c = 0
    i = 0
    while i < len(raw):
        m = re.match(r"\x1b\[(\d*)([AJK])", raw[i:])
        if m:
            n = int(m.group(1) or 1)
            if m.group(2) == "A":
                r = max(0, r - n)
            elif m.group(2) == "J":
                del rows[r + 1:]
                del rows[r][c:]
                wrapped = {x for x in wrapped if x <= r}
            else:
                del rows[r][c:]
            i += m.end()
            continue
        ch = raw[i]
        i += 1
        if ch == "\n":
            r, c = r + 1, 0
        elif ch == "\r":
            c = 0
        else:
            if c >= columns:
                r, c = r + 1, 0
                wrapped.add(r)
            while len(rows) <= r:
                rows.append([])
            row = rows[r]
            cells = [ch] + [""] * (display_width(ch) - 1)      # a wide character fills two cells
            row.extend([" "] * (c + len(cells) - len(row)))
            row[c:c + len(cells)] = cells
            c += len(cells)
        while len(rows) <= r:
            rows.append([])
    lines: list[str] = []
    for i, x in enumerate(rows):
        text = "".join(x)
        if i in wrapped and lines:
            lines[-1] += text
        else:
            lines.append(text)
    return "\n".join(x.rstrip() for x in lines).rstrip("\n") + "\n"


def _no_speeds(text: str) -> str:
    return re.sub(r" · (prompt [\d,.]+ tok/s|generated [\d,.]+ tok/s|first token [\d.]+ s|[\d.]+ s)", "", text)


def test_on_a_terminal_the_text_streams_and_the_screen_ends_as_the_printout(tmp_path, base):
    Fake.answers, Fake.delay, Fake.first_delay = [REQUEST, FINAL], 0.15, 0.8
    raw = _on_terminal(_args(tmp_path, base))
    # the region was drawn while the calls ran: where, how far, and the text so far
    assert "▸ research · node 1 · round 2 → openai/fake · reading the prompt…" in raw
    assert re.search(r"▸ research · node 1 · round 2 → openai/fake · \d+ tokens · [\d.]+ tok/s", raw)
    assert "  │ Dedup is per step:" in raw and "\x1b[J" in raw
    assert [b.get("stream") for b in Fake.bodies] == [True, True]
    # then erased: the screen holds the printout a pipe gets (and the streamed rounds' speeds)
    Fake.answers, Fake.delay, Fake.first_delay = [REQUEST, FINAL], 0.0, 0.0
    piped = _piped(_args(tmp_path, base))
    assert "\x1b" not in piped and [b.get("stream") for b in Fake.bodies[2:]] == [None, None]
    shown = screen(raw)
    assert _no_speeds(shown) == _no_speeds(piped)
    assert "▸" not in shown and "│ Dedup is per step:" in shown       # the round's own output block, once
    assert re.search(r"generated [\d.]+ tok/s · first token [\d.]+ s", shown)


def test_no_stream_and_json_never_stream(tmp_path, base):
    Fake.answers = [REQUEST, FINAL]
    raw = _on_terminal(_args(tmp_path, base, "--no-stream"))
    assert "\x1b" not in raw and "▸" not in raw and "first token" not in raw
    Fake.answers = [REQUEST, FINAL]
    raw = _on_terminal(_args(tmp_path, base, "--json"))
    assert "\x1b" not in raw and json.loads(raw.strip().splitlines()[-1])["status"] == "completed"
    assert [b.get("stream") for b in Fake.bodies] == [None] * 4


class _Screen:
    def __init__(self) -> None:
        self.raw = []

    def write(self, text: str) -> None:
        self.raw.append(text)

    def flush(self) -> None:
        pass


def test_the_region_keeps_to_its_rows_and_erases_exactly_what_it_drew():
    out = _Screen()
    live = LiveCalls(out, columns=80, lines=10)
    a = TokenStream(CallInfo(step="research", node=1, round=2), model="m")
    b = TokenStream(CallInfo(step="verify", node=3, round=1, caller=("outer/1",)), model="m")
    out.raw.append("before\n")
    live.started(a)
    live.started(b)
    for word in ("alpha ", "beta\n" * 5, "宽字符" * 20, "gamma"):
        a.write(word)
        live.wrote(a, word)
    assert not any("verify" in r for r in live.rows())     # b has written nothing yet, and only just started
    b.started_at -= 1.0                                     # ... it has now waited a second for its first token
    rows = live.rows()
    # 8 rows at most (10 lines less 2), shared: the first call's headline and the last 3 rows of its text (wide
    # characters count two columns), the second call's headline
    assert len(rows) == 5 and all(sum(display_width(ch) for ch in r) <= 79 for r in rows)
    assert re.match(r"▸ research · node 1 · round 2 → m · 4 tokens · [\d.]+ tok/s · [\d.]+ s$", rows[0])
    assert rows[3].startswith("  │ ") and rows[3].endswith("宽字符gamma") and rows[1].startswith("  │ ")
    assert re.match(r"▸ outer/1 · verify · node 3 · round 1 → m · reading the prompt… · [\d.]+ s$", rows[4])
    with live.paused():
        out.raw.append("a printed block\n")
    live.ended(a)
    live.ended(b)
    assert screen("".join(out.raw), 80) == "before\na printed block\n"


@given(st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=200), st.integers(4, 60))
def test_wrapped_rows_fit_their_width_and_keep_every_visible_character(text, width):
    rows = wrap_rows(text, width)
    assert all(sum(display_width(ch) for ch in r) <= max(width, 2) for r in rows)
    kept = "".join(ch for ch in text.replace("\t", "    ") if ch >= " " and ch != "\x7f" and ch != "\n")
    assert "".join(rows) == kept and len(rows) >= text.count("\n") + 1
