"""The retrieval server as an MCP server (the official `mcp` SDK, 2.x): a `retrieve` tool and the slates' files.

`build_mcp_server(engine, resources)` makes a low-level `mcp.server.lowlevel.Server` with one tool,
`retrieve`, whose input schema is seed 002's `retrieve` params (`search.request.PARAMS_SCHEMA`, checked by
the same `load_request` as the JSON-RPC face) and whose result is the JSON-RPC result, as structured
content and as its JSON text; and with the served slates' files as resources (`slate:TITLE/FOLDER/PATH`,
`server/resources.py`). A bad argument is a tool result with `isError: true` naming the parameter, never a
protocol error; an unknown tool, a refused resource URI (`-32602`) and a missing file (`-32002`) are
protocol errors. Every code, and the words a failed call's text names it by, is read from
`protocol.ERROR_CODES`, the table the JSON-RPC face answers by. A tool call runs under the server's time
budget (`request_timeout`, as the JSON-RPC face's; search/budget.py), and one past it is a tool result with
`isError: true` and code -32001, as any other failed call. `serve_mcp_stdio` serves it on standard
input and output; `McpHttpServer` serves it as streamable HTTP at `/mcp` on uvicorn, behind the JSON-RPC
face's Host/Origin admission and bearer token (`serving.py`), bounded by the JSON-RPC face's connection limits
and timeouts (`limits.HttpLimits`, the same h11 protocol), with its sessions bounded by `sessions.SessionKeeper`
(an idle lifetime and a cap).
The SDK is imported only inside this module's functions (`import ladr_lab` never loads it).
"""
from __future__ import annotations

import base64
from typing import Any

from ..search.budget import request_budget
from ..search.errors import SearchError
from ..search.pipeline import SearchEngine
from ..search.request import PARAMS_SCHEMA
from .limits import HttpLimits
from .protocol import (
    INVALID_REQUEST,
    MAX_REQUEST_BYTES,
    PARSE_ERROR,
    REQUEST_TIMEOUT_SECONDS,
    RESOURCE_NOT_FOUND,
    code_of,
    error_response,
    parse_message,
    to_json,
    too_large,
    valid_id,
    wire_bytes,
    words_of,
)
from .resources import ResourceMissing, ResourceRefused, SlateResources
from .serving import LOOPBACK_HOSTS, Admission, Serving, token_matches
from .sessions import MAX_SESSIONS, SESSION_IDLE_TIMEOUT, SessionKeeper
from .stdio import read_line

__all__ = ["MCP_PATH", "McpHttpServer", "OUTPUT_SCHEMA", "RESOURCE_NOT_FOUND", "TOOL_NAME",
           "build_mcp_server", "call_retrieve", "serve_mcp_stdio"]

TOOL_NAME = "retrieve"
MCP_PATH = "/mcp"
# the result of seed 002's `retrieve` (docs/server.md), loosely: the SDK's client checks structured content with it
OUTPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["hits", "indexVersion", "usage"],
    "properties": {"hits": {"type": "array", "items": {"type": "object", "required": ["id"]}},
                   "nextCursor": {"type": "string", "description": "pass it as `cursor` for the next page"},
                   "indexVersion": {"type": "string"}, "rewrittenQuery": {"type": "string"},
                   "usage": {"type": "object"}},
}
_DESCRIPTION = ("Search the served slates (seed 002's retrieve): BM25 and dense recall, fusion, rerank, MMR, "
                "metadata filters (a filter on field `slate`, `folder` or `path` narrows to a slate, a folder or a "
                "file), token budgets and cursors. Each hit's citation.uri is a resource to read the whole file.")


def call_retrieve(engine: SearchEngine, arguments: dict[str, Any] | None,
                  timeout: float | None = None) -> tuple[dict, bool]:
    """The tool's answer to `arguments`, under a budget of `timeout` seconds (None: none): (the result, False), or
    ({error: {code, message, data?}}, True)."""
    try:
        with request_budget(timeout):
            return engine.retrieve(arguments if arguments is not None else {}), False
    except SearchError as exc:
        code, message = code_of(exc), str(exc)
        error: dict[str, Any] = {"code": code, "message": message}
        if exc.data:
            error["data"] = exc.data
    except Exception as exc:  # noqa: BLE001 - a bug answers this call, and the server keeps serving
        code, message = code_of(exc), f"{type(exc).__name__}: {exc}"
        error = {"code": code, "message": message}
    return {"error": error}, True


