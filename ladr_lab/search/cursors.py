"""What the engine remembers between requests: cursor states (a next page) and sessions' seen hits.

`Cursors` hands out opaque tokens (12 random bytes in hex, as `secrets.token_hex(12)` makes them, drawn
256 at a time) for page states and keeps the last `MAX_CURSORS`; a state may be a callable that makes it
(the lean path's, built only when the cursor is followed). `Sessions` keeps, for the last `MAX_SESSIONS`
session ids, the ids already returned (at most `MAX_SESSION_IDS` each), so a session never sees a hit twice.
Both are thread-safe: one lock each, held only for the bookkeeping. `RecallMore` is how a cursor over a
sized recall (pipeline.py) recalls further as it pages.
"""
from __future__ import annotations

import secrets
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

MAX_SESSIONS = 1024
MAX_SESSION_IDS = 100_000
MAX_CURSORS = 512

__all__ = ["Cursors", "MAX_CURSORS", "MAX_SESSIONS", "MAX_SESSION_IDS", "RecallMore", "Sessions"]


class Cursors:
    """Page states by token, the newest `MAX_CURSORS` kept."""

    def __init__(self) -> None:
        self._states: OrderedDict[str, dict | Callable[[], dict]] = OrderedDict()
        self._lock = threading.Lock()
        self._seq = 0
        self._tokens = secrets.token_hex(12 * 256)

    def save(self, state: dict | Callable[[], dict]) -> str:
        """A new token for `state` (never changed after this: a next page works on a copy)."""
        with self._lock:
            if self._seq >= len(self._tokens):
                self._tokens, self._seq = secrets.token_hex(12 * 256), 0
            token = self._tokens[self._seq:self._seq + 24]
            self._seq += 24
            self._states[token] = state
            while len(self._states) > MAX_CURSORS:
                self._states.popitem(last=False)
        return token

    def load(self, token: str) -> dict | None:
        """The state saved under `token` (made now, once, when it was saved as a callable); None when unknown."""
        with self._lock:
            state = self._states.get(token)
            if state is not None and not isinstance(state, dict):
                state = self._states[token] = state()
        return state


class Sessions:
    """Per session id, the hit ids already returned; the `MAX_SESSIONS` most recently used sessions kept.

    A session is used by any call naming it (a cursor's next page included); past the cap the least recently
    used is forgotten, and a later call naming it starts an empty one. The ids' length is capped by
    `request.MAX_SESSION_CHARS`, so what the sessions hold is bounded.
    """

    def __init__(self) -> None:
        self._seen: OrderedDict[str, set] = OrderedDict()
        self._lock = threading.Lock()

    def seen(self, session: str) -> set:
        """The ids `session` was already given (a new, empty set for a new session)."""
        with self._lock:
            seen = self._seen.get(session)
            if seen is None:
                seen = self._seen[session] = set()
                while len(self._seen) > MAX_SESSIONS:
                    self._seen.popitem(last=False)
            self._seen.move_to_end(session)
            return seen

    def add(self, session: str, ids: list) -> None:
        """Note `ids` as given to `session` (beyond MAX_SESSION_IDS a session's set stops growing)."""
        seen = self.seen(session)
        if len(seen) < MAX_SESSION_IDS:
            seen.update(ids)



class RecallMore:
    """A cursor's further recall: the first `n` candidates of one query (minScore applied), their stages put in
    `into`, and how many recall found (fewer than `n`: it is exhausted)."""

    __slots__ = ("floor", "mode", "pred", "query", "recall", "unit")

    def __init__(self, recall: Callable[..., list], query: str, mode: str, unit: str, pred: Callable | None = None,
                 floor: float | None = None) -> None:
        self.recall = recall   # the engine's recall: (snapshot, queries, mode, unit, n, pred, fusion, stages)
        self.query = query
        self.mode = mode
        self.unit = unit
        self.pred = pred
        self.floor = floor

    def __call__(self, at: Any, n: int, into: dict) -> tuple[list, int]:
        got = self.recall(at, [self.query], self.mode, self.unit, n, self.pred, None, into)
        floor = self.floor
        return (got if floor is None else [(key, s) for key, s in got if s >= floor]), len(got)
