"""The ASGI application behind `HttpServer`: admission, the bearer token, body limits and SSE progress.

It answers one HTTP request per call (ASGI 3, `http` scopes only). The dispatcher is synchronous and
CPU-bound, so it runs on a small thread pool, never on the event loop; progress notifications cross
back to the loop with `call_soon_threadsafe`. A message that needs no search (a ping, the client's
notifications, or a batch of only those: `Dispatcher.is_light`) is answered on the event loop at once, as
`GET /health` is, so a liveness check never waits behind searches for a worker. A refusal answers
without reading the body: the server under it (uvicorn's h11 protocol) then reads and drops the body
before the next request on the connection, and a refusal whose body is chunked, longer than `DISCARD_FACTOR` times the limit, or not
yet sent because the client waits for `100 Continue`, says `Connection: close` so the body is never read.
"""
from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from concurrent.futures import Executor
from typing import Any

from .protocol import Dispatcher, to_json, too_large, wire_bytes
from .serving import token_matches

__all__ = ["DISCARD_FACTOR", "PATHS", "Receive", "RpcApp", "Send"]

DISCARD_FACTOR = 16
PATHS = ("/", "/rpc")

Send = Callable[[dict], Awaitable[None]]
Receive = Callable[[], Awaitable[dict]]


def _json_error(message: str) -> bytes:
    return json.dumps({"error": message}).encode("utf-8")


