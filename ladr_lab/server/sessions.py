"""MCP sessions over streamable HTTP, bounded: an idle lifetime and a cap that ends the least recently used.

The MCP SDK keeps a stateful session (its transport, a task, memory streams: about 36 KiB) for every
`initialize` until the client deletes it. Its own bounds do not fit a server that must never lock a client
out: its idle timer counts an open `GET` stream as activity (a client that keeps its event stream open holds
its session for ever), and its session cap answers a new client `503` once full (a flood of `initialize`
calls would lock everyone out for the idle timeout). `SessionKeeper`, ASGI middleware in front of the SDK's
app, keeps the policy instead and leaves the mechanics to the SDK:

- a session's last use is the start and the end of its last request other than its `GET` stream (a call in
  flight keeps it; a stream does not); one idle for `idle_timeout` seconds is ended;
- when an `initialize` makes one session more than `max_sessions`, the least recently used session is ended
  (one with no call in flight first);
- a session is ended the way a client ends it, by a `DELETE` with its `mcp-session-id`, sent to the SDK's app
  from here: the SDK closes its streams (its `GET` stream ends) and forgets it, and any later request naming it
  gets the SDK's `404` "Session not found", on which a client starts a new session.

It imports nothing of the SDK: it reads the `mcp-session-id` header the SDK sets on an `initialize` answer.
"""
from __future__ import annotations

import asyncio
import math
from collections import OrderedDict
from collections.abc import Awaitable
from typing import Any

from .asgi import Receive, Send

__all__ = ["MAX_SESSIONS", "SESSION_HEADER", "SESSION_IDLE_TIMEOUT", "SessionKeeper", "check_session_limits"]

SESSION_IDLE_TIMEOUT = 1800.0   # seconds: the SDK's own default idle period (30 minutes)
MAX_SESSIONS = 128              # half the default --max-connections: event streams alone never fill the limit
SESSION_HEADER = b"mcp-session-id"

def check_session_limits(idle_timeout: float, max_sessions: int) -> None:
    """Raise ValueError, naming the option, unless the idle lifetime is positive and the cap at least 1."""
    if not (isinstance(idle_timeout, int | float) and math.isfinite(idle_timeout) and idle_timeout > 0):
        raise ValueError("session_idle_timeout must be a positive number of seconds")
    if not (isinstance(max_sessions, int) and max_sessions >= 1):
        raise ValueError("max_sessions must be at least 1")


def _header(headers: Any, name: bytes) -> str | None:
    for key, value in headers or ():
        if key.lower() == name:
            return bytes(value).decode("latin-1")
    return None


