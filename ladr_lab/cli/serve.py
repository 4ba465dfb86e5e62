"""`ladr-lab serve --slate TITLE=DIR... [--mcp] (--stdio | --http [HOST:]PORT)`: the retrieval server (SPEC §7).

Without `--mcp` it speaks seed 002's JSON-RPC; with it, MCP (the `mcp` extra: docs/server.md#mcp).
"""
from __future__ import annotations

import os
import sys

from ._common import _kv

__all__ = ["add_parser", "build_engine", "build_store", "cmd_serve"]


def _host_port(value: str) -> tuple[str, int]:
    host, _, port = value.rpartition(":")
    try:
        number = int(port)
    except ValueError:
        raise SystemExit(f"ladr-lab: --http takes [HOST:]PORT (got {value!r})") from None
    if not 0 <= number <= 65535:
        raise SystemExit(f"ladr-lab: --http port must be 0-65535 (got {number})")
    return (host.strip("[]") or "127.0.0.1"), number


def _token(a) -> str | None:
    """The bearer token: --token, else --token-file's first line, else LADR_SERVE_TOKEN, else none."""
    if a.token and a.token_file:
        raise SystemExit("ladr-lab: give --token or --token-file, not both")
    if a.token_file:
        try:
            with open(a.token_file, encoding="utf-8") as fh:
                token = fh.readline().strip()
        except OSError as exc:
            raise SystemExit(f"ladr-lab: --token-file {a.token_file}: {exc.strerror or exc}") from None
        if not token:
            raise SystemExit(f"ladr-lab: --token-file {a.token_file} is empty")
        return token
    return a.token or os.environ.get("LADR_SERVE_TOKEN") or None


# MCP sessions (streamable HTTP): the JSON-RPC face has none, so without --mcp these are refused, not ignored
_ONLY_MCP = {"session_idle_timeout": "--session-idle-timeout", "max_sessions": "--max-sessions"}


def _limits(a):
    """The HTTP server's bounds from the options, the same for both faces (checked before any indexing)."""
    from ..server.limits import HttpLimits
    from ..server.sessions import MAX_SESSIONS, SESSION_IDLE_TIMEOUT, check_session_limits

    given = [flag for key, flag in _ONLY_MCP.items() if getattr(a, key) is not None]
    if given and not a.mcp:
        raise SystemExit(f"ladr-lab: {', '.join(given)} apply to --mcp only (the JSON-RPC face keeps no sessions)")
    if a.session_idle_timeout is None:
        a.session_idle_timeout = SESSION_IDLE_TIMEOUT
    if a.max_sessions is None:
        a.max_sessions = MAX_SESSIONS
    if a.workers < 1:
        raise SystemExit("ladr-lab: --workers must be at least 1")
    try:
        check_session_limits(a.session_idle_timeout, a.max_sessions)
        return HttpLimits(max_connections=a.max_connections, header_timeout=a.header_timeout,
                          body_timeout=a.body_timeout, keepalive_timeout=a.keepalive_timeout,
                          send_timeout=a.send_timeout)
    except ValueError as exc:
        raise SystemExit(f"ladr-lab: {exc}") from None


def _timeout(a) -> float | None:
    """The time budget of one message in seconds, from --request-timeout (0: none)."""
    import math

    if not (math.isfinite(a.request_timeout) and a.request_timeout >= 0):
        raise SystemExit(f"ladr-lab: --request-timeout must be 0 (no bound) or a positive number of seconds "
                         f"(got {a.request_timeout})")
    return a.request_timeout if a.request_timeout > 0 else None


def build_store(a):
    """The slate store `serve` serves, from its `--slate` and `--embedder` options."""
    from ..slate import SlateStore

    slates = _kv(a.slate, "--slate")
    if not slates:
        raise SystemExit("ladr-lab: serve needs at least one --slate TITLE=DIR")
    store = SlateStore(embedder=a.embedder)
    for title, path in slates.items():
        if not os.path.isdir(path):
            raise SystemExit(f"ladr-lab: --slate {title}={path}: no such directory")
        store.bind(title, path)
    return store


