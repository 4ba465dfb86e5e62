"""The run-file writer: a trace listener that keeps per-agent `.history` and `.log` files in a run folder.

An agent is a step's writer name (`names.agent_name`): the step id, or ``<step>@<call step>#<node>`` for a
step of a child run, so parallel child runs of a `call` step each have their own files, episodes and
conversations. An episode is one loop iteration of the agent: each new one is one more than the last episode
the folder already holds for that agent, so runs into the same folder continue the numbering. A conversation
is ``<run id>/node-<N>`` (the engine's run id from `run_start`, else the writer's own), unique to its run and
node; ``-`` outside any node. Timestamps are local time, as
logback writes by default (``utc=True`` for UTC). Write failures never stop the run: they are logged and kept
in `RunFilesWriter.errors`.
"""
from __future__ import annotations

import json
import logging
import os
import re
import secrets
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import IO, Any

from ..trace import (
    Call,
    Event,
    Fetched,
    Gate,
    LlmCall,
    LlmCallFailed,
    RunEnd,
    RunStart,
    StepEnd,
    StepStart,
    Write,
)
from .names import agent_name, encode_name
from .records import NO_CONVERSATION, format_record, format_timestamp, parse_record_line


def _typed(event: Event | Mapping[str, Any]) -> Event:
    """A trace event as a typed event (a dict, as older callers pass, is read with ``Event.from_dict``)."""
    return event if isinstance(event, Event) else Event.from_dict(event)


HISTORY_SUFFIX = ".history"
LOG_SUFFIX = ".log"
RUNNING = "running"
FINISHED = "finished"
EPISODE_MARKER_RE = re.compile(r"has started episode (\d+)\.")
_TAIL_BLOCK = 1 << 16
_log = logging.getLogger(__name__)


def conversation_id(run_id: str, node: Any) -> str:
    """The conversation of a node's records in a run, ``<run id>/node-<N>``; ``-`` outside any node."""
    return NO_CONVERSATION if node is None else f"{run_id}/node-{node}"


def new_run_id(when: datetime | None = None) -> str:
    """A run id unique to a run and readable: its start time and four random hex digits."""
    return f"{(when or datetime.now()).strftime('%Y%m%d-%H%M%S')}-{secrets.token_hex(2)}"


def last_episode(path: str | Path, agent: str) -> int:
    """The number of the last ``has started episode N.`` record of `agent` in the file at `path` (0 if none)."""
    try:
        fh = open(path, "rb")  # noqa: SIM115 - closed below
    except OSError:
        return 0
    with fh:
        end = fh.seek(0, os.SEEK_END)
        carry = b""
        while end > 0:
            start = max(0, end - _TAIL_BLOCK)
            fh.seek(start)
            block = fh.read(end - start) + carry
            lines = block.split(b"\n")
            # the first piece may be a partial line unless the block starts the file
            carry, lines = (b"", lines) if start == 0 else (lines[0], lines[1:])
            for raw in reversed(lines):
                if b"has started episode" not in raw:
                    continue
                fields = parse_record_line(raw.rstrip(b"\r").decode("utf-8", "replace"))
                if fields and fields["agent"] == agent:
                    m = EPISODE_MARKER_RE.fullmatch(fields["message"])
                    if m:
                        return int(m.group(1))
            end = start
    return 0


def _json(value: Any) -> str:
    # json.dumps escapes every C0 control character; these three are line boundaries to str.splitlines too.
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text.replace("\x85", "\\u0085").replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")


def _iteration(value: Any, default: int = 1) -> int:
    try:
        return int(value) if value is not None else default
    except (TypeError, ValueError):
        return default


