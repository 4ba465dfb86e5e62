"""A fake OpenAI-compatible server on 127.0.0.1 that answers in JSON, or in server-sent events when the body asks
`stream: true` (the streaming tests of models/ and cli/ share it): `serve()` yields its api_base."""
from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

__all__ = ["ANSWER", "MSGS", "PIECES", "Fake", "serve"]

MSGS = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hello?"}]
ANSWER = 'Dedup is per step — “per node”, 😀 and\nit says {"files": ["a.md"]}.'
PIECES = ["Dedup", " is per", " step — “per", " node”, 😀", " and\n", 'it says {"files": ["a.md"]}', "."]


class Fake(BaseHTTPRequestHandler):
    """An OpenAI-compatible server: JSON, or server-sent events when the body says `stream: true`."""

    protocol_version = "HTTP/1.1"
    bodies: list = []
    answers: list = []           # the answers of the next calls, in order (then ANSWER)
    stall = threading.Event()    # set: a streamed answer stops after its first piece until `release` is set
    release = threading.Event()
    extra_lines: list = []       # raw lines sent before the first chunk (comments, other fields)
    ports: list = []
    delay = 0.0                  # seconds between two streamed pieces
    first_delay = 0.0            # seconds before the first (a model reading its prompt)

    def do_POST(self):  # noqa: N802
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
        Fake.bodies.append(body)
        Fake.ports.append(self.client_address[1])
        text = Fake.answers.pop(0) if Fake.answers else ANSWER
        usage = {"prompt_tokens": 321, "completion_tokens": 23, "total_tokens": 344}
        if not body.get("stream"):
            out = json.dumps({"id": "c", "object": "chat.completion", "created": 1, "model": body["model"],
                              "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                                           "finish_reason": "stop"}], "usage": usage}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(out)))
            self.end_headers()
            self.wfile.write(out)
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for line in Fake.extra_lines:
            self._send(line + "\n")
        pieces = PIECES if text == ANSWER else [text[i:i + 3] for i in range(0, len(text), 3)]
        for i, piece in enumerate(pieces):
            if i and Fake.delay:
                time.sleep(Fake.delay)
            elif not i and Fake.first_delay:
                time.sleep(Fake.first_delay)
            chunk = {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": body["model"],
                     "choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": None}]}
            self._send(f"data: {json.dumps(chunk)}\r\n\r\n")
            if i == 0 and Fake.stall.is_set():
                Fake.release.wait(60)
                return
        last = {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": body["model"],
                "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
        self._send(f"data: {json.dumps(last)}\n\n")
        if (body.get("stream_options") or {}).get("include_usage"):
            self._send(f"data: {json.dumps({'id': 'c', 'model': body['model'], 'choices': [], 'usage': usage})}\n\n")
        self._send("data: [DONE]\n\n")
        self.wfile.write(b"0\r\n\r\n")

    def _send(self, text: str) -> None:
        data = text.encode()
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def log_message(self, *a):
        pass


@contextlib.contextmanager
def serve() -> Iterator[str]:
    """The fake server, reset, on a free port: yields its api_base (`http://127.0.0.1:PORT/v1`)."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), Fake)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    Fake.bodies, Fake.answers, Fake.extra_lines, Fake.ports = [], [], [], []
    Fake.delay = Fake.first_delay = 0.0
    Fake.stall.clear()
    Fake.release.clear()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        Fake.release.set()
        server.shutdown()
        server.server_close()
