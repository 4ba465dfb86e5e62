"""`RetrieveClient`: a small client for the retrieval server, over HTTP or a stdio subprocess.

    client = RetrieveClient.http("http://127.0.0.1:8765/", token="s3cret")
    client = RetrieveClient.stdio(["ladr-lab", "serve", "--slate", "K=sample_slates/knowledge", "--stdio"])
    client.initialize()["capabilities"]["retrieve"]["modes"]
    res = client.retrieve("how does dedup work", k=5, mode="hybrid", mmr={"lambda": 0.5},
                          on_progress=lambda p: print(p["message"]))
    [h["id"] for h in res["hits"]]

Keyword arguments are the protocol's parameters, in camelCase or snake_case (`candidate_k`,
`index_version`, `min_score`, ...), and this server's `fields` (the hit fields to return, e.g.
`fields=["score"]`: fewer bytes to write and parse; see docs/server.md). A JSON-RPC error raises
`RetrieveError` with its `code`. A batch goes as one line and the server reads the whole line before it
answers, so a batch past a pipe's buffer cannot deadlock the stdio transport.
"""
from __future__ import annotations

import itertools
import json
import os
import subprocess
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from ..errors import LadrError

__all__ = ["MAX_RETRY_AFTER", "RetrieveClient", "RetrieveError", "to_params"]


class RetrieveError(LadrError):
    """A JSON-RPC error answered by the server (or a transport failure, code None)."""

    def __init__(self, message: str, code: int | None = None, data: Any = None) -> None:
        super().__init__(f"{message} ({code})" if code is not None else message)
        self.code = code
        self.data = data
        self.message = message


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(p[:1].upper() + p[1:] for p in rest)


def to_params(query: Any, params: dict) -> dict:
    """Protocol params from a query and Python-style keyword arguments."""
    out: dict[str, Any] = {"query": query}
    for key, value in params.items():
        if value is None:
            continue
        if key in ("progress_token", "progressToken"):
            out.setdefault("_meta", {})["progressToken"] = value
        else:
            out[_camel(key) if "_" in key.strip("_") else key] = value
    return out


class _Transport:
    def exchange(self, payload: str, on_message: Callable[[dict], None], stream: bool = False,
                 raw: bool = False) -> str | None:
        raise NotImplementedError

    def close(self) -> None:
        pass


MAX_RETRY_AFTER = 5.0   # seconds: the longest `Retry-After` of a 503 the client waits before trying again


class _HttpTransport(_Transport):
    def __init__(self, url: str, token: str | None, timeout: float, busy_retries: int = 2) -> None:
        import urllib.parse

        parts = urllib.parse.urlsplit(url)
        if parts.scheme != "http":
            raise RetrieveError(f"only http:// URLs are supported (got {url!r})")
        self._host = parts.hostname or "127.0.0.1"
        self._port = parts.port or 80
        self._path = parts.path or "/"
        self._token = token
        self._timeout = timeout
        self._busy_retries = max(0, busy_retries)
        self._conn: Any = None
        self._lock = threading.Lock()

    def _connection(self) -> Any:
        if self._conn is None:
            import http.client

            self._conn = http.client.HTTPConnection(self._host, self._port, timeout=self._timeout)
        return self._conn

    def exchange(self, payload: str, on_message: Callable[[dict], None], stream: bool = False,
                 raw: bool = False) -> str | None:
        headers = {"Content-Type": "application/json",
                   "Accept": "application/json, text/event-stream" if stream else "application/json"}
        if self._token:
            headers["Authorization"] = f"Bearer {self._token}"
        with self._lock:
            resp = self._send(payload, headers)
            for _ in range(self._busy_retries):
                if resp.status != 503:
                    break
                # the server is at its connection limit: it said when to come back (capped), and closed
                wait = _retry_after(resp.getheader("Retry-After"))
                resp.read()
                self.close()
                time.sleep(wait)
                resp = self._send(payload, headers)
            if resp.status == 202:
                resp.read()
                return None
            if resp.getheader("Content-Type", "").startswith("text/event-stream"):
                last = None
                for data in _sse_events(resp):
                    msg = json.loads(data)
                    if isinstance(msg, dict) and "method" in msg and "id" not in msg:
                        on_message(msg)
                    else:
                        last = data
                resp.close()
                self._conn = None  # the server closes a stream's connection
                return last
            body = resp.read().decode("utf-8")
            if resp.will_close:
                self.close()   # the server ends this connection (a refusal, a 503): the next call opens a new one
            if resp.status != 200:
                err = _error_of(body)   # a refusal may carry a JSON-RPC error (413: -32600)
                raise RetrieveError(f"HTTP {resp.status}: {err.get('message') if err else body[:200]}",
                                    err.get("code") if err else None)
            return body

    def _send(self, payload: str, headers: dict) -> Any:
        """POST `payload` and return the response, once again on a fresh connection when the kept one was closed."""
        for attempt in (1, 2):
            conn = self._connection()
            try:
                conn.request("POST", self._path, body=payload.encode("utf-8"), headers=headers)
                return conn.getresponse()
            except (ConnectionError, OSError, _http_exception()) as exc:
                conn.close()
                self._conn = None
                if attempt == 2:
                    raise RetrieveError(f"cannot reach the server at {self._host}:{self._port}: {exc}") from exc
        raise AssertionError("unreachable")

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None


