"""The response cache: a per-user, on-disk store of live models' answers, shared by `run`, `eval`, `experiment()`
and the Stepper, so running the same ladder on the same rows again costs no model call (docs/models.md, "The
response cache").

- **What is cached**: the answers of live models only, those that say what a call sends (`cache_request`, an
  optional method beside `Model`: `LiteLLMModel` and `LocalModel` have it). `offline`, `script:`, scripted callables,
  `replay:` (recorded) and hand-typed (edited) answers are never cached: they are deterministic or recorded already.
- **The key**: a SHA-256 over what the call sends, as the model tells it (`cache_request`): the model name, the exact
  messages, every option that reaches the call (temperature, seed, max_tokens, top_p, api_base, extra_body, ...) and
  the call's constraint grammar (under `constrain: request`, the grammar of that call's requestMatch); the options'
  order does not matter. Secrets (`api_key` and any option or header named like a key, secret, token or password)
  and transport settings (`timeout`, `num_retries`, ...) are left out: they decide who pays and how long one waits,
  not the answer, and no secret is ever written to the cache file, not even hashed. The key starts with
  `KEY_VERSION`, so a future change of the key's format misses instead of answering wrongly.
- **Repeats**: the n-th identical request of one run (same key) is keyed with its occurrence n, so a run that asks
  the same thing three times gets three answers (three samples, cached in their turn) and a cached run replays its
  own sequence. An experiment's `repeat=N` (`--repeat N`) keys the runs of a cell apart the same way: run r of a
  cell answers through `ResponseCache.for_repeat(r)`, whose keys end in `:repeat-r` (run 1's are the plain keys),
  so runs 2..N miss the entries of run 1 and ask the model afresh, and running the same experiment again replays
  every run's own answers.
- **Where**: `cache_root()/responses/answers.sqlite` (so `$LADR_LAB_CACHE_DIR` moves it), or
  `$LADR_LAB_RESPONSE_CACHE` (a folder, or `off`), or a folder given (`--cache-dir DIR`, `cache="DIR"`).
- **Concurrency**: SQLite from the standard library, in WAL mode with a busy timeout, one row per key written by a
  single `INSERT OR REPLACE` (atomic: a reader sees the whole answer or none), one connection per thread; many
  threads and processes (the local pool, Ray workers, two `ladr-lab eval` at once) read and write it at once.
- **A cached answer** is the stored Completion with `provenance="cached"`, its recorded tokens, cost 0 (what the
  user pays now) and the lookup's latency; the trace's `llm_call` says `provenance: "cached"`, and the round's
  `why:` line says the answer came from the response cache, not a fresh call.
"""
from __future__ import annotations

import copy
import hashlib
import json
import os
import re
import sqlite3
import threading
import time
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ..cachedir import cache_root
from ..errors import CallCancelled, ModelError
from .base import CallInfo, Completion, WrappedModel

__all__ = ["CACHE_FILE", "KEY_VERSION", "RESPONSE_CACHE_ENV", "CachedModel", "ResponseCache", "cache_key",
           "cacheable", "default_cache_dir", "key_request", "resolve_cache", "with_cache", "without_secrets"]

KEY_VERSION = "ladr-response-v1"
RESPONSE_CACHE_ENV = "LADR_LAB_RESPONSE_CACHE"
CACHE_FILE = "answers.sqlite"
BUSY_SECONDS = 60.0                      # how long a writer waits for another process's write
_OFF = {"off", "0", "false", "no", "none"}
# an option (or header) whose name says it holds a credential: never keyed, never stored
_SECRET = re.compile(r"(^|_)(api_?key|key|secret|password|passwd|token|authorization|auth|credentials?|cookie)$")
# transport settings: how a call is made, not what it answers
_TRANSPORT = frozenset({"timeout", "request_timeout", "num_retries", "max_retries", "stream_timeout", "metadata"})


def default_cache_dir() -> Path | None:
    """The default folder: `$LADR_LAB_RESPONSE_CACHE` (None when it says `off`), else `cache_root()/responses`."""
    env = os.environ.get(RESPONSE_CACHE_ENV, "").strip()
    if env.lower() in _OFF and env:
        return None
    return Path(env).expanduser() if env else cache_root() / "responses"


def _secret(name: Any) -> bool:
    return isinstance(name, str) and bool(_SECRET.search(name.strip().lower().replace("-", "_")))


# where a request carries credentials: its keywords (`params`, or the request itself) and their headers. Only there
# are keys named like a secret left out: inside messages, `response_format`, `tools` or `extra_body` a property named
# `key` or `password` is content, and two requests that differ there must not share an answer
_HEADERS = ("extra_headers", "headers", "default_headers")


def without_secrets(params: Mapping[str, Any]) -> dict[str, Any]:
    """A call's keywords without credentials: `api_key` and any keyword or header named like a key, secret, token or
    password (what a span's `llm.invocation_parameters` and the cache may show)."""
    return _keywords(params, transport=True)