class SessionKeeper:
    """ASGI middleware that ends an MCP session idle past `idle_timeout`, and past `max_sessions` the least
    recently used one (module docstring); `sessions` is how many it holds."""

    def __init__(self, app: Any, idle_timeout: float = SESSION_IDLE_TIMEOUT, max_sessions: int = MAX_SESSIONS,
                 path: str = "/mcp") -> None:
        check_session_limits(idle_timeout, max_sessions)
        self.app = app
        self.idle_timeout = float(idle_timeout)
        self.max_sessions = max_sessions
        self.path = path
        self.expired = 0    # sessions ended for idleness
        self.evicted = 0    # sessions ended to stay within max_sessions
        self._used: OrderedDict[str, float] = OrderedDict()   # session -> last use (loop time), least recent first
        self._calls: dict[str, int] = {}                       # session -> requests in flight (its stream aside)
        self._timer: asyncio.TimerHandle | None = None
        self._tasks: set[asyncio.Task] = set()

    @property
    def sessions(self) -> int:
        """How many sessions are held now."""
        return len(self._used)

    async def __call__(self, scope: dict, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] != self.path:
            await self.app(scope, receive, send)
            return
        session = _header(scope["headers"], SESSION_HEADER)
        if session is None:
            await self.app(scope, receive, self._watch_opening(send))
            return
        counted = scope["method"] != "GET" and session in self._used
        if counted:
            self._calls[session] = self._calls.get(session, 0) + 1
            self._touch(session)
        status = 0

        async def watch(message: dict) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, watch)
        finally:
            if counted:
                left = self._calls.get(session, 1) - 1
                if left > 0:
                    self._calls[session] = left
                else:
                    self._calls.pop(session, None)
                if session in self._used:
                    self._touch(session)
            if status == 404 or (scope["method"] == "DELETE" and 200 <= status < 300):
                self._forget(session)   # the SDK no longer has it (ended, or the client deleted it)

    def _watch_opening(self, send: Send) -> Send:
        """`send` for a request without a session: the SDK's answer to an `initialize` names the new session."""

        async def watch(message: dict) -> None:
            if message["type"] == "http.response.start" and message["status"] < 400:
                new = _header(message.get("headers"), SESSION_HEADER)
                if new is not None and new not in self._used:
                    self._touch(new)
                    victims = self._over_the_cap(new)
                    if victims:   # ended before the client hears of its session: the cap holds at every answer
                        await asyncio.shield(asyncio.gather(*(self._spawn(self._end(v)) for v in victims)))
            await send(message)

        return watch

    def _touch(self, session: str) -> None:
        self._used[session] = asyncio.get_running_loop().time()
        self._used.move_to_end(session)
        self._arm()

    def _forget(self, session: str) -> None:
        self._used.pop(session, None)
        self._calls.pop(session, None)

    def _over_the_cap(self, new: str) -> list[str]:
        """Forget the least recently used sessions past `max_sessions` (idle ones first) and return them."""
        victims: list[str] = []
        while len(self._used) > self.max_sessions:
            order = [s for s in self._used if s != new]
            victim = next((s for s in order if not self._calls.get(s)), order[0])
            self._forget(victim)
            victims.append(victim)
        self.evicted += len(victims)
        return victims

    def _arm(self) -> None:
        """Set the one timer to the earliest deadline of a session with no call in flight."""
        if self._timer is not None:
            return
        oldest = next((t for s, t in self._used.items() if not self._calls.get(s)), None)
        if oldest is None:
            return
        loop = asyncio.get_running_loop()
        self._timer = loop.call_later(max(0.0, oldest + self.idle_timeout - loop.time()), self._sweep)

    def _sweep(self) -> None:
        """End every session idle past `idle_timeout` (a call in flight keeps one), then re-arm."""
        self._timer = None
        now = asyncio.get_running_loop().time()
        expired = []
        for session, used in self._used.items():   # least recent first: stop at the first one still fresh
            if self._calls.get(session):
                continue
            if now - used < self.idle_timeout:
                break
            expired.append(session)
        for session in expired:
            self._forget(session)
            self._spawn(self._end(session))
        self.expired += len(expired)
        self._arm()

    def _spawn(self, work: Awaitable[None]) -> asyncio.Task:
        task = asyncio.ensure_future(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def _end(self, session: str) -> None:
        """End `session` as a client would: a `DELETE` naming it, answered by the SDK's app (the answer dropped)."""
        scope = {"type": "http", "asgi": {"version": "3.0", "spec_version": "2.3"}, "http_version": "1.1",
                 "method": "DELETE", "scheme": "http", "path": self.path, "raw_path": self.path.encode("ascii"),
                 "root_path": "", "query_string": b"", "client": None, "server": None, "state": {},
                 "headers": [(b"host", b"127.0.0.1"), (SESSION_HEADER, session.encode("latin-1"))]}
        sent = False

        async def receive() -> dict:
            nonlocal sent
            if sent:
                return {"type": "http.disconnect"}
            sent = True
            return {"type": "http.request", "body": b"", "more_body": False}

        async def drop(message: dict) -> None:
            return None

        try:
            await self.app(scope, receive, drop)
        except Exception:  # noqa: BLE001 - the server is stopping: the session goes with it
            pass
