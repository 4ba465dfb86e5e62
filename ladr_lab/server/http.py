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
"""
from __future__ import annotations

import hmac
import json
import threading
from typing import Any

from .protocol import Dispatcher, to_json, too_large, wire_bytes

DISCARD_FACTOR = 16
PATHS = ("/", "/rpc")
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


def _handler_class(dispatcher: Dispatcher, token: str | None, admission: Admission) -> type:
    """The request handler class, bound to a dispatcher, token and admission (http.server is imported only here)."""
    from http.server import BaseHTTPRequestHandler

    class _Handler(BaseHTTPRequestHandler):
        server_version = "ladr-lab-serve"
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True  # headers and body go out in separate writes: no 40 ms delayed-ACK stall
        dispatcher: Dispatcher
        token: str | None
        admission: Admission

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
            pass  # quiet: standard error is for the operator's messages

        def _send(self, code: int, body: bytes = b"", ctype: str = "application/json", extra: dict | None = None) -> None:
            self.send_response(code)
            if body or code != 204:
                self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            for k, v in (extra or {}).items():
                self.send_header(k, v)
            if self.close_connection:
                self.send_header("Connection", "close")
            self.end_headers()
            if body:
                self.wfile.write(body)

        def _authorised(self) -> bool:
            if not self.token:
                return True
            got = self.headers.get("Authorization", "")
            return hmac.compare_digest(got.encode(), f"Bearer {self.token}".encode())

        def _refuse(self, code: int, message: str, extra: dict | None = None) -> None:
            """Answer an early refusal, first dropping the request's body so the connection stays in step."""
            self._drain()
            self._send(code, json.dumps({"error": message}).encode("utf-8"), extra=extra)

        def _drain(self) -> None:
            """Read and drop the body (at most DISCARD_FACTOR times the size limit), else close the connection."""
            if self.headers.get("Transfer-Encoding") is not None:
                self.close_connection = True   # chunked bodies are not read: never guess where they end
                return
            raw = self.headers.get("Content-Length")
            if raw is None:
                return
            try:
                length = int(raw)
            except ValueError:
                length = -1
            if not 0 <= length <= DISCARD_FACTOR * self.dispatcher.max_request_bytes:
                self.close_connection = True
                return
            left = length
            while left > 0:
                got = self.rfile.read(min(left, 1 << 16))
                if not got:
                    self.close_connection = True
                    break
                left -= len(got)

        def _admitted(self) -> bool:
            """Check Host and Origin (DNS rebinding, foreign pages); refuse with 403 when either is foreign."""
            if not self.admission.host_allowed(self.headers.get("Host")):
                self._refuse(403, "this Host is not allowed (see --allow-host)")
                return False
            if not self.admission.origin_allowed(self.headers.get("Origin")):
                self._refuse(403, "this Origin is not allowed (see --allow-origin)")
                return False
            return True

        def do_GET(self) -> None:  # noqa: N802 - http.server's naming
            if not self._admitted():
                return
            self._drain()
            if self.path == "/health":
                self._send(200, b'{"ok":true}')
            else:
                self._send(405, b'{"error":"use POST with a JSON-RPC message"}', extra={"Allow": "POST"})

        def do_POST(self) -> None:  # noqa: N802
            if not self._admitted():
                return
            if self.path.split("?", 1)[0] not in PATHS:
                self._refuse(404, "not found")
                return
            if not self._authorised():
                self._refuse(401, "missing or wrong bearer token", extra={"WWW-Authenticate": "Bearer"})
                return
            ctype = self.headers.get("Content-Type", "").split(";", 1)[0].strip().lower()
            if ctype != "application/json":
                self._refuse(415, "the body must be application/json")
                return
            if self.headers.get("Transfer-Encoding") is not None:
                self._refuse(411, "Content-Length required (chunked bodies are not read)")
                return
            try:
                length = int(self.headers.get("Content-Length", ""))
            except ValueError:
                self.close_connection = True   # where the body ends is unknown: do not read on
                self._send(411, b'{"error":"Content-Length required"}')
                return
            limit = self.dispatcher.max_request_bytes
            if length < 0 or length > limit:
                self._refuse_large(length, limit)
                return
            body = self.rfile.read(length)
            if "text/event-stream" in self.headers.get("Accept", "") and _wants_progress(body):
                self._stream(body)
                return
            answer = self.dispatcher.handle_text(body)
            if answer is None:
                self._send(202)
            else:
                self._send(200, wire_bytes(answer))

        def _refuse_large(self, length: int, limit: int) -> None:
            body = to_json(too_large(limit, length if length >= 0 else None)).encode("utf-8")
            if 0 <= length <= DISCARD_FACTOR * limit:
                left = length
                while left > 0:   # read and drop it, so the next request on this connection is read right
                    got = self.rfile.read(min(left, 1 << 16))
                    if not got:
                        break
                    left -= len(got)
            else:
                self.close_connection = True
            self._send(413, body)

        def _stream(self, body: bytes) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Connection", "close")
            self.end_headers()
            self.close_connection = True
            lock = threading.Lock()

            def event(text: str) -> None:
                with lock:
                    self.wfile.write(b"event: message\ndata: " + wire_bytes(text) + b"\n\n")
                    self.wfile.flush()

            def notify(msg: dict) -> None:
                try:
                    event(to_json(msg))
                except OSError:
                    pass

            answer = self.dispatcher.handle_text(body, notify)
            if answer is not None:
                try:
                    event(answer)
                except OSError:
                    pass

    _Handler.dispatcher = dispatcher
    _Handler.token = token
    _Handler.admission = admission
    return _Handler


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


class HttpServer:
    """A threaded HTTP server for a Dispatcher; `start()` in a thread or `serve_forever()`."""

    def __init__(self, dispatcher: Dispatcher, host: str = "127.0.0.1", port: int = 0, token: str | None = None,
                 allow_hosts: tuple[str, ...] | list[str] = (), allow_origins: tuple[str, ...] | list[str] = ()) -> None:
        from http.server import ThreadingHTTPServer

        if host not in ("", "0.0.0.0", "::"):   # the bound name is the Host its clients send
            allow_hosts = (*allow_hosts, host)
        admission = Admission(allow_hosts, allow_origins)
        self._httpd = ThreadingHTTPServer((host, port), _handler_class(dispatcher, token, admission))
        self._httpd.daemon_threads = True
        self._thread: threading.Thread | None = None

    @property
    def address(self) -> tuple[str, int]:
        """(host, port) actually bound."""
        host, port = self._httpd.server_address[:2]
        return str(host), int(port)

    @property
    def url(self) -> str:
        """The base URL of the server."""
        host, port = self.address
        return f"http://{host}:{port}/"

    def serve_forever(self) -> None:
        """Serve in this thread until `shutdown()`."""
        self._httpd.serve_forever(poll_interval=0.2)

    def start(self) -> HttpServer:
        """Serve in a background thread; returns self."""
        self._thread = threading.Thread(target=self.serve_forever, name="ladr-serve-http", daemon=True)
        self._thread.start()
        return self

    def shutdown(self) -> None:
        """Stop serving and close the socket."""
        self._httpd.shutdown()
        self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> HttpServer:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.shutdown()