def build_mcp_server(engine: SearchEngine, resources: SlateResources, name: str = "ladr-lab",
                     version: str = "0.1.0", workers: int | None = None, *,
                     request_timeout: float | None = REQUEST_TIMEOUT_SECONDS) -> Any:
    """An `mcp.server.lowlevel.Server` with the `retrieve` tool (each call under `request_timeout` seconds; None: no
    bound) and the slates' files as resources; its searches and reads run on at most `workers` threads at once
    (None: anyio's default pool, 40)."""
    import anyio
    import mcp_types as types
    from mcp.server.lowlevel import Server
    from mcp.shared.exceptions import MCPError

    if workers is not None and workers < 1:
        raise ValueError("workers must be at least 1")
    limiter = anyio.CapacityLimiter(workers) if workers is not None else None

    tool = types.Tool(name=TOOL_NAME, title="Retrieve from the served slates", description=_DESCRIPTION,
                      input_schema=PARAMS_SCHEMA, output_schema=OUTPUT_SCHEMA,
                      annotations=types.ToolAnnotations(read_only_hint=True, idempotent_hint=True,
                                                        open_world_hint=False))

    async def list_tools(ctx: Any, params: Any) -> Any:
        return types.ListToolsResult(tools=[tool])

    async def call_tool(ctx: Any, params: Any) -> Any:
        if params.name != TOOL_NAME:
            raise MCPError(types.INVALID_PARAMS, f"unknown tool {params.name[:80]!r} (this server has {TOOL_NAME!r})")
        result, failed = await anyio.to_thread.run_sync(call_retrieve, engine, params.arguments, request_timeout,
                                                        limiter=limiter)
        if failed:
            err = result["error"]
            text = f"retrieve failed, {words_of(err['code'])} ({err['code']}): {err['message']}"
            return types.CallToolResult(content=[types.TextContent(type="text", text=text)],
                                        structured_content=result, is_error=True)
        return types.CallToolResult(content=[types.TextContent(type="text", text=to_json(result))],
                                    structured_content=result)

    async def list_resources(ctx: Any, params: Any) -> Any:
        cursor = getattr(params, "cursor", None) if params is not None else None
        try:
            page, nxt = await anyio.to_thread.run_sync(resources.page, cursor, limiter=limiter)
        except ResourceRefused as exc:
            raise MCPError(code_of(exc), str(exc)) from None
        except Exception as exc:  # noqa: BLE001 - a bug is an internal error (-32603), never the SDK's code 0
            raise MCPError(code_of(exc), f"Internal error: {type(exc).__name__}: {exc}") from None
        return types.ListResourcesResult(
            resources=[types.Resource(uri=f.uri, name=f.path, mime_type=f.mime_type, size=f.size) for f in page],
            next_cursor=nxt)

    async def read_resource(ctx: Any, params: Any) -> Any:
        uri = str(params.uri)
        try:
            data, mime = await anyio.to_thread.run_sync(resources.read, uri, limiter=limiter)
        except ResourceRefused as exc:
            raise MCPError(code_of(exc), str(exc)) from None
        except ResourceMissing as exc:
            raise MCPError(code_of(exc), str(exc), {"uri": uri}) from None
        except Exception as exc:  # noqa: BLE001 - a bug is an internal error (-32603), never the SDK's code 0
            raise MCPError(code_of(exc), f"Internal error: {type(exc).__name__}: {exc}") from None
        try:
            contents: Any = types.TextResourceContents(uri=uri, mime_type=mime, text=data.decode("utf-8"))
        except UnicodeDecodeError:
            contents = types.BlobResourceContents(uri=uri, mime_type=mime, blob=base64.b64encode(data).decode("ascii"))
        return types.ReadResourceResult(contents=[contents])

    return Server(name, version=version, on_list_tools=list_tools, on_call_tool=call_tool,
                  on_list_resources=list_resources, on_read_resource=read_resource,
                  instructions="Call `retrieve` to search the slates; read a hit's citation.uri for its whole file.")


def _vet_line(line: bytes) -> dict | None:
    """The answer owed to a stdio line the SDK would drop unanswered, or None for a line to hand it: -32700 (id
    null) for a line that is not UTF-8, not JSON, or JSON the SDK's parser refuses (a lone surrogate escape,
    nesting past its depth limit); -32600 for JSON that is no JSON-RPC message (the id echoed when it has one)."""
    import mcp_types as types
    from pydantic import ValidationError

    msg, error = parse_message(line)
    if error is not None:
        return error
    try:
        types.jsonrpc_message_adapter.validate_json(line, by_name=False)
    except ValidationError as exc:
        if any(e.get("type") == "json_invalid" for e in exc.errors()):
            return error_response(None, PARSE_ERROR, f"Parse error: {str(exc.errors()[0].get('msg'))[:200]}")
        id_ = msg.get("id") if isinstance(msg, dict) and valid_id(msg.get("id")) else None
        return error_response(id_, INVALID_REQUEST, "Invalid Request: not a JSON-RPC request, notification or "
                                                      "response of MCP")
    return None


class _Stdout:
    """Standard output as the SDK's stdio transport writes it, and the one writer of every line on it: the SDK's
    messages and the answers to lines it never sees go out whole, one at a time, as UTF-8 (`wire_bytes`)."""

    def __init__(self, stream: Any) -> None:
        import threading

        self.stream = stream
        self.lock = threading.Lock()

    def _write(self, text: str) -> None:
        with self.lock:
            self.stream.write(wire_bytes(text))
            self.stream.flush()

    async def write(self, text: str) -> None:
        import anyio

        await anyio.to_thread.run_sync(self._write, text)

    async def flush(self) -> None:
        return None   # every write is flushed whole


