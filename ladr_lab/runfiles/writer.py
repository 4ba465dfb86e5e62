"""The run-file writer: a trace listener that keeps per-agent `.history` and `.log` files in a run folder.

An agent is a step's writer name: the step id, or ``<step>@<depth>`` for a child run's step. The episode is
the run's loop iteration; the conversation is ``node-<N>`` for a node's records and ``-`` outside any node.
Write failures never stop the run: they are logged and kept in `RunFilesWriter.errors`.
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import IO, Any

from ladr_lab.runfiles.records import NO_CONVERSATION, format_record, format_timestamp

HISTORY_SUFFIX = ".history"
LOG_SUFFIX = ".log"
RUNNING = "running"
FINISHED = "finished"
_MAX_STEM = 200
_UNSAFE = re.compile(r"[^A-Za-z0-9_.@-]")
_log = logging.getLogger(__name__)


def safe_agent_name(name: str) -> str:
    """`name` made safe as a file stem and a record field: [A-Za-z0-9_.@-] kept, others `_`, no leading dot."""
    safe = _UNSAFE.sub("_", str(name))
    stripped = safe.lstrip(".")
    safe = "_" * (len(safe) - len(stripped)) + stripped
    if not safe:
        return "_"
    if len(safe) > _MAX_STEM:  # file names are at most 255 bytes; keep long ids apart with a digest
        safe = safe[:_MAX_STEM - 9] + "-" + hashlib.sha1(safe.encode()).hexdigest()[:8]
    return safe


def agent_name(step: Any, depth: int | None = 0) -> str:
    """The agent (writer) name of a step: its id, ``<step>@<depth>`` in a child run, made safe for a file."""
    base = str(step) if step is not None else "_"
    return safe_agent_name(f"{base}@{depth}" if depth else base)


def conversation_id(node: Any) -> str:
    """The conversation of a node's records, ``node-<N>``; ``-`` outside any node."""
    return NO_CONVERSATION if node is None else f"node-{node}"


def _utc_now() -> datetime:
    return datetime.now(timezone.utc)


def _json(value: Any) -> str:
    # json.dumps escapes every C0 control character; these three are line boundaries to str.splitlines too.
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text.replace("\x85", "\\u0085").replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")


def _iteration(value: Any, default: int = 1) -> int:
    try:
        return int(value) if value is not None else default
    except (TypeError, ValueError):
        return default


@dataclass
class _Agent:
    name: str
    iteration: int = 0
    state: str = RUNNING
    in_step: bool = False  # a step_start not yet matched by a step_end
    started: set[int] = field(default_factory=set)


