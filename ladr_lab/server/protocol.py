"""JSON-RPC 2.0 for seed 002: framing, methods, and the one place errors become JSON-RPC codes.

`Dispatcher.handle_text(text, notify)` takes one message as text (a request, a notification or a
batch) and returns the response text (None when nothing is owed). It never raises: malformed JSON
is -32700, a message that is not a request -32600, an unknown method -32601, bad params -32602,
an option the engine cannot honour -32005, a snapshot no longer kept -32010, a request past its time
budget -32001, and anything unexpected -32603, each answered while the server keeps serving. A
message over `max_request_bytes` (1 MiB by default; advertised as `capabilities.limits.maxRequestBytes`)
is -32600 before it is parsed, and the transports refuse to read one past it. `limits` also says the
batch cap and what the engine keeps for `session` ids (their longest, how many, how many hits each: request.py and cursors.py), the same on
every transport. Each message (a request, or a whole batch) is answered under a time budget
(`request_timeout`, 5 s by default, advertised as `limits.requestTimeoutMs`; search/budget.py): the engine
checks it between its steps, and a `retrieve` past it is -32001.

`is_light(text)` tells a message that needs no search (pings, and the client's notifications, alone or in a
batch) from one that does, cheaply enough to ask on an event loop: the HTTP face answers those there, never
queueing them behind the searches on its worker threads.

`ERROR_CODES` is the one table from an error class to its JSON-RPC code and the words that name it; both
faces read it (`code_of`, `words_of`): this dispatcher and the MCP face (`mcp_server.py`), whose resource
errors are in it too.

Methods: `initialize` (server info and the capabilities of seed 002), `retrieve`, `ping`.
Notifications from the client (`notifications/initialized`, `notifications/cancelled`) are accepted
and need no answer. A `retrieve` with `_meta.progressToken` sends `notifications/progress`
messages through `notify` (progress, total, message and the partial hits so far) before its
response.
"""
from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from typing import Any

from ..errors import LadrError
from ..search.budget import DEFAULT_TIMEOUT, request_budget
from ..search.cursors import MAX_SESSION_IDS, MAX_SESSIONS
from ..search.errors import InvalidRequestParams, OptionUnsupported, RequestTimeout, SearchError, SnapshotGone
from ..search.pipeline import JsonSearchEngine, SearchEngine
from ..search.request import MAX_SESSION_CHARS
from .resources import ResourceMissing, ResourceRefused

__all__ = ["Dispatcher", "ERROR_CODES", "INTERNAL_ERROR", "INVALID_PARAMS", "INVALID_REQUEST", "LIGHT_BYTES",
           "LIGHT_METHODS", "MAX_BATCH", "MAX_REQUEST_BYTES", "METHOD_NOT_FOUND", "Notify", "OPTION_UNSUPPORTED",
           "PARSE_ERROR", "PROTOCOL_VERSION", "REQUEST_TIMEOUT", "REQUEST_TIMEOUT_SECONDS", "RESOURCE_NOT_FOUND",
           "SNAPSHOT_GONE", "code_of", "error_response", "parse_message", "to_json", "too_large", "valid_id",
           "wire_bytes", "wire_safe", "words_of"]

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
OPTION_UNSUPPORTED = -32005
SNAPSHOT_GONE = -32010
RESOURCE_NOT_FOUND = -32002   # the MCP specification's code for a resource that does not exist
REQUEST_TIMEOUT = -32001      # a request past its time budget (the MCP SDK's code for a request that timed out)
REQUEST_TIMEOUT_SECONDS = DEFAULT_TIMEOUT   # the default budget of one message (`--request-timeout`)
PROTOCOL_VERSION = "2025-06-18"
MAX_BATCH = 1000
MAX_REQUEST_BYTES = 1024 * 1024   # the default bound on one message (a request or a batch), both transports
# what needs no search: `is_light` looks for these in a message of at most LIGHT_BYTES (a batch of 1,000 pings)
LIGHT_METHODS = frozenset(("ping", "notifications/initialized", "notifications/cancelled", "initialized"))
LIGHT_BYTES = 64 * 1024

Notify = Callable[[dict], None]


