"""`model: local`: a real GGUF model run in-process by llama.cpp from packaged weights (issue 19).

The tests that need the runtime and the default packaged model (Qwen2.5-Coder-0.5B-Instruct) skip without them,
unless LADR_REQUIRE_LOCAL_MODEL is set (as .ci/run sets it after installing the `local` extra): then a missing
runtime or weights fail them instead."""
from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ladr_lab.errors import ModelError
from ladr_lab.models import CallInfo, get_model
from ladr_lab.round.validators import make_validator
from tests.helpers_local import needs_model

ROOT = Path(__file__).resolve().parents[3]



SMALL = yaml.safe_load((ROOT / "examples" / "research_small.yaml").read_text())["steps"][0]["retrieve"]["requestMatch"]
TIGHT = yaml.safe_load((ROOT / "examples" / "pitfall_tight.yaml").read_text())["steps"][0]["retrieve"]["requestMatch"]


def test_without_the_runtime_local_says_which_package_to_install_at_once(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "llama_cpp" else real(name, *a))
    for name in ("local", "local:1.5b", " local "):
        with pytest.raises(ModelError) as err:
            get_model(name)
        assert 'pip install "ladr_lab[local]"' in str(err.value) and "llama-cpp-python" in str(err.value)
    done = subprocess.run([sys.executable, "-c", "import importlib.util, sys\n"
                           "real = importlib.util.find_spec\n"
                           "importlib.util.find_spec = lambda n, *a: None if n == 'llama_cpp' else real(n, *a)\n"
                           "from ladr_lab.cli import main\nsys.exit(main(['run', 'examples/research_small.yaml', "
                           "'--model', 'local', '--input', 'q']))"], capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 1 and 'pip install "ladr_lab[local]"' in done.stderr and "Traceback" not in done.stderr


def test_a_near_miss_of_local_is_said_as_such():
    with pytest.raises(ModelError, match='did you mean "local"'):
        get_model("lcoal")
    with pytest.raises(ModelError, match='did you mean "local:1.5b"'):
        get_model("locl:1.5b")


@needs_model
def test_an_unknown_packaged_name_or_option_is_refused_naming_the_near_one():
    with pytest.raises(ModelError, match='did you mean "local:qwen2.5-coder-0.5b"'):
        get_model("local:qwen2.5-coder-0.5")
    with pytest.raises(ModelError, match='takes no option "temprature"; did you mean "temperature"'):
        get_model("local", options={"temprature": 0})
    with pytest.raises(ModelError, match="not a GBNF grammar llama.cpp can read"):
        get_model("local", options={"grammar": "root ::= ("})
    with pytest.raises(ModelError, match='give "constrain" or "grammar", not both'):
        get_model("local", options={"grammar": 'root ::= "a"', "constrain": "request"})


def _example_request_matches():
    for path in sorted((ROOT / "examples").glob("*.yaml")):
        for step in yaml.safe_load(path.read_text()).get("steps") or []:
            rm = (step.get("retrieve") or {}).get("requestMatch")
            if isinstance(rm, dict):
                yield pytest.param(rm, id=f"{path.stem}:{step['id']}")


@needs_model
@pytest.mark.parametrize("schema", list(_example_request_matches()))
def test_llama_cpp_parses_the_grammar_of_every_example_requestmatch(schema):
    from ladr_lab.models.constrain import constrained_grammar

    model = get_model("local")
    for text in (constrained_grammar(schema), constrained_grammar(schema, json_answer=True), constrained_grammar(None)):
        model._grammar_of(text, "constrained grammar")     # ModelError if llama.cpp's parser refuses it


@needs_model
def test_the_model_is_loaded_once_per_process_and_shared():
    from ladr_lab.models import local

    a, b = get_model("local"), get_model("local", options={"temperature": 0.5, "seed": 3})
    a.check()
    b.check()
    loaded = [k for k in local._RUNTIMES if k[0] == str(a.path.resolve())]
    assert len(loaded) == 1 and a.max_concurrency == 1
    assert a.options["temperature"] == 0.0 and a.options["seed"] == 0 and b.options["temperature"] == 0.5


MSGS = [{"role": "system", "content": "You answer in one short sentence."},
        {"role": "user", "content": "Question:\nWhat colour is the sky on a clear day?"}]


@needs_model
def test_greedy_by_default_so_a_call_repeats_and_the_prompt_prefix_is_reused():
    # n_batch 16: the cache is reused in whole blocks (issue 31), and these prompts are a few blocks long
    model = get_model("local", options={"max_tokens": 24, "n_batch": 16})
    first = model.complete(MSGS)
    again = model.complete(MSGS)
    assert first.text == again.text and first.text.strip()
    assert first.tokens_in == again.tokens_in > 10 and first.model == "local:qwen2.5-coder-0.5b"
    longer = [MSGS[0], {"role": "user", "content": MSGS[1]["content"] + "\n\nRetrievedDocuments 1:\n--- sky.md ---\n"
                                                   "The sky is blue because air scatters blue light most."}]
    third = model.complete(longer)
    s = model.stats[-1]
    assert third.tokens_in > first.tokens_in
    # round N+1 re-reads what round N appended and the rest of its last block: the shared system+question prefix
    # comes from the cache in whole blocks
    assert s.cached_tokens >= first.tokens_in - 8 - 16 and s.cached_tokens % 16 == 0
    assert s.prompt_tokens - s.cached_tokens <= (third.tokens_in - first.tokens_in) + 8 + 16


@needs_model
def test_a_prompt_longer_than_the_context_is_a_model_error_naming_n_ctx():
    model = get_model("local", options={"n_ctx": 256, "max_tokens": 8})
    long = [{"role": "user", "content": "word " * 600}]
    with pytest.raises(ModelError, match="raise the option n_ctx \\(now 256\\)"):
        model.complete(long)


NUDGES = [
    'Reply with exactly this and nothing else: {"request": {}}',
    'Reply with exactly this JSON: {"files": "retrieve/dedup.md", "why": "it fits"}',
    'Reply with a JSON list of three file names.',
    'Reply with the files you need as JSON: {"files": ["retrieve/dedup.md"]}',
    'Answer the question in one sentence of prose.',
    'Reply in a ```json fenced block with {"file": "a.md"}',
]


@needs_model
@settings(max_examples=8, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(st.sampled_from(NUDGES), st.sampled_from([SMALL, TIGHT]))
def test_a_constrained_output_is_json_requestmatch_accepts_or_prose(nudge, schema):
    model = get_model("local", options={"constrain": "request", "max_tokens": 96})
    msgs = [{"role": "system", "content": nudge}, {"role": "user", "content": "Question:\nHow does dedup work?"}]
    out = model.complete(msgs, call=CallInfo(step="research", request_match=schema))
    assert out.constrained == "request"
    text = out.text
    if text.lstrip().startswith(("{", "[")):
        assert make_validator(schema).is_valid(json.loads(text)), text
    else:
        assert text and text[0] not in " \t\r\n`" and "{" not in text and "`" not in text, text


@needs_model
def test_a_constrained_forced_final_is_an_answer_never_a_request():
    model = get_model("local", options={"constrain": "request", "max_tokens": 48})
    msgs = [{"role": "system", "content": NUDGES[3]}, {"role": "user", "content": "Question:\nHow does dedup work?"
                                                                              "\n\nRetrieval budget exhausted. "
                                                                              "Produce your final answer now."}]
    out = model.complete(msgs, call=CallInfo(step="research", request_match=SMALL, forced_final=True))
    assert out.constrained == "answer"
    assert not out.text.lstrip().startswith(("{", "[")) and "{" not in out.text


@needs_model
def test_a_run_of_the_small_model_example_from_the_cli(tmp_path):
    trace = tmp_path / "t.jsonl"
    done = subprocess.run([sys.executable, "-m", "ladr_lab", "run", "examples/research_small.yaml", "--model", "local",
                           "--constrain", "request", "--input", "How does deduplication work across retrieval rounds?",
                           "--trace-out", str(trace)], capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    calls = [json.loads(line) for line in trace.read_text().splitlines() if '"llm_call"' in line]
    assert 1 <= len(calls) <= 3                       # maxRounds 2 + the forced final
    assert all(c["model"] == "local:qwen2.5-coder-0.5b" and c["constrained"] in ("request", "answer") for c in calls)
    assert all(c["tokens_in"] > 100 for c in calls)
    assert "[the model's decoding was constrained" in done.stdout
    assert "Provider List" not in done.stdout and "llama" not in done.stderr.lower()


# --- a warm call gives a cold call's text (issue 31, item 3) ---------------------------------------------------------
ASK = [{"role": "system", "content": "You answer questions about LADR from its handbook. Reply with only the JSON "
                                     'of the files to read, for example {"files": ["retrieve/dedup.md"]}.'},
       {"role": "user", "content": "Question:\nHow does deduplication work across retrieval rounds?"}]
ROUND2 = [ASK[0], {"role": "user", "content": ASK[1]["content"] + "\n\nDocument 1:\n--- retrieve/dedup.md ---\n"
                   + (ROOT / "sample_slates/knowledge/docs/retrieve/dedup.md").read_text()[:600]}]
OTHER = [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "Name three colours."}]


def test_the_reusable_prefix_is_whole_blocks_read_from_the_start_and_never_the_whole_prompt():
    from ladr_lab.models.local import reusable_prefix

    cached, prompt = list(range(100)), list(range(90)) + [-1] * 20
    assert reusable_prefix(cached, prompt, aligned=96, n_batch=32) == 64          # common 90 → two whole blocks
    assert reusable_prefix(cached, prompt, aligned=40, n_batch=32) == 32          # only 40 were read in blocks
    assert reusable_prefix(cached, cached[:64], aligned=96, n_batch=32) == 32     # the last block is read again
    assert reusable_prefix(cached, prompt, aligned=96, n_batch=32, mode="off") == 0


@given(st.lists(st.integers(0, 3), max_size=80), st.lists(st.integers(0, 3), min_size=1, max_size=80),
       st.integers(0, 80), st.integers(1, 40))
def test_a_reused_prefix_is_a_common_whole_block_prefix_shorter_than_the_prompt(cached, prompt, aligned, n_batch):
    from ladr_lab.models.local import reusable_prefix

    keep = reusable_prefix(cached, prompt, aligned, n_batch)
    assert keep % n_batch == 0 and keep <= aligned and keep < len(prompt) and cached[:keep] == prompt[:keep]


def _last_logits(model):
    import llama_cpp
    import numpy as np

    from ladr_lab.models import local

    llama = local._runtime(model.path, model.load).llama
    row = llama_cpp.llama_get_logits_ith(llama._ctx.ctx, -1)
    return np.ctypeslib.as_array(row, shape=(llama._n_vocab,)).copy()


@needs_model
@pytest.mark.parametrize("mode", ["on", "off"])
def test_a_warm_call_reads_its_prompt_as_a_cold_call_so_the_next_tokens_scores_are_the_same_bits(mode):
    from ladr_lab.models import local

    # n_batch 32: these short prompts span several blocks; max_tokens 1: the logits left are the prompt's last token's
    model = get_model("local", options={"n_batch": 32, "max_tokens": 1, "prefix_cache": mode})
    local._runtime(model.path, model.load).llama.reset()
    model.complete(ASK)
    cold = _last_logits(model)
    model.complete(ROUND2)                       # round 2: the same prompt and a document; the cache holds it
    model.complete(ASK)
    warm = _last_logits(model)
    model.complete(OTHER)                        # another ladder's call in between
    model.complete(ROUND2)
    model.complete(ASK)
    after = _last_logits(model)
    assert cold.tobytes() == warm.tobytes() == after.tobytes()
    reused = [s.cached_tokens for s in model.stats]
    if mode == "on":      # round 2 re-read only what follows the blocks it shares with round 1
        assert reused[1] >= 32 and all(r % 32 == 0 for r in reused)
    else:
        assert not any(reused)


@needs_model
def test_all_is_llama_cpp_pythons_own_reuse_of_every_cached_token():
    model = get_model("local", options={"n_batch": 32, "max_tokens": 1, "prefix_cache": "all"})
    model.complete(ASK)
    model.complete(ROUND2)
    assert model.stats[-1].cached_tokens >= model.stats[0].prompt_tokens - 8


@needs_model
def test_cold_warm_and_after_another_ladder_the_run_says_the_same(tmp_path):
    from ladr_lab import Run
    from ladr_lab.models import local

    def outputs(ladder, question="How does deduplication work across retrieval rounds?"):
        run = Run(str(ladder), model="local", input=question, cache=False, model_options={"max_tokens": 24})
        run.run()
        return [e.output for e in run.trace.events if type(e).__name__ == "LlmCall"]

    other = tmp_path / "other.yaml"       # another, short ladder (a cheap prompt that takes over the cache)
    other.write_text("name: other\nsteps:\n  - id: say\n    systemPrompt: You answer in five words.\n"
                     "    fields: [{ name: Question, type: text, from: input.context }]\n")
    small = ROOT / "examples" / "research_small.yaml"
    model = get_model("local")
    local._runtime(model.path, model.load).llama.reset()           # cold: nothing cached
    cold = outputs(small)
    warm = outputs(small)
    assert outputs(other, "What colour is the sky?")
    after = outputs(small)
    assert cold == warm == after and cold and all(cold)


@needs_model
def test_prefix_cache_takes_on_off_or_all_and_says_so():
    with pytest.raises(ModelError, match='"prefix_cache" takes "on", "off" or "all"'):
        get_model("local", options={"prefix_cache": "sometimes"})
