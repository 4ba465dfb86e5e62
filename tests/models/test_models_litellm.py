"""LiteLLMModel: offline via litellm's mock_response, and litellm stays unimported until needed."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from ladr_lab.errors import ModelError
from ladr_lab.models import CallInfo, LiteLLMModel

ROOT = Path(__file__).resolve().parents[2]
MSGS = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Question:\nhello?"}]


def test_mock_response_gives_text_tokens_and_latency():
    model = LiteLLMModel("gpt-4o-mini", mock_response="Hello from the mock.")
    out = model.complete(MSGS, call=CallInfo(step="research", node=1, round=1, request_match=None))
    assert out.text == "Hello from the mock."
    assert out.tokens_in > 0 and out.tokens_out > 0
    assert out.latency > 0 and out.cost >= 0
    assert out.model == "gpt-4o-mini"
    assert model.max_concurrency == 8


def test_unknown_pricing_is_zero_cost_not_an_error():
    out = LiteLLMModel("openai/surely-not-a-priced-model", mock_response="ok").complete(MSGS)
    assert out.text == "ok" and out.cost == 0.0


def test_failures_are_model_errors_naming_the_model():
    model = LiteLLMModel("gpt-4o-mini", mock_response=Exception("boom"))
    with pytest.raises(ModelError, match='model "gpt-4o-mini" failed: .*boom'):
        model.complete(MSGS)


def test_importing_the_models_does_not_import_litellm():
    code = (
        "import sys, ladr_lab.models as m\n"
        "m.get_model('openai/gpt-4o-mini'); m.get_model(None)\n"
        "print('litellm' in sys.modules, 'jsonschema' in sys.modules, 'llama_cpp' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["False", "False", "False"]


def _no_call(*_a, **_k):
    raise AssertionError("litellm.completion must not be called")


def test_a_missing_api_key_is_said_before_any_call(monkeypatch):
    import litellm
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setattr(litellm, "completion", _no_call)
    model = LiteLLMModel("openai/gpt-4o-mini")
    with pytest.raises(ModelError, match="openai/gpt-4o-mini needs OPENAI_API_KEY, which is not set"):
        model.check()
    with pytest.raises(ModelError, match="needs OPENAI_API_KEY"):
        model.complete(MSGS)


def test_a_non_key_variable_litellm_lists_does_not_block(monkeypatch):
    import litellm
    monkeypatch.delenv("OLLAMA_API_BASE", raising=False)
    LiteLLMModel("ollama/llama3.2").check()  # litellm lists OLLAMA_API_BASE as missing; ollama works without it
    monkeypatch.setattr(litellm, "completion", _no_call)


def test_an_unknown_model_is_refused_before_any_call_quietly(monkeypatch, capsys):
    import litellm
    monkeypatch.setattr(litellm, "completion", _no_call)
    with pytest.raises(ModelError, match="unknown model 'gpt-4o-mni': litellm knows no provider for it"):
        LiteLLMModel("gpt-4o-mni").complete(MSGS)
    assert "Provider List" not in capsys.readouterr().out


def test_models_checked_on_many_threads_at_once_leave_sys_stdout_as_it_was(monkeypatch):
    """The check hides litellm's prints by swapping sys.stdout, which every thread shares: an experiment's cells
    check their models at once, and unguarded swaps interleaved left a StringIO as sys.stdout (every later print
    of the notebook lost)."""
    import random
    import sys
    import threading
    import time

    import litellm
    real = litellm.get_llm_provider

    def slow(*a, **k):
        time.sleep(random.uniform(0, 0.01))    # widen the window two swaps could interleave in
        return real(*a, **k)
    monkeypatch.setattr(litellm, "get_llm_provider", slow)
    before = sys.stdout
    threads = [threading.Thread(target=LiteLLMModel("openai/fake", api_key="none").check) for _ in range(24)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sys.stdout is before
