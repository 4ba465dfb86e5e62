"""What both HTTP faces (the JSON-RPC `HttpServer` and the MCP `McpHttpServer`) share.

`Admission` says which `Host` and `Origin` headers a request may carry (loopback, plus the allowed ones:
against DNS rebinding), and `token_matches` checks a bearer token in constant time. `Serving` is a uvicorn
server on its own listening socket (`listen`, with the backlog `accept_backlog` sizes), served in this
thread or a background one; `Serving._bind` is the one setup of both faces: the socket, and uvicorn running
the bounded h11 protocol of `limits.py` under the face's ASGI app, so both keep the same connection limit,
eviction and timeouts. `server_class` is the uvicorn `Server` it runs, which on shutdown also closes the
connections still open after the grace period. uvicorn is imported only inside functions.
"""
from __future__ import annotations

import hmac
import socket
import threading
from typing import Any, Literal

__all__ = ["Admission", "LOOPBACK_HOSTS", "Serving", "accept_backlog", "host_name", "listen", "server_class",
           "token_matches"]

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


def server_class() -> type:
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

    def _bind(self, app: Any, host: str, port: int, limits: Any, lifespan: Literal["on", "off"] = "off") -> None:
        """Listen on (host, port) and make the uvicorn server that runs `app` bounded by `limits` (an HttpLimits)."""
        import math

        import uvicorn

        from .limits import limited_protocol

        backlog = accept_backlog(limits.max_connections)
        sock = listen(host or "0.0.0.0", port, backlog)
        config = uvicorn.Config(
            app, http=limited_protocol(limits), ws="none", lifespan=lifespan, interface="asgi3", loop="asyncio",
            log_config=None, log_level="error", access_log=False, server_header=False,
            headers=[("server", "ladr-lab-serve")],
            # limits.py closes idle keep-alive connections on time; uvicorn's own (whole-second) timer is a backstop
            timeout_keep_alive=math.ceil(limits.keepalive_timeout), timeout_graceful_shutdown=2, backlog=backlog)
        self._serve_on(server_class()(config), sock)

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




def accept_backlog(max_connections: int) -> int:
    """The listen backlog, which is also how many connections asyncio accepts in one go before any is
    looked at: small enough that `max_connections` plus one such burst stays under the descriptor limit."""
    import resource

    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    if soft == resource.RLIM_INFINITY:
        return 2048
    return max(16, min(2048, (soft - max_connections - 64) // 2))


def listen(host: str, port: int, backlog: int) -> socket.socket:
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


def token_matches(authorization: str, token: str) -> bool:
    """True when `authorization` is `Bearer TOKEN` (the scheme in any case, RFC 9110 11.1), compared in constant time."""
    scheme, _, credentials = authorization.strip().partition(" ")
    return hmac.compare_digest(scheme.lower().encode("latin-1") + b" " + credentials.strip().encode("latin-1"),
                               b"bearer " + token.encode("utf-8"))