def build_engine(a, store=None):
    """The engine `serve` runs, from its command-line options (over `store`, else one built from them)."""
    from ..models import get_model
    from ..search import CrossEncoderReranker, EmbeddedEngine

    store = store if store is not None else build_store(a)
    reranker = CrossEncoderReranker(a.rerank_model) if a.rerank_model else None
    transform = get_model(a.transform_model) if a.transform_model else None
    return EmbeddedEngine.from_store(store, dense=not a.no_dense, chunks=not a.no_chunks, max_k=a.max_k,
                                     reranker=reranker, transform_model=transform,
                                     keep_snapshots=a.keep_snapshots)


def cmd_serve(a) -> int:
    """Index the slates, then serve them until stdin ends (stdio) or the process is stopped (HTTP)."""
    from ..server import Dispatcher, HttpServer, serve_stdio

    address = None if a.stdio else _host_port(a.http)   # a bad --http fails before minutes of indexing
    _timeout(a)
    limits = None if a.stdio else _limits(a)
    token = None if a.stdio else _token(a)
    if a.mcp:
        _check_mcp()
    store = build_store(a)
    engine = build_engine(a, store)
    version = engine.warm()
    docs = len(engine.corpus.snapshot(version).docs)
    print(f"ladr-lab serve: indexed {docs} documents (indexVersion {version})", file=sys.stderr, flush=True)
    if not docs:
        print("ladr-lab serve: note: a slate's documents are the files in its folders (its subdirectories); "
              "files directly in a slate's directory are not served", file=sys.stderr, flush=True)
    if a.mcp:
        return _serve_mcp(a, engine, store, address, token, limits)
    dispatcher = Dispatcher(engine, max_request_bytes=a.max_request_bytes, request_timeout=_timeout(a))
    if a.stdio:
        serve_stdio(dispatcher, sys.stdin.buffer, sys.stdout.buffer)
        return 0
    assert address is not None
    host, port = address
    _say_exposure(host, token, a.allow_host)
    server = HttpServer(dispatcher, host, port, token, allow_hosts=a.allow_host, allow_origins=a.allow_origin,
                        limits=limits, workers=a.workers)
    return _serve_until_stopped(server, "listening")


def _say_exposure(host: str, token: str | None, allow_host) -> None:
    """Warn when serving beyond this machine without a token, and say which Host names a wildcard bind answers."""
    if host not in ("127.0.0.1", "localhost", "::1") and not token:
        print("ladr-lab serve: warning: serving beyond this machine without --token", file=sys.stderr)
    if host in ("0.0.0.0", "::") and not allow_host:
        print("ladr-lab serve: note: only requests whose Host is 127.0.0.1, localhost or [::1] are answered; "
              "add --allow-host NAME for the names clients use", file=sys.stderr)


