"""OpenAICompatModel: `openai/MODEL` with an `api_base` (a local llama.cpp, vLLM or Ollama OpenAI endpoint, a fake
server in a benchmark), called over HTTP directly, without litellm.

Why: `import litellm` takes seconds (12-17 s on a loaded 2-CPU machine), which a cold `ladr-lab eval` paid on its
first cell and every Ray worker on its first cell; an OpenAI-compatible server needs one JSON POST to
`{api_base}/chat/completions`, which the standard library makes. Every other model name stays litellm's
(`LiteLLMModel`, the design's model layer): other providers, `openai/…` without an `api_base` (OpenAI itself, whose
model families litellm adapts parameters for), `mock_response`, and any name written `litellm:NAME` (the way to force
litellm for an OpenAI-compatible server too). `models/registry.py` decides.

What it keeps of `LiteLLMModel` (it is one, by subclass): the options and their checks, `grammar`/`constrain` in
the body's `grammar`, the key check (`models/keys.py`: OPENAI_API_KEY or an `api_key` option, as litellm's OpenAI
client demands even of a local server), errors as `ModelError('model "NAME" failed: ...')`, tokens from `usage`
(estimated when absent). Options: `api_base`, `api_key` (the `Authorization: Bearer` header), `timeout` (seconds,
default 600, litellm's), `extra_headers`, `extra_body` (merged into the body), `max_retries`/`num_retries` (default
2, the OpenAI client's: on a connection error, 408, 409, 429 and 5xx, after 0.5 s, 1 s, ...); every other option is
a body field (`temperature`, `seed`, `max_tokens`, `stop`, `response_format`, ...). Cost is priced from the cost map
litellm ships (`model_prices_and_context_window_backup.json`, read as JSON without importing litellm) by the model's
name; a model it does not price costs 0, as with litellm. Connections are kept alive, one per thread and server.

A watched call (`CallInfo.stream`, models/stream.py) is streamed: the body asks `"stream": true` with
`stream_options: {"include_usage": true}`, the server's server-sent events are read as they come (each `data:` chunk's
`choices[0].delta.content` written to the stream) until `data: [DONE]`, and the answer is their concatenation, its
tokens the final chunk's `usage` (estimated when the server sends none). A cancel shuts the socket down, so a read
waiting on the server returns at once, and the connection is dropped (a half-read answer cannot be reused).
"""
from __future__ import annotations

import http.client
import json
import os
import threading
import time
from functools import partial
from typing import Any
from urllib.parse import urlsplit

from ..errors import ModelError
from .base import CallInfo, Completion, estimate_message_tokens, estimate_tokens
from .keys import key_problem
from .litellm_model import LiteLLMModel
from .stream import TokenStream

__all__ = ["OpenAICompatModel", "price_of"]

_TRANSPORT = ("api_base", "api_key", "timeout", "extra_headers", "extra_body", "max_retries", "num_retries")
# litellm's own keywords: settings of litellm, which it never sends to a server (nor does this client)
_LITELLM_ONLY = ("drop_params", "input_cost_per_token", "output_cost_per_token", "input_cost_per_second",
                 "output_cost_per_second", "custom_llm_provider", "api_version", "caching", "metadata",
                 "mock_response", "litellm_logging_obj", "model_info", "num_retries", "fallbacks", "context_window_fallbacks",
                 "base_model", "logger_fn", "verbose", "use_litellm_proxy")
_RETRY = {408, 409, 429, 500, 502, 503, 504}
_PRICES: dict[str, Any] | None = None
_PRICES_LOCK = threading.Lock()


def _prices() -> dict[str, Any]:
    """litellm's shipped cost map, read once as JSON (litellm itself is not imported); {} when absent."""
    global _PRICES
    with _PRICES_LOCK:
        if _PRICES is None:
            import importlib.util

            _PRICES = {}
            try:
                spec = importlib.util.find_spec("litellm")      # finds the package without running it
                if spec is not None and spec.origin:
                    path = os.path.join(os.path.dirname(spec.origin), "model_prices_and_context_window_backup.json")
                    with open(path, encoding="utf-8") as f:
                        _PRICES = json.load(f)
            except (OSError, ValueError, ImportError):
                _PRICES = {}
        return _PRICES


def price_of(model: str, tokens_in: int, tokens_out: int) -> float:
    """The cost in USD of a call to `model` (`openai/gpt-4o-mini` or `gpt-4o-mini`) by litellm's cost map; 0.0 for
    a model it does not price."""
    table = _prices()
    bare = model.split("/", 1)[1] if model.startswith("openai/") else model
    entry = table.get(bare) or table.get(model)
    if not isinstance(entry, dict):
        return 0.0
    try:
        return float(entry.get("input_cost_per_token") or 0.0) * tokens_in + \
            float(entry.get("output_cost_per_token") or 0.0) * tokens_out
    except (TypeError, ValueError):
        return 0.0