class RpcApp:
    """JSON-RPC over `POST /` (or `/rpc`) and `GET /health`, as an ASGI 3 application."""

    def __init__(self, dispatcher: Dispatcher, token: str | None, admission: Any, pool: Executor) -> None:
        self.dispatcher = dispatcher
        self.token = token
        self.admission = admission
        self.pool = pool
        # answers on the event loop what needs no search (a stand-in dispatcher without it: every message to a worker)
        self._light: Callable[[bytes], bool] = getattr(dispatcher, "is_light", lambda _body: False)

    async def __call__(self, scope: dict, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        headers: dict[str, str] = {}
        for name, value in scope["headers"]:
            headers.setdefault(name.decode("latin-1"), value.decode("latin-1"))
        reply = _Reply(send, headers, self.dispatcher.max_request_bytes)
        if not self.admission.host_allowed(headers.get("host")):
            await reply.refuse(403, "this Host is not allowed (see --allow-host)")
            return
        if not self.admission.origin_allowed(headers.get("origin")):
            await reply.refuse(403, "this Origin is not allowed (see --allow-origin)")
            return
        if scope["method"] != "POST":
            await self._get(scope, reply)
            return
        await self._post(scope, headers, receive, reply)

    async def _get(self, scope: dict, reply: _Reply) -> None:
        if scope["method"] in ("GET", "HEAD") and scope["path"] == "/health":
            await reply.send(200, b'{"ok":true}', close=reply.unread_body_too_big())
        else:
            await reply.send(405, b'{"error":"use POST with a JSON-RPC message"}', extra={"allow": "POST"},
                             close=reply.unread_body_too_big())

    async def _post(self, scope: dict, headers: dict[str, str], receive: Receive, reply: _Reply) -> None:
        limit = self.dispatcher.max_request_bytes
        if scope["path"] not in PATHS:
            await reply.refuse(404, "not found")
            return
        if self.token and not token_matches(headers.get("authorization", ""), self.token):
            await reply.refuse(401, "missing or wrong bearer token", extra={"www-authenticate": "Bearer"})
            return
        if headers.get("content-type", "").split(";", 1)[0].strip().lower() != "application/json":
            await reply.refuse(415, "the body must be application/json")
            return
        if "transfer-encoding" in headers:
            await reply.refuse(411, "Content-Length required (chunked bodies are not read)")
            return
        if "content-length" not in headers:
            await reply.send(411, b'{"error":"Content-Length required"}', close=True)
            return
        length = int(headers["content-length"])   # h11 has already refused a malformed length with 400
        if length > limit:
            refusal = to_json(too_large(limit, length)).encode("utf-8")
            await reply.send(413, refusal, close=length > DISCARD_FACTOR * limit or reply.awaits_continue())
            return
        body = await _read_body(receive)
        if body is None:
            return   # the client went away (or the body timed out): nothing to answer
        if "text/event-stream" in headers.get("accept", "") and _wants_progress(body):
            await self._stream(body, reply)
            return
        answer: str | None
        if self._light(body):
            answer = self.dispatcher.handle_text(body)   # a ping: here, in microseconds, never behind a search
        else:
            loop = asyncio.get_running_loop()
            answer = await loop.run_in_executor(self.pool, lambda: self.dispatcher.handle_text(body))
        if answer is None:
            await reply.send(202)
        else:
            await reply.send(200, wire_bytes(answer))

    async def _stream(self, body: bytes, reply: _Reply) -> None:
        """Answer with server-sent events: one per progress notification, then the response; then close."""
        loop = asyncio.get_running_loop()
        events: asyncio.Queue[bytes | None] = asyncio.Queue()

        def notify(msg: dict) -> None:   # on a pool thread
            try:
                loop.call_soon_threadsafe(events.put_nowait, _event(to_json(msg)))
            except RuntimeError:   # the loop is closed: the server is shutting down
                pass

        await reply.start(200, "text/event-stream", extra={"cache-control": "no-cache"}, close=True)
        work = loop.run_in_executor(self.pool, lambda: self.dispatcher.handle_text(body, notify))
        work.add_done_callback(lambda _: events.put_nowait(None))   # after every notification already queued
        while (chunk := await events.get()) is not None:
            await reply.body(chunk, more=True)
        answer = work.result()
        await reply.body(_event(answer) if answer is not None else b"", more=False)


class _Reply:
    """The answer to one request, with the headers every answer carries."""

    def __init__(self, send: Send, headers: dict[str, str], limit: int) -> None:
        self._send = send
        self.headers = headers
        self.limit = limit   # the dispatcher's max_request_bytes

    def unread_body_too_big(self) -> bool:
        """True when the request's unread body is chunked, too long to read and drop, or awaits `100 Continue`."""
        if "transfer-encoding" in self.headers:
            return True
        try:
            length = int(self.headers.get("content-length", "0"))
        except ValueError:
            return True
        return not 0 <= length <= DISCARD_FACTOR * self.limit or (length > 0 and self.awaits_continue())

    def awaits_continue(self) -> bool:
        """True when the client waits for `100 Continue` before its body: refused, it may never send that body,
        and the next request it sends would be read as the body (so a refusal closes the connection)."""
        return "100-continue" in self.headers.get("expect", "").lower()

    async def refuse(self, code: int, message: str, extra: dict | None = None) -> None:
        """Answer an early refusal; the unread body is dropped by the server, or the connection closed."""
        await self.send(code, _json_error(message), extra=extra, close=self.unread_body_too_big())

    async def start(self, code: int, ctype: str | None, length: int | None = None, extra: dict | None = None,
                    close: bool = False) -> None:
        """Send the status line and headers."""
        headers = [(b"content-type", ctype.encode())] if ctype else []
        if length is not None:
            headers.append((b"content-length", str(length).encode()))
        headers += [(k.encode(), v.encode()) for k, v in (extra or {}).items()]
        if close:
            headers.append((b"connection", b"close"))
        await self._send({"type": "http.response.start", "status": code, "headers": headers})

    async def body(self, data: bytes, more: bool) -> None:
        """Send part of the body (`more`) or its end."""
        await self._send({"type": "http.response.body", "body": data, "more_body": more})

    async def send(self, code: int, body: bytes = b"", extra: dict | None = None, close: bool = False) -> None:
        """Send a whole answer: JSON unless it has no body."""
        await self.start(code, "application/json" if body or code != 204 else None, len(body), extra, close)
        await self.body(body, more=False)


async def _read_body(receive: Receive) -> bytes | None:
    parts = []
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return None
        parts.append(message.get("body", b""))
        if not message.get("more_body", False):
            return b"".join(parts)


def _event(text: str) -> bytes:
    return b"event: message\ndata: " + wire_bytes(text) + b"\n\n"


def _wants_progress(body: bytes) -> bool:
    try:
        msg = json.loads(body)
    except (ValueError, RecursionError):
        return False
    msgs = msg if isinstance(msg, list) else [msg]
    for m in msgs:
        params = m.get("params") if isinstance(m, dict) else None
        meta = params.get("_meta") if isinstance(params, dict) else None
        if isinstance(meta, dict) and meta.get("progressToken") is not None:
            return True
    return False
