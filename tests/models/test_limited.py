"""Rate limits: rates parsed or refused, the provider a model is counted under, the token bucket's bursts and
spacing (on a fake clock), and LimitedModel passing calls through and closing only what it owns."""
from __future__ import annotations

import threading
from types import SimpleNamespace

import pytest

from ladr_lab.errors import ModelError
from ladr_lab.models import limited
from ladr_lab.models.base import Completion
from ladr_lab.models.limited import LimitedModel, RateLimiter, parse_rate, provider_of


@pytest.mark.parametrize(("rate", "expected"), [
    ("60/min", (60.0, 60.0)), ("5/s", (5.0, 1.0)), (" 2.5 / sec ", (2.5, 1.0)), ("100/h", (100.0, 3600.0)),
    ("7", (7.0, 1.0)), ("3/MINUTE", (3.0, 60.0)), (2.5, (2.5, 1.0)), (10, (10.0, 1.0)),
])
def test_a_rate_is_calls_per_period(rate, expected):
    assert parse_rate(rate) == expected


@pytest.mark.parametrize(("rate", "why"), [
    ("fast", "give calls per period"), ("5/day", "give calls per period"), ("/s", "give calls per period"),
    ("0/s", "must be positive"), (0, "must be positive"), (-1, "must be positive"), (True, "give calls per period"),
])
def test_a_bad_rate_is_a_model_error_naming_it(rate, why):
    with pytest.raises(ModelError, match=f"rate limit {rate!r}: .*{why}"):
        parse_rate(rate)


@pytest.mark.parametrize(("name", "provider"), [
    ("openai/gpt-4o-mini", "openai"), ("anthropic/claude-3-haiku", "anthropic"), ("gpt-4o", "openai"),
    (" ollama/qwen:7b ", "ollama"), ("offline", "ladr_lab"), ("mistral-large-latest", None),
])
def test_a_model_is_counted_under_its_provider(name, provider):
    assert provider_of(name) == provider      # None: the limiter counts the model under its own name


@pytest.fixture
def clock(monkeypatch):
    """A fake clock for the limiter: `now` moves only when a caller sleeps or the test advances it."""
    state = SimpleNamespace(now=1000.0, slept=[])

    def sleep(seconds):
        state.slept.append(seconds)
        state.now += seconds
    monkeypatch.setattr(limited, "time", SimpleNamespace(monotonic=lambda: state.now, sleep=sleep))
    return state


def test_a_burst_of_the_bucket_passes_then_calls_are_spaced_evenly(clock):
    lim = RateLimiter("4/s")
    assert [lim.delay("openai") for _ in range(4)] == [0.0] * 4
    assert [lim.delay("openai") for _ in range(3)] == pytest.approx([0.25, 0.5, 0.75])   # queued behind each other
    assert lim.granted == 7 and lim.waited == pytest.approx(1.5)


def test_an_idle_bucket_refills_but_never_above_its_size(clock):
    lim = RateLimiter("2/s")
    assert [lim.delay("k") for _ in range(2)] == [0.0, 0.0]
    clock.now += 0.5                        # one token back
    assert lim.delay("k") == 0.0 and lim.delay("k") == pytest.approx(0.5)
    clock.now += 60                         # a long pause refills only to the bucket's size: a burst of 2 again
    assert [lim.delay("k") for _ in range(3)] == pytest.approx([0.0, 0.0, 0.5])


def test_acquire_sleeps_for_its_reservation(clock):
    lim = RateLimiter("1/s")
    assert lim.acquire("k") == 0.0 and clock.slept == []
    assert lim.acquire("k") == pytest.approx(1.0) and clock.slept == [pytest.approx(1.0)]


def test_each_key_has_its_own_bucket_and_star_is_every_other_keys_rate(clock):
    lim = RateLimiter({"openai": "1/s", "*": "2/min"})
    assert lim.delay("openai") == 0.0 and lim.delay("openai") == pytest.approx(1.0)
    assert lim.delay("anthropic") == 0.0 and lim.delay("anthropic") == 0.0
    assert lim.delay("anthropic") == pytest.approx(30.0) and lim.delay("ollama") == 0.0
    only = RateLimiter({"openai": "1/s"})
    assert [only.delay("anthropic") for _ in range(5)] == [0.0] * 5      # no rate for it: never held back


def test_many_threads_share_one_bucket_without_losing_a_token(clock):
    lim = RateLimiter("10/s")
    delays: list[float] = []
    lock = threading.Lock()

    def ask():
        d = lim.delay("k")
        with lock:
            delays.append(d)
    threads = [threading.Thread(target=ask) for _ in range(30)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    # the clock stands still: 10 at once, then one reservation per 0.1 s, none handed out twice
    assert sorted(delays) == pytest.approx([0.0] * 10 + [0.1 * i for i in range(1, 21)])


def test_a_bad_rate_in_a_mapping_is_refused_when_the_limiter_is_made():
    with pytest.raises(ModelError, match="rate limit '5/fortnight'"):
        RateLimiter({"openai": "5/fortnight"})


class _Model:
    def __init__(self):
        self.name = "openai/fake"
        self.max_concurrency = 4
        self.closed = 0
        self.checked = 0
        self.stats = {"calls": 0}

    def complete(self, messages, call=None):
        self.stats["calls"] += 1
        return Completion("hi", 1, 1)

    def check(self):
        self.checked += 1

    def close(self):
        self.closed += 1


class _Counting:
    def __init__(self):
        self.keys: list[str] = []

    def acquire(self, key):
        self.keys.append(key)
        return 0.0


def test_a_limited_model_takes_a_token_per_call_then_answers_through_the_model():
    inner, lim = _Model(), _Counting()
    model = LimitedModel(inner, lim, "openai")
    assert model.name == "openai/fake" and model.max_concurrency == 4
    assert model.complete([{"role": "user", "content": "x"}]).text == "hi"
    model.complete([])
    assert lim.keys == ["openai", "openai"] and inner.stats["calls"] == 2
    assert model.stats is inner.stats          # what the engine reads of a model is the wrapped model's
    model.check()
    assert inner.checked == 1


def test_a_limited_model_closes_only_a_model_it_owns():
    owned, borrowed = _Model(), _Model()
    LimitedModel(owned, _Counting(), "k").close()
    LimitedModel(borrowed, _Counting(), "k", owns=False).close()
    assert owned.closed == 1 and borrowed.closed == 0
    LimitedModel(object(), _Counting(), "k").close()       # a model without close: nothing to do
    LimitedModel(object(), _Counting(), "k").check()       # nor check


def test_a_limited_model_does_not_recurse_when_unpickled_half_made():
    bare = LimitedModel.__new__(LimitedModel)               # as pickle makes it, before its __dict__
    with pytest.raises(AttributeError):
        _ = bare.anything
