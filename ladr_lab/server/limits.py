"""The HTTP faces' bounds against floods: connection limit, eviction, read timeouts, fast 503.

`HttpLimits` holds the numbers; `limited_protocol(limits)` builds the connection protocol uvicorn runs,
a subclass of its h11 protocol (uvicorn has no header-read timeout for h11, and its own
`limit_concurrency` answers 503 only once a request has arrived, holding the descriptor meanwhile). Both
HTTP faces run on it: the JSON-RPC `HttpServer` and the MCP `McpHttpServer` (`serving.Serving._bind`).
Each connection is in one phase: `wait` (no request head yet: nothing sent, half a head, or idle
keep-alive), `body` (reading a request body, or dropping a refused one), `busy` (a request in flight),
`stream` (a `GET` whose answer has begun and goes on: MCP's standalone server-sent-event stream, which
listens for as long as its session lasts). A `wait` connection is closed `header_timeout` seconds after its
first byte (for a new connection: after it was opened), or `keepalive_timeout` seconds after its last answer
when nothing more came; a `body` phase longer than `body_timeout` is answered `408` (or closed, if the answer
has started). A client that stops reading its answer (the transport's buffer stays full for `send_timeout`
seconds) has its connection aborted, whatever its phase: it would otherwise hold a place in the limit for
ever. When a new connection would pass `max_connections`, the connection waiting longest (phase `wait`) is
closed to make room; failing that, the body that has been arriving longest, once past `SLOW_BODY` seconds (a
body on a loopback connection arrives in milliseconds: a trickle is a slow-body flood), is answered `408` and
closed; failing that, the oldest `stream` is closed (a listener: its client opens it again, and a stream never
holds a request's answer); only when every connection is busy with a request or a fresh body is the new one
answered `503` with `Retry-After` at once and closed.
Tested against uvicorn 0.30-0.54 internals (tests/server/test_http_limits.py guards them).
"""
from __future__ import annotations

import socket
from dataclasses import dataclass
from typing import Any

__all__ = ["HttpLimits", "REJECT_LINGER", "SLOW_BODY", "limited_protocol"]

SLOW_BODY = 1.0       # seconds after which a body still arriving may be evicted to admit a new connection
REJECT_LINGER = 1.0   # seconds a refused connection keeps reading (and dropping) so its 503 is not lost to a reset
_BUSY_BODY = b'{"error":"the server is busy: retry later"}'


@dataclass(frozen=True)
class HttpLimits:
    """How many connections the HTTP server holds at once, and how long each may take to speak."""

    max_connections: int = 256
    header_timeout: float = 10.0
    body_timeout: float = 30.0
    keepalive_timeout: float = 5.0
    retry_after: int = 1
    send_timeout: float = 30.0

    def __post_init__(self) -> None:
        if self.max_connections < 1:
            raise ValueError("max_connections must be at least 1")
        for name in ("header_timeout", "body_timeout", "keepalive_timeout", "send_timeout"):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} must be positive")


Limits = HttpLimits   # deprecated alias: the old name, which `engine.Limits` (the fetch bounds) shares


def _raw(code: int, reason: str, body: bytes = b"", extra: str = "") -> bytes:
    """An HTTP/1.1 answer that closes the connection, written outside h11 (the connection then ends)."""
    return (f"HTTP/1.1 {code} {reason}\r\ncontent-type: application/json\r\ncontent-length: {len(body)}\r\n"
            f"{extra}connection: close\r\n\r\n").encode("ascii") + body