def _retry_after(value: str | None) -> float:
    """Seconds to wait from a `Retry-After` header (delta-seconds; a date or nonsense counts as 1), capped."""
    try:
        wait = float(value) if value is not None else 1.0
    except ValueError:
        wait = 1.0
    return min(max(wait, 0.0), MAX_RETRY_AFTER) if wait == wait else 1.0


def _http_exception() -> type[Exception]:
    import http.client

    return http.client.HTTPException


def _sse_events(resp: Any):
    data: list[str] = []
    for raw in resp:
        line = raw.decode("utf-8").rstrip("\r\n")
        if not line:
            if data:
                yield "\n".join(data)
                data = []
        elif line.startswith("data:"):
            data.append(line[5:].lstrip(" "))
    if data:
        yield "\n".join(data)


_RESPONSE_HEAD = b'{"jsonrpc":"2.0","id":'   # how this server writes every response; others are parsed to tell


class _StdioTransport(_Transport):
    def __init__(self, command: Sequence[str], env: dict | None, cwd: str | None) -> None:
        self._proc = subprocess.Popen(list(command), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                      stderr=subprocess.DEVNULL if env is None or not env.get("LADR_SERVE_STDERR")
                                      else None, env=env, cwd=cwd)
        self._lock = threading.Lock()

    def exchange(self, payload: str, on_message: Callable[[dict], None], stream: bool = False,
                 raw: bool = False) -> str | None:
        with self._lock:
            stdin, stdout = self._proc.stdin, self._proc.stdout
            if stdin is None or stdout is None or self._proc.poll() is not None:
                raise RetrieveError("the server process has exited")
            try:
                stdin.write(payload.encode("utf-8") + b"\n")
                stdin.flush()
            except OSError as exc:
                raise RetrieveError(f"the server process has exited: {exc}") from exc
            if raw:
                # What a malformed message gets back cannot be predicted from outside, so a ping
                # follows it: everything before the ping's answer is the message's answer.
                stdin.write(b'{"jsonrpc":"2.0","id":"__sync__","method":"ping"}\n')
                stdin.flush()
            answer = None
            while True:
                line = stdout.readline()
                if not line:
                    raise RetrieveError("the server process closed its output")
                text = line.decode("utf-8")
                if not raw and line.startswith(_RESPONSE_HEAD):
                    return text   # a response (a notification has no id): parsed once, by the caller
                obj = json.loads(text)
                if isinstance(obj, dict) and "method" in obj and "id" not in obj:
                    on_message(obj)
                    continue
                if raw and isinstance(obj, dict) and obj.get("id") == "__sync__":
                    return answer
                if not raw:
                    return text
                answer = text

    def close(self) -> None:
        if self._proc.poll() is None:
            try:
                if self._proc.stdin is not None:
                    self._proc.stdin.close()
                self._proc.wait(timeout=10)
            except (OSError, subprocess.TimeoutExpired):
                self._proc.kill()
                self._proc.wait()
        for stream in (self._proc.stdout,):
            if stream is not None:
                stream.close()


