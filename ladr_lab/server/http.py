"""The HTTP transport: JSON-RPC over POST, bound to 127.0.0.1 unless told otherwise.

`POST /` (or `/rpc`) with a JSON-RPC message as the body answers `200` with the response
(`application/json`), or `202` with no body when the message held only notifications. When the
request carries a `progressToken` and the client accepts `text/event-stream`, the answer is a
server-sent-event stream: one `message` event per progress notification, then the response.
With a bearer token configured, every request must carry `Authorization: Bearer TOKEN` (else
401). `GET /health` answers `{"ok": true}` without a token. A body above the dispatcher's
`max_request_bytes` (1 MiB by default) is refused with `413` and a JSON-RPC -32600 answer; it is read
and thrown away (so the connection stays usable) when it is at most `DISCARD_FACTOR` times the limit,
else the connection is closed unread.

Every request is checked for where it comes from before anything else (against DNS rebinding: a web
page whose name resolves to 127.0.0.1): a `Host` header naming anything but `127.0.0.1`, `localhost`,
`[::1]` (any port) or an allowed host, and an `Origin` header other than a loopback origin or an allowed
one, get `403`; a request without `Origin` (a non-browser client) passes (`serving.Admission`, shared with the
MCP face). A `POST` body must be
`application/json` (a charset parameter allowed), else `415`. Every refusal (403, 404, 401, 415, ...)
reads and drops the request's body (or closes the connection when it is too large or has no length),
so the next request on a keep-alive connection is read from its own first byte.

The server is uvicorn (its pure-Python h11 protocol) running `asgi.RpcApp`, bounded by `limits.HttpLimits`:
at most `max_connections` connections (the one idle longest is closed to admit a new one; when all are
busy a new client gets `503` with `Retry-After` at once), request heads within `header_timeout`, bodies
within `body_timeout` (else `408`), idle keep-alive connections closed after `keepalive_timeout`, a
client that reads nothing of its answers for `send_timeout` disconnected. The
dispatcher runs on a pool of `workers` threads, never on the event loop; a ping (or a batch of pings) needs no
search and is answered on the event loop instead, so it never waits for a worker.
"""
from __future__ import annotations

from typing import Any

# the names this module exported before `serving.py` and `limits.py` took them: still importable from here
from .asgi import DISCARD_FACTOR, PATHS, RpcApp  # noqa: E402,F401
from .limits import (
    HttpLimits,
    Limits,  # noqa: E402,F401
    limited_protocol,  # noqa: E402,F401
)
from .protocol import Dispatcher
from .serving import (
    Admission,
    Serving,
    accept_backlog,  # noqa: E402,F401
    host_name,  # noqa: E402,F401
    listen,  # noqa: E402,F401
    server_class,  # noqa: E402,F401
)

__all__ = ["HttpServer"]


class HttpServer(Serving):
    """A bounded HTTP server for a Dispatcher (uvicorn under `RpcApp`); `start()` in a thread or `serve_forever()`."""

    def __init__(self, dispatcher: Dispatcher, host: str = "127.0.0.1", port: int = 0, token: str | None = None,
                 allow_hosts: tuple[str, ...] | list[str] = (), allow_origins: tuple[str, ...] | list[str] = (),
                 limits: HttpLimits | None = None, workers: int = 4, **limit_args: Any) -> None:
        from concurrent.futures import ThreadPoolExecutor

        if host not in ("", "0.0.0.0", "::"):   # the bound name is the Host its clients send
            allow_hosts = (*allow_hosts, host)
        admission = Admission(allow_hosts, allow_origins)
        self.limits = limits if limits is not None else HttpLimits(**limit_args)
        self._pool = ThreadPoolExecutor(max_workers=max(1, workers), thread_name_prefix="ladr-serve-worker")
        try:
            self._bind(RpcApp(dispatcher, token, admission, self._pool), host, port, self.limits)
        except BaseException:
            self._pool.shutdown(wait=False)
            raise

    def shutdown(self) -> None:
        """Stop serving, close the socket and every connection, and let the worker threads go."""
        super().shutdown()
        self._pool.shutdown(wait=False, cancel_futures=True)
