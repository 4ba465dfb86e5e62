"""The stdio transport: newline-delimited JSON-RPC messages on standard input, answers on standard output.

One message per line (UTF-8; JSON text never contains a raw newline). Requests are answered in
order; progress notifications for a request are written before its response. A line longer than
`MAX_LINE` bytes is answered with -32600 and skipped; invalid UTF-8 is a parse error (-32700).
Nothing but JSON-RPC messages is ever written to standard output (logs go to standard error).
"""
from __future__ import annotations

import threading
from typing import BinaryIO

from .protocol import INVALID_REQUEST, Dispatcher, error_response, to_json

MAX_LINE = 16 * 1024 * 1024


def _read_line(stream: BinaryIO) -> tuple[bytes | None, bool]:
    """The next line (without its newline) and whether it was too long; (None, False) at the end."""
    line = stream.readline(MAX_LINE + 1)
    if not line:
        return None, False
    if len(line) > MAX_LINE and not line.endswith(b"\n"):
        while True:  # skip the rest of the oversized line
            more = stream.readline(MAX_LINE)
            if not more or more.endswith(b"\n"):
                break
        return b"", True
    return line.rstrip(b"\r\n"), False


def serve_stdio(dispatcher: Dispatcher, stdin: BinaryIO, stdout: BinaryIO) -> None:
    """Serve until standard input ends."""
    lock = threading.Lock()

    def write(text: str) -> None:
        with lock:
            stdout.write(text.encode("utf-8") + b"\n")
            stdout.flush()

    def notify(msg: dict) -> None:
        try:
            write(to_json(msg))
        except (OSError, ValueError):
            pass  # the client went away; the response write will tell

    while True:
        line, too_long = _read_line(stdin)
        if line is None:
            return
        if too_long:
            write(to_json(error_response(None, INVALID_REQUEST, f"Invalid Request: message longer than {MAX_LINE} bytes")))
            continue
        if not line.strip():
            continue
        answer = dispatcher.handle_text(line, notify)
        if answer is not None:
            try:
                write(answer)
            except (OSError, ValueError):
                return  # standard output closed: nobody is listening any more