def error_response(id_: Any, code: int, message: str, data: Any = None) -> dict:
    """A JSON-RPC error response object."""
    err: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        err["data"] = data
    return {"jsonrpc": "2.0", "id": id_, "error": err}


def parse_message(text: str | bytes) -> tuple[Any, dict | None]:
    """(the parsed message, None), or (None, the -32700 answer) for text that is not UTF-8 or not JSON (or nested
    past Python's recursion limit). Both faces parse by it (the MCP face's stdio transport in `mcp_server.py`)."""
    try:
        if isinstance(text, bytes):
            text = text.decode("utf-8")
        return json.loads(text), None
    except (ValueError, RecursionError) as exc:
        return None, error_response(None, PARSE_ERROR, f"Parse error: {str(exc)[:200]}")


def too_large(limit: int, size: int | None = None) -> dict:
    """The -32600 answer to a message over `limit` bytes (`size` when it is known)."""
    what = f"a message of {size} bytes" if size is not None else "a message"
    return error_response(None, INVALID_REQUEST, f"Invalid Request: {what} is over the server's limit of {limit} "
                                                  "bytes (limits.maxRequestBytes)")


class _NoSuchMethod(Exception):
    """A method this server does not have (-32601); internal: `Dispatcher` answers it."""


# error class -> (JSON-RPC code, the words the MCP face's text names it by); an exception takes the entry of the
# nearest class of its MRO, so a SearchError or a LadrError outside the table (a bug) is Exception's -32603
ERROR_CODES: dict[type[BaseException], tuple[int, str]] = {
    InvalidRequestParams: (INVALID_PARAMS, "invalid params"),
    OptionUnsupported: (OPTION_UNSUPPORTED, "option unsupported"),
    SnapshotGone: (SNAPSHOT_GONE, "index version gone"),
    RequestTimeout: (REQUEST_TIMEOUT, "request timed out"),
    _NoSuchMethod: (METHOD_NOT_FOUND, "method not found"),
    ResourceRefused: (INVALID_PARAMS, "invalid params"),
    ResourceMissing: (RESOURCE_NOT_FOUND, "resource not found"),
    Exception: (INTERNAL_ERROR, "internal error"),
}
_WORDS = {code: words for code, words in ERROR_CODES.values()}


def code_of(exc: BaseException) -> int:
    """The JSON-RPC error code of an exception raised while serving a request (`ERROR_CODES`)."""
    for cls in type(exc).__mro__:
        entry = ERROR_CODES.get(cls)
        if entry is not None:
            return entry[0]
    return INTERNAL_ERROR


def words_of(code: int) -> str:
    """The words that name a JSON-RPC error code of `ERROR_CODES` in a message ("invalid params"); else "error"."""
    return _WORDS.get(code, "error")


def valid_id(value: Any) -> bool:
    """True for a JSON-RPC id: a string, a finite number or null."""
    # NaN and infinities parse (Python's json accepts them, and 1e400 overflows to inf) but are no JSON
    # number on the wire, so such an id is no id: -32600 with id null.
    if isinstance(value, float):
        return math.isfinite(value)
    return value is None or isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


_SURROGATE = re.compile("[\ud800-\udfff]")


