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
one, get `403`; a request without `Origin` (a non-browser client) passes. A `POST` body must be
`application/json` (a charset parameter allowed), else `415`. Every refusal (403, 404, 401, 415, ...)
reads and drops the request's body (or closes the connection when it is too large or has no length),
so the next request on a keep-alive connection is read from its own first byte.

The server is uvicorn (its pure-Python h11 protocol) running `asgi.RpcApp`, bounded by `limits.Limits`:
at most `max_connections` connections (the one idle longest is closed to admit a new one; when all are
busy a new client gets `503` with `Retry-After` at once), request heads within `header_timeout`, bodies
within `body_timeout` (else `408`), idle keep-alive connections closed after `keepalive_timeout`, a
client that reads nothing of its answers for `send_timeout` disconnected. The
dispatcher runs on a pool of `workers` threads, never on the event loop.
"""
from __future__ import annotations

import math
import socket
import threading
from typing import Any

from .asgi import DISCARD_FACTOR, PATHS, RpcApp
from .limits import Limits, limited_protocol
from .protocol import Dispatcher

__all__ = ["Admission", "DISCARD_FACTOR", "HttpServer", "Limits", "PATHS", "accept_backlog", "host_name"]

LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})


def host_name(value: str) -> str:
    """The host name of a `Host` header or of an origin's authority, lowercased, without port or brackets."""
    value = value.strip().lower()
    if value.startswith("["):
        return value[1:].split("]", 1)[0]
    if value.count(":") > 1:   # a bare IPv6 address
        return value
    return value.split(":", 1)[0].rstrip(".")


class Admission:
    """Which `Host` and `Origin` headers a request may carry: loopback by default, plus the allowed ones."""

    def __init__(self, hosts: tuple[str, ...] | list[str] = (), origins: tuple[str, ...] | list[str] = ()) -> None:
        self.hosts = LOOPBACK_HOSTS | {host_name(h) for h in hosts}
        self.any_host = "*" in hosts
        self.origins = {o.strip().rstrip("/").lower() for o in origins}
        self.any_origin = "*" in self.origins

    def host_allowed(self, host: str | None) -> bool:
        """True when the `Host` header is absent (no browser omits it) or names an allowed host."""
        return host is None or self.any_host or host_name(host) in self.hosts

    def origin_allowed(self, origin: str | None) -> bool:
        """True when there is no `Origin`, it is allowed by name, or it is http(s) on a loopback host."""
        if origin is None or self.any_origin:
            return True
        origin = origin.strip().rstrip("/").lower()
        if origin in self.origins:
            return True
        scheme, sep, authority = origin.partition("://")
        return bool(sep) and scheme in ("http", "https") and host_name(authority) in LOOPBACK_HOSTS


def _server_class() -> type:
    """uvicorn's Server, which on shutdown also closes the connections still open after the grace period."""
    import asyncio

    import uvicorn

    class _Server(uvicorn.Server):
        async def shutdown(self, sockets: Any = None) -> None:
            await super().shutdown(sockets)
            for connection in list(self.server_state.connections):   # past the grace period: close them
                connection.transport.close()
            for _ in range(3):   # let the transports' connection_lost callbacks run before the loop closes
                await asyncio.sleep(0)

    return _Server


class Serving:
    """A uvicorn server on its own listening socket, served in this thread (`serve_forever`) or a background one
    (`start`, or `with`), then `shutdown()`: what the JSON-RPC and the MCP HTTP servers share."""

    path = "/"
    thread_name = "ladr-serve-http"

    def _serve_on(self, server: Any, sock: socket.socket) -> None:
        self._server = server
        self._sock = sock
        self._thread: threading.Thread | None = None
        self._address = sock.getsockname()[:2]

    @property
    def address(self) -> tuple[str, int]:
        """(host, port) actually bound."""
        host, port = self._address
        return str(host), int(port)

    @property
    def url(self) -> str:
        """The server's URL (its base, or the endpoint it serves)."""
        host, port = self.address
        return f"http://[{host}]:{port}{self.path}" if ":" in host else f"http://{host}:{port}{self.path}"

    def serve_forever(self) -> None:
        """Serve in this thread until `shutdown()` (or, in the main thread, SIGINT/SIGTERM)."""
        try:
            self._server.run(sockets=[self._sock])
        finally:
            self._sock.close()

    def start(self):
        """Serve in a background thread; returns self (the socket already listens: clients may connect)."""
        self._thread = threading.Thread(target=self.serve_forever, name=self.thread_name, daemon=True)
        self._thread.start()
        return self

    def shutdown(self) -> None:
        """Stop serving, close the socket and every connection."""
        self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=10)
        self._sock.close()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.shutdown()


class HttpServer(Serving):
    """A bounded HTTP server for a Dispatcher (uvicorn under `RpcApp`); `start()` in a thread or `serve_forever()`."""

    def __init__(self, dispatcher: Dispatcher, host: str = "127.0.0.1", port: int = 0, token: str | None = None,
                 allow_hosts: tuple[str, ...] | list[str] = (), allow_origins: tuple[str, ...] | list[str] = (),
                 limits: Limits | None = None, workers: int = 4, **limit_args: Any) -> None:
        from concurrent.futures import ThreadPoolExecutor

        import uvicorn

        if host not in ("", "0.0.0.0", "::"):   # the bound name is the Host its clients send
            allow_hosts = (*allow_hosts, host)
        admission = Admission(allow_hosts, allow_origins)
        self.limits = limits if limits is not None else Limits(**limit_args)
        backlog = accept_backlog(self.limits.max_connections)
        self._sock = _listen(host or "0.0.0.0", port, backlog)
        self._pool = ThreadPoolExecutor(max_workers=max(1, workers), thread_name_prefix="ladr-serve-worker")
        config = uvicorn.Config(
            RpcApp(dispatcher, token, admission, self._pool), http=limited_protocol(self.limits), ws="none",
            lifespan="off", interface="asgi3", loop="asyncio", log_config=None, log_level="error", access_log=False,
            server_header=False, headers=[("server", "ladr-lab-serve")],
            # limits.py closes idle keep-alive connections on time; uvicorn's own (whole-second) timer is a backstop
            timeout_keep_alive=math.ceil(self.limits.keepalive_timeout), timeout_graceful_shutdown=2, backlog=backlog)
        self._serve_on(_server_class()(config), self._sock)

    def shutdown(self) -> None:
        """Stop serving, close the socket and every connection, and let the worker threads go."""
        super().shutdown()
        self._pool.shutdown(wait=False, cancel_futures=True)


def accept_backlog(max_connections: int) -> int:
    """The listen backlog, which is also how many connections asyncio accepts in one go before any is
    looked at: small enough that `max_connections` plus one such burst stays under the descriptor limit."""
    import resource

    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    if soft == resource.RLIM_INFINITY:
        return 2048
    return max(16, min(2048, (soft - max_connections - 64) // 2))


def _listen(host: str, port: int, backlog: int) -> socket.socket:
    """A listening TCP socket on (host, port), bound now so port 0 has its real number at once."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)   # TCP_NODELAY: set per connection in limits.py
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(backlog)
        sock.setblocking(False)
    except OSError:
        sock.close()
        raise
    return sock
