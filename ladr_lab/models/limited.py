"""A rate limit shared by every run that calls one provider: `RateLimiter` (token buckets by key, thread-safe) and
`LimitedModel`, a model that takes a token before each call it passes on.

A rate is `"N/s"`, `"N/min"` or `"N/h"` (or a number: calls per second). Each key (a provider, e.g. `openai`, as
`provider_of` reads it from a model name: `trace/providers.py`, re-exported here; a name that gives none is counted
under itself) has a bucket of `N` tokens refilled evenly over the period, so a burst never exceeds `N` and a long
run keeps the rate. In one process every thread shares the limiter; across Ray workers one actor holds it
(`experiments.ray_backend`), and each worker's `LimitedModel` asks that actor through the same `acquire`.
"""
from __future__ import annotations

import re
import threading
import time
from collections.abc import Mapping
from typing import Any

from ..errors import ModelError
from ..trace.providers import provider_of
from .base import CallInfo, Completion, WrappedModel

__all__ = ["LimitedModel", "RateLimiter", "parse_rate", "provider_of"]

_RATE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(?:/\s*(s|sec|second|m|min|minute|h|hour))?\s*$", re.I)
_PERIOD = {"s": 1.0, "sec": 1.0, "second": 1.0, "m": 60.0, "min": 60.0, "minute": 60.0, "h": 3600.0,
           "hour": 3600.0}


def parse_rate(rate: str | float | int) -> tuple[float, float]:
    """(calls, period in seconds) of a rate such as "60/min", "5/s" or 2.5 (calls per second)."""
    if isinstance(rate, bool):
        raise ModelError(f"rate limit {rate!r}: give calls per period, e.g. 60/min or 5/s")
    if isinstance(rate, (int, float)):
        calls, period = float(rate), 1.0
    else:
        m = _RATE.match(str(rate))
        if not m:
            raise ModelError(f"rate limit {rate!r}: give calls per period, e.g. 60/min or 5/s")
        calls, period = float(m.group(1)), _PERIOD[(m.group(2) or "s").lower()]
    if calls <= 0:
        raise ModelError(f"rate limit {rate!r}: the number of calls must be positive")
    return calls, period


class RateLimiter:
    """Token buckets by key; `acquire(key)` blocks until the key's bucket has a token (keys without a rate, and
    `"*"` as the rate of every key not named, are counted under their own bucket)."""

    def __init__(self, rates: Mapping[str, str | float] | str | float) -> None:
        if not isinstance(rates, Mapping):
            rates = {"*": rates}
        self.rates = {str(k): parse_rate(v) for k, v in rates.items()}
        self._tokens: dict[str, float] = {}
        self._stamp: dict[str, float] = {}
        self._lock = threading.Lock()
        self.waited = 0.0            # seconds callers spent waiting, in total
        self.granted = 0

    def _rate(self, key: str) -> tuple[float, float] | None:
        return self.rates.get(key) or self.rates.get("*")

    def delay(self, key: str) -> float:
        """Take a token for `key` now if one is there (0.0), else reserve the next and return how long to wait."""
        rate = self._rate(key)
        if rate is None:
            return 0.0
        calls, period = rate
        per_token = period / calls
        with self._lock:
            now = time.monotonic()
            tokens = self._tokens.get(key, calls)
            tokens = min(calls, tokens + (now - self._stamp.get(key, now)) / per_token)
            self._stamp[key] = now
            tokens -= 1.0          # reserved: a negative balance is the queue of callers waiting for refills
            self._tokens[key] = tokens
            self.granted += 1
            wait = 0.0 if tokens >= 0 else -tokens * per_token
            self.waited += wait
            return wait

    def acquire(self, key: str) -> float:
        """Block until `key` may make one call; returns the seconds waited."""
        wait = self.delay(key)
        if wait > 0:
            time.sleep(wait)
        return wait

    def __repr__(self) -> str:
        rates = ", ".join(f"{k}: {c:g}/{p:g}s" for k, (c, p) in self.rates.items())
        return f"RateLimiter({rates})"


class LimitedModel(WrappedModel):
    """A model that waits for the limiter's token under `key` before passing each call to `model`."""

    def __init__(self, model: Any, limiter: Any, key: str, *, owns: bool = True) -> None:
        super().__init__(model, owns=owns)
        self.limiter = limiter
        self.key = key

    def complete(self, messages: list[dict], call: CallInfo | None = None) -> Completion:
        """Wait for a token, then answer through the wrapped model (a watched call that is cancelled while it waits
        stops waiting at once: models/stream.py)."""
        stream = call.stream if call is not None else None
        if stream is None:
            self.limiter.acquire(self.key)
        else:
            stream.sleep(self.limiter.delay(self.key))
        return self.model.complete(messages, call)