def wire_safe(text: str) -> str:
    """JSON text that encodes as UTF-8: a lone surrogate (valid in JSON as an escape, and echoed back from a
    request as an id, a method, a name or a value) is written as its `\\uXXXX` escape, never raw."""
    if text.isascii():
        return text
    try:
        text.encode("utf-8")   # fails only on a lone surrogate; in C, several times quicker than the search
        return text
    except UnicodeEncodeError:
        pass
    return _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def wire_bytes(text: str) -> bytes:
    """`text` as UTF-8 for a transport; a lone surrogate that reached it anyway is escaped, never fatal."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return wire_safe(text).encode("utf-8")


def to_json(obj: Any) -> str:
    """Compact JSON text (UTF-8 characters kept, lone surrogates escaped, no NaN)."""
    return wire_safe(json.dumps(obj, ensure_ascii=False, allow_nan=False, separators=(",", ":")))


class Dispatcher:
    """Answers JSON-RPC messages with a SearchEngine (see the module docstring)."""

    def __init__(self, engine: SearchEngine, name: str = "ladr-lab", version: str = "0.1.0", *,
                 max_request_bytes: int = MAX_REQUEST_BYTES,
                 request_timeout: float | None = REQUEST_TIMEOUT_SECONDS) -> None:
        self.engine = engine
        self.info = {"name": name, "version": version}
        self.max_request_bytes = max(1, int(max_request_bytes))
        if request_timeout is not None and not request_timeout > 0:
            raise ValueError(f"request_timeout must be a positive number of seconds or None (got {request_timeout!r})")
        self.request_timeout = request_timeout   # seconds a message may take (None: no bound)
        # the engine's result as JSON text, spliced in unparsed, when it can write one (search/pipeline.py)
        self._json: JsonSearchEngine | None = engine if isinstance(engine, JsonSearchEngine) else None
        # the lean path of a plain sparse request (search/plain.py), when the engine has one
        self._plain: Callable[[dict], str | None] | None = getattr(engine, "retrieve_plain", None)

    # --- text in, text out ----------------------------------------------------------------------
    def is_light(self, text: str | bytes) -> bool:
        """True for a message that needs no search: pings and the client's notifications (`LIGHT_METHODS`), alone or
        in a batch, of at most `LIGHT_BYTES`. Cheap enough for an event loop: a body that does not even name
        "ping" or a notification is not parsed."""
        if len(text) > LIGHT_BYTES:
            return False
        probe = text if isinstance(text, bytes) else text.encode("utf-8", "surrogatepass")
        if b'"ping"' not in probe and b"initialized" not in probe and b"notifications/" not in probe:
            return False
        msg, error = parse_message(text)
        if error is not None:
            return False
        msgs = msg if type(msg) is list and msg else [msg]
        return all(type(m) is dict and m.get("method") in LIGHT_METHODS for m in msgs)

    def handle_text(self, text: str | bytes, notify: Notify | None = None) -> str | None:
        """Answer one message given as text, under the message's time budget; None when it was only notifications."""
        size = _size(text, self.max_request_bytes)
        if size > self.max_request_bytes:
            return to_json(too_large(self.max_request_bytes, size))
        with request_budget(self.request_timeout):
            msg, error = parse_message(text)
            if error is not None:
                return to_json(error)
            if self._plain is not None and type(msg) is dict and msg.get("method") == "retrieve":
                answer = self._plain_answer(msg)
                if answer is not None:
                    return answer
            out = self.handle(msg, notify)
        if out is None:
            return None
        try:
            return wire_safe(_encode(out))
        except (TypeError, ValueError, RecursionError) as exc:  # a result that is not JSON: our bug, not theirs
            return to_json(error_response(None, INTERNAL_ERROR, f"Internal error: unserialisable result ({exc})"))

    def _plain_answer(self, msg: dict) -> str | None:
        """The response text of a request the engine's lean path answers (a plain sparse `retrieve`, by id, with
        nothing else in the envelope), the result spliced in as the engine wrote it; None: not such a request
        (or it failed: the general path answers it, error and all)."""
        params = msg.get("params")
        id_ = msg.get("id")
        if len(msg) != 4 or msg.get("jsonrpc") != "2.0" or type(params) is not dict:
            return None
        if type(id_) is int:
            id_text = str(id_)
        elif type(id_) is str:
            id_text = to_json(id_)
        else:
            return None
        if self._plain is None:
            return None
        try:
            result = self._plain(params)
        except Exception:  # noqa: BLE001 - the general path answers it, error and all
            return None
        if result is None:
            return None
        return wire_safe('{"jsonrpc":"2.0","id":' + id_text + ',"result":' + result + "}")

    def handle(self, msg: Any, notify: Notify | None = None) -> dict | list | None:
        """Answer one parsed message (object or batch), its requests sharing one time budget."""
        with request_budget(self.request_timeout):
            if isinstance(msg, list):
                if not msg:
                    return error_response(None, INVALID_REQUEST, "Invalid Request: empty batch")
                if len(msg) > MAX_BATCH:
                    return error_response(None, INVALID_REQUEST, f"Invalid Request: batch larger than {MAX_BATCH}")
                answers = [a for a in (self._one(m, notify) for m in msg) if a is not None]
                return answers or None
            return self._one(msg, notify)

    # --- one request ----------------------------------------------------------------------------
    def _one(self, msg: Any, notify: Notify | None) -> dict | None:
        if not isinstance(msg, dict):
            return error_response(None, INVALID_REQUEST, "Invalid Request: not a JSON-RPC object")
        has_id = "id" in msg
        id_ = msg.get("id")
        if has_id and not valid_id(id_):
            return error_response(None, INVALID_REQUEST, "Invalid Request: id must be a string, a number or null")
        if msg.get("jsonrpc") != "2.0":
            return error_response(id_, INVALID_REQUEST, 'Invalid Request: "jsonrpc" must be "2.0"')
        method = msg.get("method")
        if not isinstance(method, str):
            return error_response(id_, INVALID_REQUEST, 'Invalid Request: "method" must be a string')
        params = msg.get("params")
        if "params" in msg and not isinstance(params, (dict, list)):
            return error_response(id_, INVALID_REQUEST, 'Invalid Request: "params" must be an object or an array')
        try:
            result = self._call(method, params, notify)
        except _NoSuchMethod as exc:
            return error_response(id_, code_of(exc), f"Method not found: {method[:100]}") if has_id else None
        except SearchError as exc:
            return error_response(id_, code_of(exc), str(exc), exc.data or None) if has_id else None
        except LadrError as exc:
            return error_response(id_, code_of(exc), f"Internal error: {exc}") if has_id else None
        except Exception as exc:  # noqa: BLE001 - the server must outlive any request
            return error_response(id_, code_of(exc), f"Internal error: {type(exc).__name__}: {exc}") if has_id else None
        if not has_id:
            return None  # a notification is never answered
        return {"jsonrpc": "2.0", "id": id_, "result": result}

    def _call(self, method: str, params: Any, notify: Notify | None) -> Any:
        if method == "initialize":
            caps = dict(self.engine.capabilities())
            caps["limits"] = {"maxRequestBytes": self.max_request_bytes, "maxBatch": MAX_BATCH,
                              "maxSessionChars": MAX_SESSION_CHARS, "maxSessions": MAX_SESSIONS,
                              "maxSessionHits": MAX_SESSION_IDS,
                              "requestTimeoutMs": None if self.request_timeout is None
                              else round(self.request_timeout * 1000)}
            return {"protocolVersion": PROTOCOL_VERSION, "serverInfo": self.info, "capabilities": caps}
        if method == "ping":
            return {}
        if method in ("notifications/initialized", "notifications/cancelled", "initialized"):
            return None
        if method == "retrieve":
            if isinstance(params, list):
                raise InvalidRequestParams("retrieve params must be an object (by name), not an array")
            token = None
            meta = params.get("_meta") if isinstance(params, dict) else None
            if isinstance(meta, dict):
                token = meta.get("progressToken")
            progress = None
            if token is not None and notify is not None and isinstance(token, (str, int)) \
                    and not isinstance(token, bool):
                def progress(done: int, total: int, message: str, hits: list | None) -> None:
                    p: dict[str, Any] = {"progressToken": token, "progress": done, "total": total, "message": message}
                    if hits is not None:
                        p["hits"] = hits
                    notify({"jsonrpc": "2.0", "method": "notifications/progress", "params": p})
            if self._json is not None:
                return _Raw(self._json.retrieve_json(params if params is not None else {}, progress))
            return self.engine.retrieve(params if params is not None else {}, progress)
        raise _NoSuchMethod(method)


def _size(text: str | bytes, limit: int) -> int:
    """The UTF-8 size of a message (exact once it could be over `limit`; a str is at most 4 bytes a character)."""
    if isinstance(text, bytes) or len(text) * 4 <= limit:
        return len(text)
    return len(text) if len(text) > limit else len(text.encode("utf-8", "surrogatepass"))


class _Raw(str):
    """A result that is already JSON text (an engine's `retrieve_json`), spliced in as it is."""


def _encode(msg: Any) -> str:
    if isinstance(msg, list):
        return "[" + ",".join(_encode(m) for m in msg) + "]"
    if isinstance(msg, dict) and isinstance(msg.get("result"), _Raw):
        return '{"jsonrpc":"2.0","id":' + to_json(msg.get("id")) + ',"result":' + msg["result"] + "}"
    return to_json(msg)
