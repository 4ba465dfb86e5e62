"""The errors of a retrieval request (LadrError subclasses).

    SearchError(LadrError)
    ├── InvalidRequestParams     a parameter is missing, of the wrong type or out of range
    ├── OptionUnsupported        a known option this engine cannot honour, with strict: true
    ├── SnapshotGone             the pinned indexVersion is no longer kept
    └── RequestTimeout           the request's time budget ran out before it was answered (budget.py)

The search layer names what went wrong, not how a wire says it: the server's one table of codes
(`server.protocol.ERROR_CODES`) turns each into its JSON-RPC code, for both of its faces.
"""
from __future__ import annotations

from ..errors import LadrError

__all__ = ["InvalidRequestParams", "OptionUnsupported", "RequestTimeout", "SearchError", "SnapshotGone"]


class SearchError(LadrError):
    """A retrieval request could not be served."""

    def __init__(self, message: str, data: dict | None = None) -> None:
        super().__init__(message)
        self.data = data or {}


class InvalidRequestParams(SearchError):
    """A request parameter is missing, malformed or out of range."""


class OptionUnsupported(SearchError):
    """The request asks for an option this engine does not offer (and strict is true)."""


class SnapshotGone(SearchError):
    """The requested indexVersion is not (or no longer) kept by the engine."""


class RequestTimeout(SearchError):
    """The request's time budget ran out before it was answered (`budget.check_budget`)."""