def _serve_until_stopped(server, what: str) -> int:
    """Say where the server listens, serve until Ctrl-C or SIGTERM, and shut it down."""
    print(f"ladr-lab serve: {what} on {server.url}", file=sys.stderr, flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.shutdown()
    return 0


def _check_mcp() -> None:
    """Exit with a hint when the `mcp` SDK is missing (before any indexing)."""
    import importlib.util

    if importlib.util.find_spec("mcp") is None:
        raise SystemExit('ladr-lab: --mcp needs the MCP SDK: pip install "ladr_lab[mcp]"')


def _serve_mcp(a, engine, store, address, token, limits) -> int:
    """Serve the engine and the store's files as an MCP server, on stdio or streamable HTTP."""
    from ..server.mcp_server import McpHttpServer, build_mcp_server, serve_mcp_stdio
    from ..server.resources import SlateResources

    if a.stdio:
        serve_mcp_stdio(build_mcp_server(engine, SlateResources(store), request_timeout=_timeout(a)),
                        max_request_bytes=a.max_request_bytes)
        return 0
    host, port = address
    _say_exposure(host, token, a.allow_host)
    http = McpHttpServer(build_mcp_server(engine, SlateResources(store), workers=a.workers,
                                          request_timeout=_timeout(a)), host, port, token,
                         allow_hosts=a.allow_host, allow_origins=a.allow_origin,
                         max_request_bytes=a.max_request_bytes, limits=limits,
                         session_idle_timeout=a.session_idle_timeout, max_sessions=a.max_sessions)
    return _serve_until_stopped(http, "MCP listening")


def add_parser(sub) -> None:
    """Register `serve`."""
    s = sub.add_parser("serve", help="serve slates over JSON-RPC (seed 002's retrieve)")
    s.add_argument("--slate", action="append", default=[], metavar="TITLE=DIR", required=True)
    s.add_argument("--mcp", action="store_true",
                   help="speak MCP (a retrieve tool, the slates' files as resources) instead of seed 002's JSON-RPC; "
                        "over --http, at /mcp")
    how = s.add_mutually_exclusive_group(required=True)
    how.add_argument("--stdio", action="store_true", help="newline-delimited JSON-RPC on stdin/stdout")
    how.add_argument("--http", metavar="[HOST:]PORT", help="HTTP on HOST (default 127.0.0.1) and PORT (0: any)")
    s.add_argument("--token", help="require 'Authorization: Bearer TOKEN' over HTTP (or set LADR_SERVE_TOKEN)")
    s.add_argument("--token-file", metavar="PATH", help="read the bearer token from the first line of PATH")
    s.add_argument("--allow-host", action="append", default=[], metavar="HOST",
                   help="a Host name HTTP requests may carry besides 127.0.0.1, localhost, [::1] (repeatable; * any)")
    s.add_argument("--allow-origin", action="append", default=[], metavar="ORIGIN",
                   help="a browser Origin (scheme://host[:port]) allowed besides loopback ones (repeatable; * any)")
    s.add_argument("--embedder", help="hashing (default), st:MODEL or litellm:MODEL")
    s.add_argument("--rerank-model", metavar="MODEL", help="a sentence-transformers cross-encoder (name or directory)")
    s.add_argument("--transform-model", metavar="MODEL",
                   help="a model for query transforms (script:PATH, a litellm name, ...)")
    s.add_argument("--no-dense", action="store_true", help="sparse (BM25) only: no embeddings")
    s.add_argument("--no-chunks", action="store_true", help="documents only: no chunk index")
    s.add_argument("--max-k", type=int, default=1000, help="retrieve.maxK (default 1000)")
    s.add_argument("--keep-snapshots", type=int, default=16, help="index versions kept for indexVersion (16)")
    s.add_argument("--max-request-bytes", type=int, default=1024 * 1024,
                   help="the largest message (a request or a batch) answered; larger ones get -32600 (1 MiB)")
    s.add_argument("--request-timeout", type=float, default=5.0, metavar="SECONDS",
                   help="the time one message (a request or a batch) may take; a retrieve past it gets -32001 "
                        "(5; 0: no bound)")
    http = s.add_argument_group("HTTP limits, of both faces (docs/server.md)")
    http.add_argument("--max-connections", type=int, default=256, metavar="N",
                      help="connections held at once; past it the longest idle one is closed, "
                           "or a new client gets 503 when all are busy (256)")
    http.add_argument("--header-timeout", type=float, default=10.0, metavar="SECONDS",
                      help="a request's head must arrive within this, else the connection is closed (10)")
    http.add_argument("--body-timeout", type=float, default=30.0, metavar="SECONDS",
                      help="a request's body must arrive within this after its head, else 408 (30)")
    http.add_argument("--keepalive-timeout", type=float, default=5.0, metavar="SECONDS",
                      help="an idle keep-alive connection is closed after this (5)")
    http.add_argument("--send-timeout", type=float, default=30.0, metavar="SECONDS",
                      help="a client that reads nothing of its answer for this is disconnected (30)")
    http.add_argument("--workers", type=int, default=4, metavar="N",
                      help="threads answering requests (with --mcp: running searches and reads); more wait (4)")
    http.add_argument("--session-idle-timeout", type=float, default=None, metavar="SECONDS",
                      help="--mcp: a session with no request for this long is ended; its next request gets 404 "
                           "and the client initializes again (1800)")
    http.add_argument("--max-sessions", type=int, default=None, metavar="N",
                      help="--mcp: sessions held at once; past it the least recently used is ended (128)")
    s.set_defaults(fn=cmd_serve)
