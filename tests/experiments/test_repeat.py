"""`repeat=N` (`--repeat N`): each cell runs N times; runs 2..N bypass the response cache's answers of run 1 (fresh
samples, counted at a fake OpenAI-compatible server on 127.0.0.1), a re-run of the same experiment replays every run
from the cache, and the summary says how far the runs of a cell agree."""
from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from ladr_lab import experiment, load_experiment
from ladr_lab.models import ScriptedModel
from ladr_lab.models.base import Completion
from ladr_lab.models.cache import ResponseCache, cache_key

LADDER = "name: t\nsteps:\n  - id: a\n    fields: [{ name: Q, type: text, from: input.context }]\n"
ROWS = [{"id": "r1", "context": "first question"}, {"id": "r2", "context": "second question"}]


class _Sampler(BaseHTTPRequestHandler):
    """An OpenAI-compatible chat endpoint that samples: every call a new answer (`answer N`, N counting calls)."""

    calls = 0
    lock = threading.Lock()

    def do_POST(self):  # noqa: N802 (http.server's name)
        self.rfile.read(int(self.headers["Content-Length"]))
        with _Sampler.lock:
            _Sampler.calls += 1
            n = _Sampler.calls
        doc = json.dumps({"id": "c", "object": "chat.completion", "created": 1, "model": "m",
                          "choices": [{"index": 0, "finish_reason": "stop",
                                       "message": {"role": "assistant", "content": f"answer {n}"}}],
                          "usage": {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(doc)))
        self.end_headers()
        self.wfile.write(doc)

    def log_message(self, *a):
        pass


@pytest.fixture
def sampler():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Sampler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    _Sampler.calls = 0
    yield {"api_base": f"http://127.0.0.1:{server.server_address[1]}/v1", "api_key": "none", "temperature": 0.8}
    server.shutdown()
    server.server_close()


def _run(tmp_path, out, options, **kw):
    (tmp_path / "l.yaml").write_text(LADDER)
    return experiment({"v": str(tmp_path / "l.yaml")}, ROWS, model="openai/m", model_options=options,
                      out=tmp_path / out, progress=False, cache=tmp_path / "rc", asserts=["contains: answer"], **kw)


def test_repeats_are_fresh_samples_and_a_rerun_replays_each(tmp_path, sampler):
    first = _run(tmp_path, "one", sampler, repeat=3)
    assert _Sampler.calls == 6                                   # 2 rows × 3 runs: runs 2 and 3 missed run 1's answers
    outputs = {(c.row, c.repeat): c.output for c in first.cells}
    assert len(set(outputs.values())) == 6                       # six samples
    assert [(c.row, c.repeat) for c in first.cells] == [("r1", 1), ("r1", 2), ("r1", 3), ("r2", 1), ("r2", 2),
                                                        ("r2", 3)]
    assert (tmp_path / "one" / "v" / "traces" / "r1@3.jsonl").is_file()
    # the same experiment again, into a new folder: every run is answered from the cache, each its own answer
    again = _run(tmp_path, "two", sampler, repeat=3)
    assert _Sampler.calls == 6
    assert {(c.row, c.repeat): c.output for c in again.cells} == outputs
    # without repeats, run 1's answers; with one more run, only that run asks the model
    assert {c.row: c.output for c in _run(tmp_path, "three", sampler).cells} == \
        {r: outputs[(r, 1)] for r in ("r1", "r2")} and _Sampler.calls == 6
    _run(tmp_path, "four", sampler, repeat=4)
    assert _Sampler.calls == 8
    # and with the cache off every run asks
    experiment({"v": str(tmp_path / "l.yaml")}, ROWS, model="openai/m", model_options=sampler, out=tmp_path / "five",
               progress=False, cache=False, repeat=3)
    assert _Sampler.calls == 14


def test_the_summary_says_how_far_the_runs_of_a_cell_agree(tmp_path, sampler):
    exp = _run(tmp_path, "one", sampler, repeat=3)
    (s,) = exp.summary_rows()
    assert s["agree_pass"] == 1.0 and s["agree_output"] == pytest.approx(1 / 3) and s["flaky"] == 0
    rows = exp.agreement_rows()
    assert [(r["row"], r["repeats"], r["passed"], r["agree_output"]) for r in rows] == \
        [("r1", 3, 3, pytest.approx(1 / 3)), ("r2", 3, 3, pytest.approx(1 / 3))]
    table = exp.to_dataframe()
    assert list(table["repeat"]) == [1, 2, 3, 1, 2, 3] and list(table["agree_output"]) == [pytest.approx(1 / 3)] * 6
    assert "3 runs a cell agree on pass/fail 100%, on the output 33% (0 flaky)" in exp.format()
    back = load_experiment(tmp_path / "one")           # read back from the folder: the same cells and figures
    assert back.summary_rows()[0]["agree_output"] == s["agree_output"] and back.repeats == 3
    assert back.find("v", "r2", repeat=2).output == exp.find("v", "r2", repeat=2).output


def test_pass_agreement_counts_the_runs_that_say_what_most_say(tmp_path):
    answers = iter(["yes", "no", "yes", "yes", "yes", "yes"])
    lock = threading.Lock()

    def model(messages, call):
        with lock:
            return next(answers)

    (tmp_path / "l.yaml").write_text(LADDER)
    exp = experiment({"v": str(tmp_path / "l.yaml")}, ROWS, model=ScriptedModel(model, reads_schemas=False),
                     out=tmp_path / "x", progress=False, asserts=["contains: yes"], repeat=3, concurrency=1)
    by = {r["row"]: r for r in exp.agreement_rows()}
    assert by["r1"]["agree_pass"] == pytest.approx(2 / 3) and by["r2"]["agree_pass"] == 1.0
    (s,) = exp.summary_rows()
    assert s["flaky"] == 1 and s["agree_pass"] == pytest.approx((2 / 3 + 1) / 2)


def test_a_resumed_repeated_experiment_calls_nothing_and_appends_nothing(tmp_path):
    calls = []

    def model(messages, call):
        calls.append(1)
        return "fine"

    (tmp_path / "l.yaml").write_text(LADDER)
    kw = dict(model=ScriptedModel(model, reads_schemas=False), out=tmp_path / "x", progress=False, repeat=2)
    experiment({"v": str(tmp_path / "l.yaml")}, ROWS, **kw)
    assert len(calls) == 4
    before = (tmp_path / "x" / "results.jsonl").read_bytes()
    exp = experiment({"v": str(tmp_path / "l.yaml")}, ROWS, **kw)
    assert len(calls) == 4 and (tmp_path / "x" / "results.jsonl").read_bytes() == before and len(exp.cells) == 4
    lines = [json.loads(x) for x in before.decode().splitlines()]
    assert sorted(x.get("repeat", 1) for x in lines) == [1, 1, 2, 2]      # run 1's lines carry no `repeat`


def test_the_cache_keys_runs_apart(tmp_path):
    req = {"model": "m", "messages": [{"role": "user", "content": "q"}]}
    assert cache_key(req, 1) != cache_key(req, 1, repeat=2) and cache_key(req, 1, repeat=1) == cache_key(req, 1)
    store = ResponseCache.at(tmp_path)
    assert store.for_repeat(1) is store and store.for_repeat(3).repeat == 3 and store.repeat == 1
    store.put("k", Completion(text="shared file", model="m"))
    assert store.for_repeat(3).get("k").text == "shared file"          # one file, one store: keys set them apart


def test_repeats_are_cases_of_their_own_in_junit_and_compare_takes_first_runs(sampler, tmp_path):
    """With `repeat=2`: JUnit names each run (no two test cases alike), and `compare` pairs a cell's first runs, as
    the grid shows them (a cell is never compared with another run of itself)."""
    import xml.etree.ElementTree as ET
    exp = _run(tmp_path, "a", sampler, repeat=2)
    names = [c.get("name") for c in ET.fromstring(exp.to_junit()).iter("testcase")]
    assert sorted(names) == ["r1", "r1 (run 2)", "r2", "r2 (run 2)"]
    again = _run(tmp_path, "b", sampler, repeat=2)          # replayed from the cache: the same outputs
    cmp = exp.compare(again)
    assert cmp.regressions == [] and [c for c in cmp.changes if c.change == "output"] == []


def test_the_page_gives_each_run_of_a_cell_a_part_of_its_own(sampler, tmp_path):
    """With `repeat=2` the `--html` page holds every run once, each under an id of its own (an id given twice makes
    the grid's link land on whichever a browser picks), the grid links each cell to its first run, and a part says
    which run it is."""
    import re
    page = _run(tmp_path, "a", sampler, repeat=2).to_page()
    ids = re.findall(r'<details[^>]* id="(cell-\d+)"', page)
    assert len(ids) == 4 and len(set(ids)) == 4
    links = re.findall(r'href="#(cell-\d+)"', page)
    assert len(links) == 2 and set(links) <= set(ids)
    assert page.count(" · run 2") == 2
