"""The retrieval server of seed 002 (SPEC §7): JSON-RPC 2.0 over stdio and HTTP, and its client.

`Dispatcher` answers messages with a `SearchEngine` (ladr_lab.search); `serve_stdio` and
`HttpServer` are the transports (`HttpLimits` bounds the HTTP one); `RetrieveClient` talks to either
from Python or a notebook. `build_mcp_server` is the same engine as an MCP server (a `retrieve` tool, and
the slates' files as resources through `SlateResources`), served by `serve_mcp_stdio` or `McpHttpServer`;
the `mcp` SDK is imported only when one is built. What both HTTP faces share (Host/Origin admission, the
bearer token, the uvicorn server on its socket, bounded by `HttpLimits`) is in `serving.py` and `limits.py`; the
MCP face's sessions are bounded by `sessions.SessionKeeper`.
This package is the only place where errors become JSON-RPC codes: `protocol.ERROR_CODES`, one table that
both faces read.
"""
from .client import RetrieveClient, RetrieveError
from .http import HttpServer
from .limits import HttpLimits
from .mcp_server import McpHttpServer, build_mcp_server, serve_mcp_stdio
from .protocol import Dispatcher, error_response
from .resources import SlateResources
from .stdio import serve_stdio

__all__ = ["Dispatcher", "HttpLimits", "HttpServer", "McpHttpServer", "RetrieveClient", "RetrieveError",
           "SlateResources", "build_mcp_server", "error_response", "serve_mcp_stdio", "serve_stdio"]


def __getattr__(name: str) -> type:
    """`Limits`, the deprecated old name of `HttpLimits` (it collided with `engine.Limits`, the fetch bounds)."""
    if name == "Limits":
        import warnings

        warnings.warn("ladr_lab.server.Limits is deprecated: use ladr_lab.server.HttpLimits", DeprecationWarning,
                      stacklevel=2)
        return HttpLimits
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