def _keywords(params: Mapping[str, Any], *, transport: bool = False) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in params.items():
        if _secret(k) or (k in _TRANSPORT and not transport):
            continue
        if k in _HEADERS and isinstance(v, Mapping):
            v = {str(h): x for h, x in v.items() if not _secret(h)}
        out[str(k)] = v
    return out


def key_request(request: Mapping[str, Any]) -> dict[str, Any]:
    """`request` as keyed: its keywords (`params`, else the request's own keys) without secrets (`api_key`, a header
    named like a credential) or transport settings (`timeout`, retries); everything else, at any depth, as sent."""
    req = dict(request)
    if isinstance(req.get("params"), Mapping):
        req["params"] = _keywords(req["params"])
        return req
    return _keywords(req)


def cache_key(request: Mapping[str, Any], occurrence: int = 1, repeat: int = 1) -> str:
    """The key of the `occurrence`-th identical request of a run: `KEY_VERSION:sha256:occurrence`, and
    `...:occurrence:repeat-R` in run R > 1 of an experiment's repeated cell."""
    doc = json.dumps(key_request(request), sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=repr)
    digest = hashlib.sha256(doc.encode("utf-8", "surrogatepass")).hexdigest()
    return f"{KEY_VERSION}:{digest}:{occurrence}" + (f":repeat-{repeat}" if repeat != 1 else "")


_SCHEMA = ("CREATE TABLE IF NOT EXISTS answers (key TEXT PRIMARY KEY, model TEXT NOT NULL, "
           "completion TEXT NOT NULL, created REAL NOT NULL)")


class ResponseCache:
    """The answers store in `folder` (see the module docstring). `ResponseCache.at(folder)` shares one per folder in
    a process. A store that fails once it is open (a full disk) warns once and answers nothing after that: a cache
    never fails a run."""

    _open: dict[str, ResponseCache] = {}
    _open_lock = threading.Lock()
    repeat: int = 1          # which run of a repeated experiment cell asks through it (`for_repeat`)

    def __init__(self, folder: str | Path) -> None:
        self.folder = Path(folder).expanduser()
        self.path = self.folder / CACHE_FILE
        self._local = threading.local()
        self.broken: str | None = None
        try:
            self.folder.mkdir(parents=True, exist_ok=True, mode=0o700)    # answers may hold private text
            db = self._db()
            db.execute(_SCHEMA)
        except (OSError, sqlite3.Error) as exc:
            raise ModelError(f"cannot use {self.folder} as a response cache: {type(exc).__name__}: {exc}") from None

    @classmethod
    def at(cls, folder: str | Path) -> ResponseCache:
        """The process's one ResponseCache of `folder`, opened on first use."""
        real = os.path.realpath(Path(folder).expanduser())
        with cls._open_lock:
            found = cls._open.get(real)
            if found is None:
                found = cls._open[real] = cls(real)
            return found

    def for_repeat(self, repeat: int) -> ResponseCache:
        """This store as run `repeat` of a repeated experiment cell sees it: the same file and connections, its
        answers keyed apart (`cache_key(..., repeat=repeat)`); run 1 is the store itself."""
        if repeat == 1:
            return self
        view = copy.copy(self)         # shares the folder, the per-thread connections and the broken flag's start
        view.repeat = repeat
        return view

    def _db(self) -> sqlite3.Connection:
        db = getattr(self._local, "db", None)
        if db is None:          # one connection per thread: sqlite3 connections are not shared between threads
            db = sqlite3.connect(str(self.path), timeout=BUSY_SECONDS, isolation_level=None)
            db.execute(f"PRAGMA busy_timeout={int(BUSY_SECONDS * 1000)}")
            db.execute("PRAGMA journal_mode=WAL")        # readers never wait for a writer; small writes stay cheap
            db.execute("PRAGMA synchronous=NORMAL")
            self._local.db = db
        return db

    def _failed(self, exc: BaseException) -> None:
        if self.broken is None:
            self.broken = f"{type(exc).__name__}: {exc}"
            warnings.warn(f"the response cache {self.path} failed ({self.broken}); going on without it",
                          RuntimeWarning, stacklevel=3)

    def get(self, key: str) -> Completion | None:
        """The answer stored under `key` (as it was stored), or None."""
        if self.broken:
            return None
        try:
            row = self._db().execute("SELECT completion FROM answers WHERE key = ?", (key,)).fetchone()
        except sqlite3.Error as exc:
            self._failed(exc)
            return None
        if row is None:
            return None
        try:
            d = json.loads(row[0])
            return Completion(text=str(d["text"]), tokens_in=int(d.get("tokens_in", 0)),
                              tokens_out=int(d.get("tokens_out", 0)), cost=float(d.get("cost", 0.0)),
                              latency=float(d.get("latency", 0.0)), model=str(d.get("model", "")),
                              provenance=str(d.get("provenance", "live")), constrained=d.get("constrained"),
                              finish_reason=d.get("finish_reason"),
                              invocation_parameters=d.get("invocation_parameters"))
        except (ValueError, KeyError, TypeError):      # a row this version cannot read: a miss, rewritten after
            return None

    def put(self, key: str, comp: Completion) -> None:
        """Store `comp` under `key` (one statement: atomic, the last writer of a key wins)."""
        if self.broken:
            return
        doc = json.dumps({"text": comp.text, "tokens_in": comp.tokens_in, "tokens_out": comp.tokens_out,
                          "cost": comp.cost, "latency": comp.latency, "model": comp.model,
                          "provenance": comp.provenance, "constrained": comp.constrained,
                          "finish_reason": comp.finish_reason,
                          "invocation_parameters": comp.invocation_parameters}, ensure_ascii=False, default=repr)
        try:
            self._db().execute("INSERT OR REPLACE INTO answers (key, model, completion, created) VALUES (?, ?, ?, ?)",
                               (key, comp.model, doc, time.time()))
        except sqlite3.Error as exc:
            self._failed(exc)

    def __len__(self) -> int:
        return int(self._db().execute("SELECT count(*) FROM answers").fetchone()[0])

    def clear(self) -> None:
        """Forget every stored answer."""
        self._db().execute("DELETE FROM answers")

    def __repr__(self) -> str:
        return f"ResponseCache({str(self.folder)!r}" + (f", repeat={self.repeat})" if self.repeat != 1 else ")")


