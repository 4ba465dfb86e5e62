"""The retrieval server of seed 002 (SPEC §7): JSON-RPC 2.0 over stdio and HTTP, and its client.

`Dispatcher` answers messages with a `SearchEngine` (ladr_lab.search); `serve_stdio` and
`HttpServer` are the transports (`Limits` bounds the HTTP one); `RetrieveClient` talks to either
from Python or a notebook.
This package is the only place where errors become JSON-RPC codes.
"""
from .client import RetrieveClient, RetrieveError
from .http import HttpServer
from .limits import Limits
from .protocol import Dispatcher, error_response
from .stdio import serve_stdio

__all__ = ["Dispatcher", "HttpServer", "Limits", "RetrieveClient", "RetrieveError", "error_response", "serve_stdio"]