class OpenAICompatModel(LiteLLMModel):
    """`openai/MODEL` at an `api_base`, called directly (one JSON POST per call; litellm is never imported)."""

    def __init__(self, name: str, *, max_concurrency: int = 8, **params) -> None:
        super().__init__(name, max_concurrency=max_concurrency, **params)
        base = str(self.params.get("api_base") or "").rstrip("/")
        parts = urlsplit(base)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ModelError(f'model "{name}": api_base must be an http(s) URL (got {base!r})')
        self._parts = parts
        self._local = threading.local()
        self._conns: list[http.client.HTTPConnection] = []     # every thread's, closed by close()
        self._conns_lock = threading.Lock()

    def check(self) -> None:
        """Refuse, before any call, a missing key (OPENAI_API_KEY or an `api_key` option)."""
        if self._checked:
            return
        problem = key_problem(self.name, self.params)
        if problem:
            raise ModelError(problem)
        self._checked = True

    def complete(self, messages: list[dict], call: CallInfo | None = None) -> Completion:
        """POST the messages to `{api_base}/chat/completions` and measure the answer."""
        self.check()
        params, constrained = self._params_for(call)
        body: dict[str, Any] = {k: v for k, v in params.items() if k not in _TRANSPORT and k not in _LITELLM_ONLY}
        body.update({"model": self.name.split("/", 1)[1], "messages": messages})
        body.update(params.get("extra_body") or {})
        stream = call.stream if call is not None else None
        if stream is not None:
            body["stream"] = True
            body.setdefault("stream_options", {"include_usage": True})
        start = time.perf_counter()
        try:
            resp = self._post(json.dumps(body).encode("utf-8"), params, stream)
        except ModelError:
            raise
        except Exception as exc:
            raise ModelError(f'model "{self.name}" failed: {type(exc).__name__}: {exc}') from exc
        latency = time.perf_counter() - start
        try:
            text = resp["choices"][0]["message"].get("content") or ""
            finish = resp["choices"][0].get("finish_reason")
        except (AttributeError, IndexError, KeyError, TypeError) as exc:
            raise ModelError(f'model "{self.name}" returned no choices') from exc
        raw = resp.get("usage")
        usage: dict = raw if isinstance(raw, dict) else {}
        tokens_in = int(usage.get("prompt_tokens") or estimate_message_tokens(messages))
        tokens_out = int(usage.get("completion_tokens") or estimate_tokens(text))
        if "input_cost_per_token" in params or "output_cost_per_token" in params:     # litellm's custom pricing
            cost = float(params.get("input_cost_per_token") or 0.0) * tokens_in + \
                float(params.get("output_cost_per_token") or 0.0) * tokens_out
        else:
            cost = price_of(self.name, tokens_in, tokens_out)
        # llama.cpp's server says how fast it read the prompt and generated (`timings`), streamed or not
        raw_timings = resp.get("timings")
        timings: dict = raw_timings if isinstance(raw_timings, dict) else {}
        return Completion(text=text, tokens_in=tokens_in, tokens_out=tokens_out, cost=cost, latency=latency, model=self.name,
                          constrained=constrained, finish_reason=str(finish) if finish else None,
                          invocation_parameters=self.invocation_parameters(params),
                          prompt_tps=_number(timings.get("prompt_per_second")),
                          gen_tps=_number(timings.get("predicted_per_second")))

    def _connection(self, timeout: float) -> http.client.HTTPConnection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            p = self._parts
            cls = http.client.HTTPSConnection if p.scheme == "https" else http.client.HTTPConnection
            conn = cls(p.hostname or "", p.port, timeout=timeout)
            self._local.conn = conn
            with self._conns_lock:
                self._conns.append(conn)
        return conn

    def _post(self, payload: bytes, params: dict, stream: TokenStream | None = None) -> dict:
        """The server's JSON answer, retried on a dropped connection and the status codes the OpenAI client retries;
        with a `stream`, the server's events read as they come, and the answer they add up to."""
        timeout = float(params.get("timeout") or 600.0)
        retries = int(params.get("max_retries", params.get("num_retries", 2)) or 0)
        headers = {"Content-Type": "application/json", "Accept": "application/json",
                   **{str(k): str(v) for k, v in (params.get("extra_headers") or {}).items()}}
        key = params.get("api_key") or os.environ.get("OPENAI_API_KEY")
        if key:
            headers["Authorization"] = f"Bearer {key}"
        path = (self._parts.path.rstrip("/") or "") + "/chat/completions"
        if stream is not None:
            headers["Accept"] = "text/event-stream"
        for attempt in range(retries + 1):
            if stream is not None:
                stream.check()
            conn = self._connection(timeout)
            forget = stream.on_cancel(partial(_shut, conn)) if stream is not None else None
            try:
                conn.request("POST", path, body=payload, headers=headers)
                answer = conn.getresponse()
                if stream is not None and answer.status < 400:
                    return self._read_events(answer, conn, stream)
                data = answer.read()
            except (OSError, http.client.HTTPException) as exc:
                self._drop(conn)
                if stream is not None:
                    stream.check()          # a socket shut down by a cancel: the call was stopped, not broken
                if attempt < retries:
                    time.sleep(0.5 * 2 ** attempt)
                    continue
                raise ModelError(f'model "{self.name}" failed: {type(exc).__name__}: {exc}') from exc
            finally:
                if forget is not None:
                    forget()
            if answer.status in _RETRY and attempt < retries:
                time.sleep(0.5 * 2 ** attempt)
                continue
            if answer.status >= 400:
                text = data.decode("utf-8", "replace").strip()
                raise ModelError(f'model "{self.name}" failed: HTTP {answer.status} {answer.reason}: {text[:500]}')
            try:
                doc = json.loads(data)
            except ValueError as exc:
                raise ModelError(f'model "{self.name}" failed: the answer is not JSON: {data[:200]!r}') from exc
            if not isinstance(doc, dict):
                raise ModelError(f'model "{self.name}" returned no choices')
            return doc
        raise ModelError(f'model "{self.name}" failed')     # pragma: no cover - the loop returns or raises

    def _read_events(self, answer: http.client.HTTPResponse, conn: http.client.HTTPConnection,
                     stream: TokenStream) -> dict:
        """Read a streamed answer's server-sent events, writing each chunk's text to `stream`; the answer as the
        unstreamed call returns it: one choice with the whole text, and the last chunk's usage."""
        parts: list[str] = []
        usage: dict | None = None
        timings: dict | None = None
        finish = None
        done = False
        data: list[str] = []
        try:
            while not done:
                raw = answer.readline()
                stream.check()                   # (a cancel shuts the socket: the read ends empty)
                if not raw:
                    break                        # the server closed the stream (without [DONE]: taken as the end)
                line = raw.decode("utf-8").rstrip("\r\n")
                if line.startswith("data:"):
                    data.append(line[5:].removeprefix(" "))
                    continue
                if line or not data:
                    continue                     # another field (event:, id:, a :comment), or a blank line alone
                event, data = "\n".join(data), []
                if event.strip() == "[DONE]":
                    done = True
                    break
                chunk = _chunk(event, self.name)
                for choice in chunk.get("choices") or ():
                    if isinstance(choice, dict) and choice.get("index", 0) == 0:
                        piece = (choice.get("delta") or {}).get("content") or ""
                        if piece:
                            parts.append(piece)
                            stream.write(piece)
                        finish = choice.get("finish_reason") or finish
                if isinstance(chunk.get("usage"), dict):
                    usage = chunk["usage"]
                if isinstance(chunk.get("timings"), dict):
                    timings = chunk["timings"]
            if done:
                answer.read()                    # the body's end, so the kept-alive connection can be used again
        except (OSError, http.client.HTTPException, UnicodeDecodeError) as exc:
            self._drop(conn)
            stream.check()
            raise ModelError(f'model "{self.name}" failed while streaming: {type(exc).__name__}: {exc}') from exc
        except BaseException:
            self._drop(conn)             # stopped (or failed) half-way: this connection's answer is unread
            raise
        if not done:
            self._drop(conn)
        return {"choices": [{"index": 0, "message": {"role": "assistant", "content": "".join(parts)},
                             "finish_reason": finish}], "usage": usage, "timings": timings}

    def _drop(self, conn: http.client.HTTPConnection) -> None:
        """Close this thread's broken connection and forget it (the next call opens a new one)."""
        conn.close()
        self._local.conn = None
        with self._conns_lock:
            if conn in self._conns:
                self._conns.remove(conn)

    def close(self) -> None:
        """Close every thread's kept-alive connection (a later call opens a new one)."""
        with self._conns_lock:
            conns, self._conns = self._conns, []
        for conn in conns:
            conn.close()
        self._local = threading.local()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:   # noqa: BLE001 - interpreter shutdown
            pass

    def __repr__(self) -> str:
        return f"OpenAICompatModel({self.name!r})"


def _chunk(event: str, name: str) -> dict:
    """One streamed event's JSON chunk; an error the server sends mid-stream is the call's error."""
    try:
        chunk = json.loads(event)
    except ValueError as exc:
        raise ModelError(f'model "{name}" failed: a streamed chunk is not JSON: {event[:200]!r}') from exc
    if not isinstance(chunk, dict):
        raise ModelError(f'model "{name}" failed: a streamed chunk is not a JSON object: {event[:200]!r}')
    if chunk.get("error"):
        err = chunk["error"]
        raise ModelError(f'model "{name}" failed: {err.get("message") if isinstance(err, dict) else err}')
    return chunk


def _number(value: Any) -> float | None:
    """A positive number the server sent, else None."""
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0 else None


def _shut(conn: http.client.HTTPConnection) -> None:
    """Shut a connection's socket down from another thread: a read blocked on it returns at once (a cancel)."""
    import socket

    sock = conn.sock
    if sock is not None:
        sock.shutdown(socket.SHUT_RDWR)