class RunFilesWriter:
    """A trace listener writing each agent's `<agent>.history` and `<agent>.log` in AgentRecordFormat."""

    def __init__(self, run_dir: str | Path, clock: Callable[[], datetime] | None = None) -> None:
        self.run_dir = Path(run_dir)
        self.clock = clock or _utc_now
        self.errors: list[str] = []
        self._agents: dict[str, _Agent] = {}
        self._files: dict[Path, IO[str]] = {}
        self._failed: set[Path] = set()
        self._lock = threading.Lock()

    # ---- the listener ----------------------------------------------------------------------------------
    def __call__(self, event) -> None:
        """Write the records of one trace event (other event types are ignored)."""
        event = event.to_dict() if hasattr(event, "to_dict") else event
        handler = getattr(self, "_on_" + str(event.get("type")), None)
        if handler is None:
            return
        with self._lock:
            handler(event, format_timestamp(self.clock()))

    @property
    def agents(self) -> list[str]:
        """The agent names seen so far, in order of first appearance."""
        return list(self._agents)

    def paths(self, agent: str) -> tuple[Path, Path]:
        """The `.history` and `.log` paths of an agent name (as `agent_name` gives it)."""
        stem = safe_agent_name(agent)
        return self.run_dir / (stem + HISTORY_SUFFIX), self.run_dir / (stem + LOG_SUFFIX)

    def close(self) -> None:
        """Close every open file; a later event opens its files again for appending."""
        with self._lock:
            self._close_all()

    def __enter__(self) -> RunFilesWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        # a run that never reached run_end must not leak its files
        files = getattr(self, "_files", None)
        if files:
            self._close_all()

    # ---- events ----------------------------------------------------------------------------------------
    def _agent(self, event: dict) -> _Agent:
        name = agent_name(event.get("step"), event.get("depth") or 0)
        agent = self._agents.get(name)
        if agent is None:
            agent = self._agents[name] = _Agent(name)
        return agent

    def _enter(self, agent: _Agent, iteration: int, ts: str) -> None:
        """Mark the agent running in `iteration`, writing the episode start the first time."""
        agent.iteration, agent.state = iteration, RUNNING
        if iteration not in agent.started:
            agent.started.add(iteration)
            text = f"has started episode {iteration}."
            self._history(agent, ts, NO_CONVERSATION, text)
            self._log(agent, ts, "INFO", NO_CONVERSATION, text)

    def _on_step_start(self, e: dict, ts: str) -> None:
        agent = self._agent(e)
        self._enter(agent, _iteration(e.get("iteration")), ts)
        agent.in_step = True
        parts = [str(e["step_type"])] if e.get("step_type") else []
        if e.get("nodes") is not None:
            parts.append(f"{e['nodes']} node{'' if e['nodes'] == 1 else 's'}")
        self._log(agent, ts, "INFO", NO_CONVERSATION, "step started" + (f": {', '.join(parts)}" if parts else ""))

    def _node_agent(self, e: dict, ts: str, *, iteration_from_event: bool) -> _Agent:
        """The agent of a node's event, entering its episode if no step_start announced it."""
        agent = self._agent(e)
        iteration = _iteration(e.get("iteration"), agent.iteration or 1) if iteration_from_event \
            else (agent.iteration or 1)
        if iteration not in agent.started or agent.iteration != iteration:
            self._enter(agent, iteration, ts)
        return agent

    def _on_llm_call(self, e: dict, ts: str) -> None:
        agent = self._node_agent(e, ts, iteration_from_event=True)
        conv = conversation_id(e.get("node"))
        rnd = e.get("round", "?")
        messages = [m for m in (e.get("messages") or []) if isinstance(m, dict)]
        if rnd == 1:
            for m in messages:
                if m.get("role") == "system":
                    self._history(agent, ts, conv, f"was told the system prompt: {m.get('content', '')}")
        user = [m for m in messages if m.get("role") == "user"]
        if user:
            self._history(agent, ts, conv, f"was told (round {rnd}): {user[-1].get('content', '')}")
        if e.get("output") is not None:
            self._history(agent, ts, conv, f"said (round {rnd}): {e['output']}")
        verdict = e.get("request_match") or "answer"
        line = f"round {rnd}: {verdict}" + (" (forced)" if e.get("forced_final") else "")
        if e.get("reason"):
            line += f" \u2014 {e['reason']}"
        self._log(agent, ts, "INFO", conv, line)
        for f in e.get("fetched") or []:
            if isinstance(f, dict):
                self._log(agent, ts, "INFO", conv, _fetched_line(f))
        if e.get("request") is not None:
            self._log(agent, ts, "DEBUG", conv, f"request: {_json(e['request'])}")
        self._log(agent, ts, "DEBUG", conv, f"messages: {_json(e.get('messages'))}")

    def _on_write(self, e: dict, ts: str) -> None:
        agent = self._node_agent(e, ts, iteration_from_event="iteration" in e)
        how = ", ".join(str(p) for p in (e.get("policy"), e.get("mechanism"), e.get("branch")) if p)
        line = f"write {e.get('target', '?')}" + (f" ({how})" if how else "") + f": {e.get('status', '?')}"
        if e.get("reason"):
            line += f" \u2014 {e['reason']}"
        self._log(agent, ts, "INFO", conversation_id(e.get("node")), line)

    def _on_gate(self, e: dict, ts: str) -> None:
        agent = self._node_agent(e, ts, iteration_from_event="iteration" in e)
        action = str(e.get("action", "?"))
        if e.get("jump"):
            action = f"jump to {e['jump']}" if action == "jump" else f"{action}, jump to {e['jump']}"
        line = f"gate {e.get('branch', '?')}: {action}"
        if e.get("reason"):
            line += f" \u2014 {e['reason']}"
        self._log(agent, ts, "INFO", conversation_id(e.get("node")), line)

    def _on_step_end(self, e: dict, ts: str) -> None:
        agent = self._agent(e)
        iteration = _iteration(e.get("iteration"), agent.iteration or 1)
        if iteration not in agent.started:
            self._enter(agent, iteration, ts)
        agent.iteration, agent.state, agent.in_step = iteration, FINISHED, False
        parts = []
        if e.get("survivors") is not None:
            nodes = e.get("nodes")
            parts.append(f"{e['survivors']}" + (f" of {nodes}" if nodes is not None else "") + " survived")
        if e.get("jump"):
            parts.append(f"jump to {e['jump']}")
        self._log(agent, ts, "INFO", NO_CONVERSATION, "step finished" + (f": {', '.join(parts)}" if parts else ""))
        text = f"has finished episode {iteration}."
        self._history(agent, ts, NO_CONVERSATION, text)
        self._log(agent, ts, "INFO", NO_CONVERSATION, text)

    def _on_run_end(self, e: dict, ts: str) -> None:
        if e.get("depth"):  # a child run's end is not the run's
            return
        status = e.get("status", "?")
        for agent in self._agents.values():
            if agent.in_step:
                line = f"run ended ({status}) before the step finished"
                if e.get("error"):
                    line += f": {e['error']}"
                self._log(agent, ts, "WARN", NO_CONVERSATION, line)
        self._close_all()

    # ---- files -----------------------------------------------------------------------------------------
    def _history(self, agent: _Agent, ts: str, conv: str, message: str) -> None:
        self._append(self.run_dir / (agent.name + HISTORY_SUFFIX),
                     format_record(ts, agent.name, message, state=agent.state, conversation=conv))

    def _log(self, agent: _Agent, ts: str, level: str, conv: str, message: str) -> None:
        self._append(self.run_dir / (agent.name + LOG_SUFFIX),
                     format_record(ts, agent.name, message, state=agent.state, conversation=conv, level=level))

    def _append(self, path: Path, text: str) -> None:
        if path in self._failed:
            return
        try:
            fh = self._files.get(path)
            if fh is None:
                fh = self._files[path] = self._open(path)
            fh.write(text)  # one write a record, so a reader rarely sees half of one
            fh.flush()
        except OSError as exc:
            self._failed.add(path)
            self._files.pop(path, None)
            msg = f"run file {path} not written: {exc}"
            self.errors.append(msg)
            _log.warning(msg)

    def _open(self, path: Path) -> IO[str]:
        self.run_dir.mkdir(parents=True, exist_ok=True)
        # O_NOFOLLOW: a link planted at an agent's file must not carry the write outside the run folder.
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0)
        if not hasattr(os, "O_NOFOLLOW") and path.is_symlink():
            raise OSError(f"{path.name} is a symbolic link")
        fd = os.open(path, flags, 0o644)
        try:
            return os.fdopen(fd, "a", encoding="utf-8", errors="backslashreplace", newline="\n")
        except BaseException:
            os.close(fd)
            raise

    def _close_all(self) -> None:
        files, self._files = self._files, {}
        for path, fh in files.items():
            try:
                fh.close()
            except OSError as exc:
                self.errors.append(f"run file {path} not closed cleanly: {exc}")


def _fetched_line(f: dict) -> str:
    line = f"fetched {f.get('path', '?')} [{f.get('mode', '?')}]"
    if f.get("chars") is not None:
        line += f" {f['chars']} chars"
    status = f.get("status")
    if status not in (None, "fetched"):
        line += f" ({status})"
    return line