class _Stdin:
    """Standard input as the SDK's stdio transport reads it: only the lines it can take; every other line is
    answered on standard output here (`_vet_line`; a line over `limit` bytes is -32600 and never kept)."""

    def __init__(self, stream: Any, out: _Stdout, limit: int) -> None:
        self.stream = stream
        self.out = out
        self.limit = limit

    async def __aiter__(self) -> Any:
        import anyio

        while True:
            line, too_long = await anyio.to_thread.run_sync(read_line, self.stream, self.limit)
            if line is None:
                return
            answer = too_large(self.limit) if too_long else (_vet_line(line) if line.strip() else None)
            if answer is not None:
                await self.out.write(to_json(answer) + "\n")
            elif line.strip():
                yield line.decode("utf-8")


def serve_mcp_stdio(server: Any, max_request_bytes: int = MAX_REQUEST_BYTES) -> None:
    """Serve MCP on standard input and output until standard input ends; every line gets an answer (`_Stdin`)."""
    import sys

    import anyio
    from mcp.server import stdio

    claim = getattr(stdio, "_claim_fd", None)   # the SDK's: fds 0 and 1 diverted while serving, stray output kept off
    releases = []
    if claim is not None:
        stdin, release_in = claim(0, sys.stdin, "rb", stdio._open_stdin_diversion)
        stdout, release_out = claim(1, sys.stdout, "wb", stdio._open_stdout_diversion)
        releases = [r for r in (release_out, release_in) if r is not None]
    else:
        stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    out = _Stdout(stdout)

    async def main() -> None:
        async with stdio.stdio_server(stdin=_Stdin(stdin, out, max(1, int(max_request_bytes))),  # type: ignore[arg-type]
                                      stdout=out) as (read, write):  # type: ignore[arg-type]
            await server.run(read, write, server.create_initialization_options())

    try:
        anyio.run(main)
    finally:
        for release in releases:
            release()


class _Guard:
    """ASGI middleware: the JSON-RPC face's Host/Origin admission and bearer token in front of the MCP app."""

    def __init__(self, app: Any, admission: Admission, token: str | None) -> None:
        self.app = app
        self.admission = admission
        self.token = token

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers: dict[str, str] = {}
        for key, value in scope["headers"]:
            headers.setdefault(key.decode("latin-1"), value.decode("latin-1"))
        if not self.admission.host_allowed(headers.get("host")):
            await _refuse(send, 403, "this Host is not allowed (see --allow-host)")
        elif not self.admission.origin_allowed(headers.get("origin")):
            await _refuse(send, 403, "this Origin is not allowed (see --allow-origin)")
        elif self.token and not token_matches(headers.get("authorization", ""), self.token):
            await _refuse(send, 401, "missing or wrong bearer token", [(b"www-authenticate", b"Bearer")])
        else:
            await self.app(scope, receive, send)


async def _refuse(send: Any, status: int, message: str, extra: list | None = None) -> None:
    body = to_json({"error": message}).encode("utf-8")
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                            (b"connection", b"close"), *(extra or [])]})
    await send({"type": "http.response.body", "body": body})


class McpHttpServer(Serving):
    """MCP over streamable HTTP at `/mcp` (uvicorn), bound to 127.0.0.1 unless told otherwise, with the JSON-RPC
    face's connection limits (`limits`, or `HttpLimits(**limit_args)`) and sessions ended after
    `session_idle_timeout` idle seconds or, past `max_sessions`, least recently used first."""

    path = MCP_PATH
    thread_name = "ladr-serve-mcp"

    def __init__(self, server: Any, host: str = "127.0.0.1", port: int = 0, token: str | None = None,
                 allow_hosts: tuple[str, ...] | list[str] = (), allow_origins: tuple[str, ...] | list[str] = (),
                 max_request_bytes: int = MAX_REQUEST_BYTES, limits: HttpLimits | None = None,
                 session_idle_timeout: float = SESSION_IDLE_TIMEOUT, max_sessions: int = MAX_SESSIONS,
                 **limit_args: Any) -> None:
        from mcp.server.transport_security import TransportSecuritySettings

        self.limits = limits if limits is not None else HttpLimits(**limit_args)
        if host not in ("", "0.0.0.0", "::"):   # the bound name is the Host its clients send
            allow_hosts = (*allow_hosts, host)
        # the SDK's own DNS-rebinding check is off: `_Guard` applies the JSON-RPC face's rules (--allow-host/-origin);
        # its idle timer and session cap are off too: `SessionKeeper` keeps them (sessions.py says why)
        app = server.streamable_http_app(
            streamable_http_path=MCP_PATH, host=host if host in LOOPBACK_HOSTS else "0.0.0.0",
            max_request_body_size=max(1, int(max_request_bytes)), session_idle_timeout=None, max_sessions=None,
            transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False))
        self.keeper = SessionKeeper(app, session_idle_timeout, max_sessions, MCP_PATH)
        self._bind(_Guard(self.keeper, Admission(allow_hosts, allow_origins), token), host, port, self.limits,
                   lifespan="on")

    @property
    def sessions(self) -> int:
        """How many MCP sessions are held now."""
        return self.keeper.sessions
