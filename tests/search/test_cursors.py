"""Cursor tokens and session memory: bounded, thread-safe, a lazy state made once."""
from __future__ import annotations

import re
import threading

from ladr_lab.search.cursors import MAX_CURSORS, MAX_SESSIONS, Cursors, Sessions


def test_tokens_are_distinct_hex_and_only_the_newest_states_are_kept() -> None:
    c = Cursors()
    tokens = [c.save({"n": i}) for i in range(MAX_CURSORS + 300)]   # past one draw of 256 tokens, and the cap
    assert len(set(tokens)) == len(tokens) and all(re.fullmatch(r"[0-9a-f]{24}", t) for t in tokens)
    assert c.load(tokens[0]) is None and c.load("nope") is None
    assert c.load(tokens[-1]) == {"n": MAX_CURSORS + 299}
    assert c.load(tokens[-MAX_CURSORS]) == {"n": 300}


def test_a_lazy_state_is_made_once_when_first_followed() -> None:
    c = Cursors()
    made = []
    token = c.save(lambda: made.append(1) or {"page": 2})
    assert made == []
    assert c.load(token) == {"page": 2} and c.load(token) == {"page": 2} and made == [1]


def test_sessions_remember_what_they_were_given_and_forget_the_oldest() -> None:
    s = Sessions()
    s.add("a", ["x", "y"])
    assert s.seen("a") == {"x", "y"} and s.seen("b") == set()
    for i in range(MAX_SESSIONS):
        s.add(f"s{i}", [str(i)])
    assert s.seen("a") == set()   # the oldest session was dropped
    assert s.seen(f"s{MAX_SESSIONS - 1}") == {str(MAX_SESSIONS - 1)}


def test_sessions_stay_bounded_and_a_recently_used_one_outlives_older_ones() -> None:
    s = Sessions()
    s.add("keep", ["k"])
    s.add("drop", ["d"])
    for i in range(3 * MAX_SESSIONS):
        s.add(f"s{i}", [str(i)])
        if i % 100 == 0:
            assert s.seen("keep") == {"k"}   # used again: least recently used is someone else
        assert len(s._seen) <= MAX_SESSIONS
    assert len(s._seen) == MAX_SESSIONS
    assert "drop" not in s._seen and s.seen("keep") == {"k"}


def test_saving_from_many_threads_loses_no_state() -> None:
    c = Cursors()
    out: list[str] = []
    lock = threading.Lock()

    def work(base: int) -> None:
        mine = [c.save({"n": base + i}) for i in range(50)]
        with lock:
            out.extend(mine)

    threads = [threading.Thread(target=work, args=(100 * i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(set(out)) == 300 and sorted(c.load(t)["n"] for t in out) == sorted(100 * i + j for i in range(6) for j in range(50))


def test_recall_more_applies_min_score_but_counts_what_recall_found() -> None:
    from ladr_lab.search.cursors import RecallMore

    calls = []

    def recall(snap, queries, mode, unit, n, pred, fusion, into):
        calls.append((snap, queries, mode, unit, n, pred, fusion))
        into["a"] = {"sparse": 3.0}
        return [("a", 3.0), ("b", 2.0), ("c", 1.0)][:n]

    stages: dict = {}
    got, found = RecallMore(recall, "q", "sparse", "document", None, 2.0)("snap", 3, stages)
    assert got == [("a", 3.0), ("b", 2.0)] and found == 3 and stages == {"a": {"sparse": 3.0}}
    assert calls == [("snap", ["q"], "sparse", "document", 3, None, None)]
    assert RecallMore(recall, "q", "sparse", "document")("snap", 2, {}) == ([("a", 3.0), ("b", 2.0)], 2)