def limited_protocol(limits: HttpLimits) -> type:
    """uvicorn's h11 protocol class, bounded by `limits` (uvicorn and h11 are imported only here)."""
    import h11
    from uvicorn.protocols.http.h11_impl import H11Protocol

    busy_answer = _raw(503, "Service Unavailable", _BUSY_BODY, f"retry-after: {limits.retry_after}\r\n")
    lingering: set[Any] = set()   # refused connections still reading; at most max_connections of them
    bad_request_answer = _raw(400, "Bad Request", b'{"error":"malformed HTTP request, or its head is too large"}')
    timeout_answer = _raw(408, "Request Timeout", b'{"error":"the request was not sent in time"}')

    def _victim(others: list[Any], now: float) -> Any:
        """The connection to close to admit a new one: the one waiting longest, else the oldest slow body, else
        the oldest stream; None when every other connection has a request in flight or a fresh body."""
        for phase, old_enough in (("wait", 0.0), ("body", SLOW_BODY), ("stream", 0.0)):
            candidates = [c for c in others if c._current_phase() == phase and now - c._since >= old_enough]
            if candidates:
                return min(candidates, key=lambda c: c._since)
        return None

    class LimitedH11Protocol(H11Protocol):
        """An h11 connection with a phase, a deadline for it, and a place in the connection limit."""

        def connection_made(self, transport: Any) -> None:
            super().connection_made(transport)
            sock = transport.get_extra_info("socket")
            if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
                # headers and body go out in separate writes: no 40 ms delayed-ACK stall on keep-alive
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            now = self.loop.time()
            self._rejected = False
            self._timer: Any = None
            self._stall: Any = None   # armed while the client reads nothing of a full write buffer
            self._phase = "wait"
            self._since = now
            self._head_start: float | None = now   # a new connection's header clock starts when it opens
            self._quiet = True                       # nothing received in this wait phase yet
            live: list[Any] = [c for c in self.connections if not getattr(c, "_rejected", True)]
            if len(live) > limits.max_connections:
                victim = _victim([c for c in live if c is not self], now)
                if victim is None:
                    self._reject()
                    return
                victim._close(quietly=victim._current_phase() != "body" or (
                    victim.cycle is not None and victim.cycle.response_started))
            self._arm()

        def _reject(self) -> None:
            """Answer 503 now, stop writing, and drop what the client sends until it closes (or a second)."""
            self._rejected = True
            self.transport.write(busy_answer)
            if len(lingering) >= limits.max_connections or not self.transport.can_write_eof():
                self.transport.close()   # a flood of refusals: no lingering for these
                return
            self.transport.write_eof()
            lingering.add(self)
            self._timer = self.loop.call_later(REJECT_LINGER, self.transport.close)

        def _current_phase(self) -> str:
            if self._rejected or self.transport.is_closing():
                return "closed"
            their, ours = self.conn.their_state, self.conn.our_state
            if their is h11.IDLE and ours is h11.IDLE:
                return "wait"
            if their is h11.SEND_BODY:
                return "body"
            if (ours is h11.SEND_BODY and their in (h11.DONE, h11.MUST_CLOSE) and self.scope is not None
                    and self.scope["method"] == "GET"):
                return "stream"   # a GET answered as it goes: a listener (MCP's standalone event stream)
            return "busy"

        def _arm(self) -> None:
            """Note a change of phase and set the one timer to this phase's deadline."""
            now = self.loop.time()
            phase = self._current_phase()
            if phase != self._phase:
                self._phase, self._since = phase, now
                if phase == "wait":
                    pending = bool(self.conn.trailing_data[0])   # a pipelined request already buffered
                    self._head_start = now if pending else None
                    self._quiet = not pending
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
            deadline = self._deadline()
            if deadline is not None:
                self._timer = self.loop.call_later(max(0.0, deadline - now), self._expire)

        def _deadline(self) -> float | None:
            if self._phase == "wait":
                if self._head_start is not None:
                    return self._head_start + limits.header_timeout
                return self._since + limits.keepalive_timeout
            if self._phase == "body":
                return self._since + limits.body_timeout
            return None

        def _expire(self) -> None:
            self._timer = None
            if self._current_phase() != self._phase:   # the phase moved on without a callback: re-arm
                self._arm()
                return
            if self._phase == "wait":
                self._close(quietly=self._quiet)
            elif self._phase == "body":
                self._close(quietly=self.cycle is not None and self.cycle.response_started)

        def _close(self, quietly: bool) -> None:
            """Close this connection; unless `quietly`, first answer 408 (a request was begun, not finished)."""
            if self.transport.is_closing():
                return
            if not quietly:
                self.transport.write(timeout_answer)
            self.transport.close()

        def data_received(self, data: bytes) -> None:
            if self._rejected:
                return
            if self._phase == "wait":
                if self._head_start is None:
                    self._head_start = self.loop.time()
                self._quiet = False
            super().data_received(data)
            self._arm()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            self._arm()

        def pause_writing(self) -> None:
            super().pause_writing()
            if self._stall is None:
                self._stall = self.loop.call_later(limits.send_timeout, self._stalled)

        def resume_writing(self) -> None:
            super().resume_writing()
            if self._stall is not None:
                self._stall.cancel()
                self._stall = None

        def _stalled(self) -> None:
            """The client read nothing for `send_timeout`: drop the connection and what is buffered for it."""
            self._stall = None
            self.transport.abort()

        def send_400_response(self, msg: str) -> None:
            """A request h11 cannot parse (malformed, or a head past its size limit): 400 as JSON, then close."""
            if self.transport.is_closing():
                return
            self.transport.write(bad_request_answer)
            self.transport.close()

        def connection_lost(self, exc: Exception | None) -> None:
            lingering.discard(self)
            for timer in (self._timer, self._stall):
                if timer is not None:
                    timer.cancel()
            self._timer = self._stall = None
            super().connection_lost(exc)

    return LimitedH11Protocol
