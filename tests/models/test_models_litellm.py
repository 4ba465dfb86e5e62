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
        "print('litellm' in sys.modules, 'jsonschema' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["False", "False"]
