"""The stdio transport: newline-delimited JSON-RPC messages on standard input, answers on standard output.

One message per line (UTF-8; JSON text never contains a raw newline). Requests are answered in
order, pings included (a stdio server has one client, whose ping waits only behind its own earlier
requests, each bounded by the dispatcher's time budget; docs/server.md); progress notifications for a
request are written before its response. A line longer than the
dispatcher's `max_request_bytes` (1 MiB by default) is answered with -32600 and skipped without being
kept in memory; invalid UTF-8 is a parse error (-32700).
Nothing but JSON-RPC messages is ever written to standard output (logs go to standard error).
"""
from __future__ import annotations

import sys
import threading
from typing import BinaryIO

from .protocol import Dispatcher, to_json, too_large, wire_bytes

__all__ = ["read_line", "serve_stdio"]


def read_line(stream: BinaryIO, limit: int) -> tuple[bytes | None, bool]:
    """The next line (without its newline) and whether it was longer than `limit` (then b"", the rest skipped);
    (None, False) at the end. Both stdio faces read by it (JSON-RPC here, MCP in `mcp_server.py`)."""
    line = stream.readline(limit + 2)   # the message, and its newline (\r\n at most)
    if not line:
        return None, False
    if len(line.rstrip(b"\r\n")) > limit:
        while not line.endswith(b"\n"):  # skip the rest of the oversized line, a piece at a time
            more = stream.readline(1 << 16)
            if not more:
                break
            line = more
        return b"", True
    return line.rstrip(b"\r\n"), False


def serve_stdio(dispatcher: Dispatcher, stdin: BinaryIO, stdout: BinaryIO) -> None:
    """Serve until standard input ends."""
    lock = threading.Lock()

    def write(text: str) -> None:
        with lock:
            stdout.write(wire_bytes(text) + b"\n")
            stdout.flush()

    def notify(msg: dict) -> None:
        try:
            write(to_json(msg))
        except (OSError, ValueError):
            pass  # the client went away; the response write will tell

    while True:
        line, too_long = read_line(stdin, dispatcher.max_request_bytes)
        if line is None:
            return
        if too_long:
            write(to_json(too_large(dispatcher.max_request_bytes)))
            continue
        if not line.strip():
            continue
        answer = dispatcher.handle_text(line, notify)
        if answer is not None:
            try:
                write(answer)
            except (OSError, ValueError) as exc:
                print(f"ladr-lab serve: cannot write to standard output ({exc}); stopping", file=sys.stderr, flush=True)
                return  # standard output closed: nobody is listening any more