def resolve_cache(cache: Any) -> ResponseCache | None:
    """`True` → the default cache (None when `$LADR_LAB_RESPONSE_CACHE` is `off`); `False`/None → no cache; a folder
    (str or Path) → the cache there; a ResponseCache → itself."""
    if cache is None or cache is False:
        return None
    if isinstance(cache, ResponseCache):
        return cache
    if cache is True:
        folder = default_cache_dir()
        return ResponseCache.at(folder) if folder is not None else None
    if isinstance(cache, (str, Path)) and str(cache).strip():
        return ResponseCache.at(cache)
    raise ModelError(f"cache must be True, False, a folder or a ResponseCache (got {cache!r})")


def cacheable(model: Any) -> bool:
    """Whether `model` is a live model the cache may answer for: it says what a call sends (`cache_request`)."""
    return callable(getattr(model, "cache_request", None)) and not isinstance(model, CachedModel)


def with_cache(model: Any, cache: Any, *, owns: bool = True) -> Any:
    """`model` answering through the response cache `cache` (see `resolve_cache`) when it is a live model; any other
    model (deterministic, recorded, a user's own) as it is."""
    store = resolve_cache(cache)
    if store is None or not cacheable(model):
        return model
    return CachedModel(model, store, owns=owns)


@dataclass
class CacheStats:
    """What a CachedModel did: answers from the cache (`hits`) and live answers stored (`stored`)."""

    hits: int = 0
    stored: int = 0


class CachedModel(WrappedModel):
    """A live model whose answers go through a ResponseCache: a stored answer is returned marked `cached`, a miss is
    asked of `model` and its live answer stored. One CachedModel counts identical requests for one run (repeats)."""

    HIDDEN = ("model", "cache_request")      # a cached model is not cached again

    def __init__(self, model: Any, cache: ResponseCache, *, owns: bool = True) -> None:
        super().__init__(model, owns=owns)
        self.cache = cache
        self.cache_stats = CacheStats()
        self._seen: dict[str, int] = {}
        self._lock = threading.Lock()

    def complete(self, messages: list[dict], call: CallInfo | None = None) -> Completion:
        """The stored answer of this request (its n-th occurrence in this run), else the model's, stored."""
        start = time.perf_counter()
        request = self.model.cache_request(messages, call)
        if request is None:                       # the model says this call is not to be cached
            return self.model.complete(messages, call)
        base = cache_key(request, 0)
        with self._lock:
            n = self._seen[base] = self._seen.get(base, 0) + 1
        key = cache_key(request, n, self.cache.repeat)
        hit = self.cache.get(key)
        if hit is not None:
            with self._lock:
                self.cache_stats.hits += 1
            return replace(hit, provenance="cached", cost=0.0, latency=round(time.perf_counter() - start, 6))
        try:
            comp = self.model.complete(messages, call)
        except CallCancelled:
            with self._lock:          # not answered: the call made again is this occurrence again, not the next
                self._seen[base] -= 1
            raise
        if comp.provenance == "live" and (comp.text or "").strip():     # an empty answer is a glitch, not an answer
            self.cache.put(key, comp)
            with self._lock:
                self.cache_stats.stored += 1
        return comp

    def __repr__(self) -> str:
        return f"CachedModel({self.model!r}, {self.cache!r})"
