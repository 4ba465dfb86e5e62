"""The retrieval server of seed 002 (SPEC §7): JSON-RPC 2.0 over stdio and HTTP, and its client.

`Dispatcher` answers messages with a `SearchEngine` (ladr_lab.search); `serve_stdio` and
`HttpServer` are the transports (`Limits` bounds the HTTP one); `RetrieveClient` talks to either
from Python or a notebook. `build_mcp_server` is the same engine as an MCP server (a `retrieve` tool, and
the slates' files as resources through `SlateResources`), served by `serve_mcp_stdio` or `McpHttpServer`;
the `mcp` SDK is imported only when one is built.
This package is the only place where errors become JSON-RPC codes.
"""
from .client import RetrieveClient, RetrieveError
from .http import HttpServer
from .limits import Limits
from .mcp_server import McpHttpServer, build_mcp_server, serve_mcp_stdio
from .protocol import Dispatcher, error_response
from .resources import SlateResources
from .stdio import serve_stdio

__all__ = ["Dispatcher", "HttpServer", "Limits", "McpHttpServer", "RetrieveClient", "RetrieveError", "SlateResources",
           "build_mcp_server", "error_response", "serve_mcp_stdio", "serve_stdio"]
