"""Helpers for run-file tests: write records the way a host does, and search them."""
from __future__ import annotations

from pathlib import Path

from ladr_lab.runfiles import Reading, Record, RecordInterpreter, format_record


def rec(ts: str, agent: str, message: str, conv: str | None = "-", *, level: str | None = None,
        state: str = "running") -> str:
    """One record as a host writes it (conv None: a line without the conversation field)."""
    text = format_record(f"2026-10-21 {ts}", agent, message, state=state, conversation="-" if conv is None else conv,
                         level=level)
    if conv is None:
        text = text.replace(" [-] ", " ", 1)
    return text


class HostInterpreter(RecordInterpreter):
    """A host interpreter for tests: ``told: X`` and ``said: X`` records are messages, ``noise`` is left out."""

    name = "test-host"

    def read(self, file: str, line: int, record: Record) -> Reading:
        m = record.message
        if m.startswith("told: "):
            return Reading.told(m, m[6:])
        if m.startswith("said: "):
            return Reading.said(m, m[6:])
        if m == "noise":
            return Reading.left_out()
        return Reading.note(m)


def search(run_dir: Path, query: str, owner: str = "Alice", **kw):
    """One search with a fresh retriever (kw: interpreter, masker, then the request)."""
    from ladr_lab.runfiles import RunFileRetriever

    opts = {k: kw.pop(k) for k in ("interpreter", "masker") if k in kw}
    with RunFileRetriever(run_dir, owner, **opts) as r:
        return r.search(query, **kw)