class RetrieveClient:
    """Talks to `ladr-lab serve` over HTTP or stdio; see the module docstring."""

    def __init__(self, transport: _Transport) -> None:
        self._transport = transport
        self._ids = itertools.count(1)
        self._tokens = itertools.count(1)

    @classmethod
    def http(cls, url: str, token: str | None = None, timeout: float = 60.0, busy_retries: int = 2) -> RetrieveClient:
        """A client for an HTTP server at `url` (with its bearer token, if it needs one; else LADR_SERVE_TOKEN); a
        `503` (the server at its connection limit) is tried again up to `busy_retries` times after its `Retry-After`."""
        return cls(_HttpTransport(url, token if token is not None else os.environ.get("LADR_SERVE_TOKEN"), timeout,
                                  busy_retries))

    @classmethod
    def stdio(cls, command: Sequence[str], env: dict | None = None, cwd: str | None = None) -> RetrieveClient:
        """Start `command` (e.g. `["ladr-lab", "serve", "--slate", "K=DIR", "--stdio"]`) and talk to it."""
        return cls(_StdioTransport(command, dict(os.environ) if env is None else env, cwd))

    def call(self, method: str, params: dict | None = None,
             on_progress: Callable[[dict], None] | None = None) -> Any:
        """Send one request and return its result; RetrieveError for an error response."""
        msg: dict[str, Any] = {"jsonrpc": "2.0", "id": next(self._ids), "method": method}
        if params is not None:
            msg["params"] = params

        def route(note: dict) -> None:
            if on_progress is not None and note.get("method") == "notifications/progress":
                on_progress(note.get("params") or {})

        text = self._exchange(json.dumps(msg), route, stream=on_progress is not None)
        if text is None:
            raise RetrieveError("the server sent no response")
        return _unwrap(json.loads(text))

    def _exchange(self, payload: str, route: Callable[[dict], None], stream: bool = False) -> str | None:
        return self._transport.exchange(payload, route, stream=stream)

    def initialize(self) -> dict:
        """The server's info and capabilities."""
        return self.call("initialize", {"protocolVersion": "2025-06-18", "clientInfo": {"name": "ladr_lab"}})

    def retrieve(self, query: Any, *, on_progress: Callable[[dict], None] | None = None, **params: Any) -> dict:
        """Run `retrieve` (params as keyword arguments); `on_progress` receives each progress notification."""
        body = to_params(query, params)
        if on_progress is not None and "_meta" not in body:
            body["_meta"] = {"progressToken": f"p{next(self._tokens)}"}
        return self.call("retrieve", body, on_progress)

    def batch(self, calls: Sequence[tuple[str, dict | None]]) -> list:
        """Send several requests as one JSON-RPC batch; returns results (or RetrieveError objects) in order."""
        ids = []
        msgs = []
        for method, params in calls:
            i = next(self._ids)
            ids.append(i)
            msg: dict[str, Any] = {"jsonrpc": "2.0", "id": i, "method": method}
            if params is not None:
                msg["params"] = params
            msgs.append(msg)
        text = self._exchange(json.dumps(msgs), lambda _n: None)
        answers = json.loads(text) if text else []
        by_id = {a.get("id"): a for a in answers if isinstance(a, dict)}
        out: list = []
        for i in ids:
            a = by_id.get(i)
            if a is None:
                out.append(RetrieveError("no answer in the batch response"))
                continue
            try:
                out.append(_unwrap(a))
            except RetrieveError as exc:
                out.append(exc)
        return out

    def send_raw(self, text: str) -> Any:
        """Send raw message text and return the parsed answer (None when nothing came back); for tests."""
        answer = self._transport.exchange(text, lambda _n: None, raw=True)
        return None if answer is None else json.loads(answer)

    def close(self) -> None:
        """Close the connection (and end a stdio server process)."""
        self._transport.close()

    def __enter__(self) -> RetrieveClient:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def _error_of(body: str) -> dict | None:
    """The JSON-RPC error object in an HTTP refusal's body, if it holds one."""
    try:
        msg = json.loads(body)
    except ValueError:
        return None
    err = msg.get("error") if isinstance(msg, dict) else None
    return err if isinstance(err, dict) and isinstance(err.get("code"), int) else None


def _unwrap(msg: Any) -> Any:
    if not isinstance(msg, dict):
        raise RetrieveError(f"unexpected answer: {str(msg)[:200]}")
    if "error" in msg:
        err = msg["error"] or {}
        raise RetrieveError(str(err.get("message")), err.get("code"), err.get("data"))
    return msg.get("result")
