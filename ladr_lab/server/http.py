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
"""
from __future__ import annotations

import hmac
import json
import threading
from typing import Any

from .protocol import Dispatcher, to_json, too_large, wire_bytes

DISCARD_FACTOR = 16
PATHS = ("/", "/rpc")


def _handler_class(dispatcher: Dispatcher, token: str | None) -> type:
    """The request handler class, bound to a dispatcher and token (http.server is imported only here)."""
    from http.server import BaseHTTPRequestHandler

    class _Handler(BaseHTTPRequestHandler):
        server_version = "ladr-lab-serve"
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True  # headers and body go out in separate writes: no 40 ms delayed-ACK stall
        dispatcher: Dispatcher
        token: str | None

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
            pass  # quiet: standard error is for the operator's messages

        def _send(self, code: int, body: bytes = b"", ctype: str = "application/json", extra: dict | None = None) -> None:
            self.send_response(code)
            if body or code != 204:
                self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            for k, v in (extra or {}).items():
                self.send_header(k, v)
            self.end_headers()
            if body:
                self.wfile.write(body)

        def _authorised(self) -> bool:
            if not self.token:
                return True
            got = self.headers.get("Authorization", "")
            return hmac.compare_digest(got.encode(), f"Bearer {self.token}".encode())

        def do_GET(self) -> None:  # noqa: N802 - http.server's naming
            if self.path == "/health":
                self._send(200, b'{"ok":true}')
            else:
                self._send(405, b'{"error":"use POST with a JSON-RPC message"}', extra={"Allow": "POST"})

        def do_POST(self) -> None:  # noqa: N802
            if self.path.split("?", 1)[0] not in PATHS:
                self._send(404, b'{"error":"not found"}')
                return
            if not self._authorised():
                self._send(401, b'{"error":"missing or wrong bearer token"}', extra={"WWW-Authenticate": "Bearer"})
                return
            try:
                length = int(self.headers.get("Content-Length", ""))
            except ValueError:
                self._send(411, b'{"error":"Content-Length required"}')
                self.close_connection = True
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

    def __init__(self, dispatcher: Dispatcher, host: str = "127.0.0.1", port: int = 0, token: str | None = None) -> None:
        from http.server import ThreadingHTTPServer

        self._httpd = ThreadingHTTPServer((host, port), _handler_class(dispatcher, token))
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