def _callers_of(raw: Any, depth: int = 0) -> tuple[tuple[str, str], ...] | None:
    """The calls that led to an event's run, outermost first, when the event says: its ``caller``, a list of
    ``"step/node"`` (the engine's trace), or of ``[step, node]`` pairs. None when it does not say."""
    if raw is None or (not raw and depth):
        return None
    out = []
    for c in raw:
        if isinstance(c, str):
            step, _, node = c.rpartition("/")  # a step id may hold "/": the node is after the last one
        elif isinstance(c, dict):
            step, node = str(c.get("step")), str(c.get("node"))
        else:
            step, node = c
        out.append((str(step), str(node)))
    return tuple(out)


@dataclass
class _Agent:
    name: str
    last_episode: int = 0  # the highest episode written so far, in this run or before it
    episodes: dict[int, int] = field(default_factory=dict)  # loop iteration -> episode
    episode: int | None = None
    iteration: int | None = None
    state: str = RUNNING
    in_step: bool = False  # a step_start not yet matched by a step_end


class RunFilesWriter:
    """A trace listener writing each agent's `<agent>.history` and `<agent>.log` in AgentRecordFormat."""

    def __init__(self, run_dir: str | Path, clock: Callable[[], datetime] | None = None, *,
                 utc: bool = False, run_id: str | None = None) -> None:
        self.run_dir = Path(run_dir)
        self.utc = utc
        self.clock = clock or ((lambda: datetime.now(timezone.utc)) if utc else datetime.now)
        self.run_id = run_id or new_run_id(self.clock())
        self._run_id_given = run_id is not None
        self.errors: list[str] = []
        self.warnings: list[str] = []
        self._agents: dict[str, _Agent] = {}
        self._calls: dict[int, list[tuple[tuple[str, str], ...]]] = {}  # child depth -> running calls
        self._files: dict[Path, IO[str]] = {}
        self._failed: set[Path] = set()
        self._lock = threading.Lock()

    # ---- the listener ----------------------------------------------------------------------------------
    def __call__(self, event: Event | Mapping[str, Any]) -> None:
        """Write the records of one trace event (other event types are ignored)."""
        e = _typed(event)
        handler = getattr(self, "_on_" + e.type, None)
        if handler is None:
            return
        with self._lock:
            handler(e, format_timestamp(self.clock()))

    @property
    def agents(self) -> list[str]:
        """The agent names seen so far, in order of first appearance."""
        return list(self._agents)

    def paths(self, agent: str) -> tuple[Path, Path]:
        """The `.history` and `.log` paths of an agent name (as `agent_name` gives it)."""
        return self.run_dir / (agent + HISTORY_SUFFIX), self.run_dir / (agent + LOG_SUFFIX)

    def current(self, step: str, node: int | None = None,
                caller: Sequence[str | tuple[str, Any]] = ()) -> tuple[int | None, str]:
        """The current episode of a step's agent (None before its first) and the conversation of `node`;
        `caller` is the step's run's ``caller`` (``"step/node"`` of each call above it, outermost first)."""
        name = agent_name(step, _callers_of(list(caller)) or ())
        agent = self._agents.get(name)
        return (agent.episode if agent else None), conversation_id(self.run_id, node)

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

    # ---- who wrote an event ----------------------------------------------------------------------------
    def _chain(self, e: Event) -> tuple[tuple[str, str], ...] | None:
        """The calls that led to the event's run (its ``caller``, else the one `call` running at its depth); None
        when a child's event cannot be placed."""
        depth = e.depth or 0
        given = _callers_of(e.caller if e.caller or not depth else None, depth)
        if given is not None:
            return given
        if not depth:
            return ()
        running = self._calls.get(depth, [])
        if len(running) == 1:
            return running[0]
        if running:
            # parallel children and events that do not say which: they share one agent, and we say so once
            msg = (f"parallel child runs at depth {depth} cannot be told apart (the events carry no `caller`); "
                   f"their records share one agent")
            if msg not in self.warnings:
                self.warnings.append(msg)
                _log.warning(msg)
            return (*running[0][:-1], (running[0][-1][0], "*"))
        return None

    def _agent(self, e: Event) -> _Agent:
        chain = self._chain(e)
        step = getattr(e, "step", None)
        if chain is None:  # a child event with no call to attach it to: keep it apart by depth
            name = f"{encode_name('' if step is None else str(step))}@{e.depth}"
        else:
            name = agent_name(step, chain)
        agent = self._agents.get(name)
        if agent is None:
            last = max(last_episode(self.run_dir / (name + HISTORY_SUFFIX), name),
                       last_episode(self.run_dir / (name + LOG_SUFFIX), name))
            agent = self._agents[name] = _Agent(name, last_episode=last)
        return agent

    def _enter(self, agent: _Agent, iteration: int, ts: str) -> None:
        """Make `iteration` the agent's current one, starting a new episode the first time it is seen."""
        agent.iteration, agent.state = iteration, RUNNING
        if iteration in agent.episodes:
            agent.episode = agent.episodes[iteration]
            return
        agent.last_episode += 1
        agent.episode = agent.episodes[iteration] = agent.last_episode
        text = f"has started episode {agent.episode}."
        self._history(agent, ts, NO_CONVERSATION, text)
        self._log(agent, ts, "INFO", NO_CONVERSATION, text)

    def _node_agent(self, e: Event, ts: str) -> _Agent:
        """The agent of a node's event, entering its episode if no step_start announced it."""
        agent = self._agent(e)
        iteration = _iteration(getattr(e, "iteration", None), agent.iteration or 1)
        if agent.iteration != iteration or agent.episode is None:
            self._enter(agent, iteration, ts)
        return agent

    def _conv(self, e: Event) -> str:
        return conversation_id(self.run_id, getattr(e, "node", None))

    # ---- events ----------------------------------------------------------------------------------------
    def _on_run_start(self, e: RunStart, ts: str) -> None:
        # the engine's run id names the run in its trace too: conversations then point at that trace
        if e.run_id and not e.depth and not self._run_id_given:
            self.run_id = str(e.run_id)

    def _on_step_start(self, e: StepStart, ts: str) -> None:
        agent = self._agent(e)
        iteration = _iteration(e.iteration)
        self._enter(agent, iteration, ts)
        agent.in_step = True
        parts = [str(e.step_type)] if e.step_type else []
        if e.nodes is not None:
            parts.append(f"{e.nodes} node{'' if e.nodes == 1 else 's'}")
        parts.append(f"iteration {iteration}")
        self._log(agent, ts, "INFO", NO_CONVERSATION, f"step started: {', '.join(parts)}")

    def _on_llm_call(self, e: LlmCall, ts: str) -> None:
        agent = self._node_agent(e, ts)
        conv = self._conv(e)
        rnd = e.round if e.round is not None else "?"
        messages = [m for m in (e.messages or []) if isinstance(m, dict)]
        if rnd == 1:
            for m in messages:
                if m.get("role") == "system":
                    self._history(agent, ts, conv, f"was told the system prompt: {m.get('content', '')}")
        user = [m for m in messages if m.get("role") == "user"]
        if user:
            self._history(agent, ts, conv, f"was told (round {rnd}): {user[-1].get('content', '')}")
        if e.output is not None:
            self._history(agent, ts, conv, f"said (round {rnd}): {e.output}")
        verdict = e.request_match or "answer"
        line = f"round {rnd}: {verdict}" + (" (forced)" if e.forced_final else "")
        if e.reason:
            line += f" \u2014 {e.reason}"
        self._log(agent, ts, "INFO", conv, line)
        for f in e.fetched or ():
            self._log(agent, ts, "INFO", conv, _fetched_line(f))
        if e.request is not None:
            self._log(agent, ts, "DEBUG", conv, f"request: {_json(e.request)}")
        self._log(agent, ts, "DEBUG", conv, f"messages: {_json(e.messages)}")

    def _on_llm_error(self, e: LlmCallFailed, ts: str) -> None:
        agent = self._node_agent(e, ts)
        rnd = e.round if e.round is not None else "?"
        self._log(agent, ts, "ERROR", self._conv(e), f"round {rnd} failed: {e.error or '?'}")

    def _on_write(self, e: Write, ts: str) -> None:
        agent = self._node_agent(e, ts)
        how = ", ".join(str(p) for p in (e.policy, e.mechanism, e.branch) if p)
        line = f"write {e.target or '?'}" + (f" ({how})" if how else "") + f": {e.status or '?'}"
        if e.reason:
            line += f" \u2014 {e.reason}"
        self._log(agent, ts, "INFO", self._conv(e), line)

    def _on_gate(self, e: Gate, ts: str) -> None:
        agent = self._node_agent(e, ts)
        action = str(e.action or "?")
        if e.jump:
            action = f"jump to {e.jump}" if action == "jump" else f"{action}, jump to {e.jump}"
        line = f"gate {e.branch or '?'}: {action}"
        if e.reason:
            line += f" \u2014 {e.reason}"
        self._log(agent, ts, "INFO", self._conv(e), line)

    def _on_call(self, e: Call, ts: str) -> None:
        agent = self._node_agent(e, ts)
        status = str(e.status or "?")
        chain = self._chain(e)
        child = None
        if chain is not None and e.child_depth is not None:
            me = (*chain, (str(e.step), str(e.node)))
            running = self._calls.setdefault(int(e.child_depth), [])
            if status == "started":
                running.append(me)
                child = "@".join(f"{encode_name(s)}#{encode_name(n)}" for s, n in reversed(me))
            elif status != "depth_limit" and me in running:
                running.remove(me)
        line = f"call {status}" + (f": child agents <step>@{child}" if child else "")
        if e.reason:
            line += f" \u2014 {e.reason}"
        self._log(agent, ts, "INFO", self._conv(e), line)

    def _on_step_end(self, e: StepEnd, ts: str) -> None:
        agent = self._agent(e)
        iteration = _iteration(e.iteration, agent.iteration or 1)
        if agent.iteration != iteration or agent.episode is None:
            self._enter(agent, iteration, ts)
        agent.state, agent.in_step = FINISHED, False
        parts = []
        if e.survivors is not None:
            parts.append(f"{e.survivors}" + (f" of {e.nodes}" if e.nodes is not None else "") + " survived")
        if e.jump:
            parts.append(f"jump to {e.jump}")
        self._log(agent, ts, "INFO", NO_CONVERSATION, "step finished" + (f": {', '.join(parts)}" if parts else ""))
        text = f"has finished episode {agent.episode}."
        self._history(agent, ts, NO_CONVERSATION, text)
        self._log(agent, ts, "INFO", NO_CONVERSATION, text)

    def _on_run_end(self, e: RunEnd, ts: str) -> None:
        if e.depth:  # a child run's end is not the run's
            return
        for agent in self._agents.values():
            if agent.in_step:
                line = f"run ended ({e.status or '?'}) before the step finished"
                if e.error:
                    line += f": {e.error}"
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
        flags = os.O_RDWR | os.O_APPEND | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0)
        if not hasattr(os, "O_NOFOLLOW") and path.is_symlink():
            raise OSError(f"{path.name} is a symbolic link")
        fd = os.open(path, flags, 0o644)
        try:
            size = os.fstat(fd).st_size
            # a file whose last line has no newline (another writer stopped mid-line) would glue our first
            # record onto it: every record starts at a line start
            if size and os.pread(fd, 1, size - 1) != b"\n":   # readers split at \n only: a bare \r ends no line
                os.write(fd, b"\n")
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


def _fetched_line(f: Fetched) -> str:
    line = f"fetched {f.path or '?'} [{f.mode or '?'}]"
    if f.chars is not None:
        line += f" {f.chars} chars"
    if f.status not in (None, "", "fetched"):
        line += f" ({f.status})"
    return line
