"""A request's time budget: a deadline the pipeline checks between its steps, as Elasticsearch's `timeout`.

The server gives each message (one request, or a whole batch) a budget (`--request-timeout`, 5 s by
default; advertised as `limits.requestTimeoutMs`), and a `retrieve` may ask for less (`timeoutMs`). The
budget is the current one of a context variable (`request_budget(seconds)` sets it for a block; a budget
inside another keeps the earlier deadline), so the stages read it with `check_budget(stage)` wherever they
are, without threading it through every call, and an engine that never checks still works. Checks are
cooperative: at each stage's start, at every node of a filter's bulk evaluation, in the sparse index's
fetch loop and every few MMR picks; a step already running (one index search, one model call) finishes
first. Past the deadline `check_budget` raises `RequestTimeout`, which the server answers as a JSON-RPC
error (-32001) rather than with partial results: an unfinished filter or recall would rank silently wrong.
"""
from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from .errors import RequestTimeout

__all__ = ["Budget", "DEFAULT_TIMEOUT", "check_budget", "current_budget", "request_budget"]

DEFAULT_TIMEOUT = 5.0   # seconds: the server's default budget for one message (`ladr-lab serve --request-timeout`)

_now = time.monotonic


class Budget:
    """A deadline `seconds` after it was made."""

    __slots__ = ("deadline", "seconds", "start")

    def __init__(self, seconds: float) -> None:
        self.seconds = float(seconds)
        self.start = _now()
        self.deadline = self.start + self.seconds

    def left(self) -> float:
        """Seconds until the deadline (negative once past it)."""
        return self.deadline - _now()

    def check(self, stage: str) -> None:
        """Raise RequestTimeout when the deadline has passed, naming the stage that was about to run."""
        now = _now()
        if now > self.deadline:
            ms = round(self.seconds * 1000)
            where = ("before it started (the requests of a batch share one budget)" if stage == "start"
                     else f"at its {stage} stage")
            raise RequestTimeout(
                f"the request ran out of its time budget of {ms} ms (limits.requestTimeoutMs, or its timeoutMs) "
                f"{where}: narrow its filter or query, or ask for fewer hits",
                {"timeoutMs": ms, "elapsedMs": round((now - self.start) * 1000, 1), "stage": stage})


_current: ContextVar[Budget | None] = ContextVar("ladr_lab_request_budget", default=None)


def current_budget() -> Budget | None:
    """The budget the running request is under, if any."""
    return _current.get()


@contextmanager
def request_budget(seconds: float | None) -> Iterator[Budget | None]:
    """Run the block under a budget of `seconds` from now (None: no new budget); inside another budget, whichever
    deadline comes first holds. Yields the budget in force."""
    outer = _current.get()
    if seconds is None:
        yield outer
        return
    budget = Budget(seconds)
    if outer is not None and outer.deadline <= budget.deadline:
        yield outer
        return
    token = _current.set(budget)
    try:
        yield budget
    finally:
        _current.reset(token)


def check_budget(stage: str) -> None:
    """Raise RequestTimeout when the running request's budget is spent (nothing without a budget)."""
    budget = _current.get()
    if budget is not None and _now() > budget.deadline:
        budget.check(stage)
