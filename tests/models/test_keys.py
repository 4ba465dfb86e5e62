"""The provider → API key table (models/keys.py): the same keys litellm asks for, said before litellm is imported."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from ladr_lab.errors import ModelError
from ladr_lab.models import PROVIDER_KEYS, LiteLLMModel, OpenAICompatModel, get_model, key_problem
from ladr_lab.models.keys import missing_keys

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = {        # a model litellm routes to each provider of the table
    "anthropic": "anthropic/claude-3-5-sonnet-20240620", "cerebras": "cerebras/llama3.1-8b",
    "codestral": "codestral/codestral-latest", "cohere": "cohere/command-r", "deepinfra": "deepinfra/x",
    "deepseek": "deepseek/deepseek-chat", "fireworks_ai": "fireworks_ai/accounts/fireworks/models/llama-v3-8b",
    "gemini": "gemini/gemini-1.5-pro", "groq": "groq/llama3-8b-8192", "huggingface": "huggingface/x",
    "mistral": "mistral/mistral-large-latest", "nvidia_nim": "nvidia_nim/x", "openai": "openai/gpt-4o-mini",
    "openrouter": "openrouter/openai/gpt-4o", "perplexity": "perplexity/sonar", "replicate": "replicate/x",
    "together_ai": "together_ai/meta-llama/Llama-3-8b-chat-hf", "xai": "xai/grok-2",
}
ALL_KEYS = sorted({k for keys in PROVIDER_KEYS.values() for k in keys})


def test_every_provider_of_the_table_has_a_sample():
    assert set(SAMPLE) == set(PROVIDER_KEYS)


def test_the_table_says_what_litellm_says(monkeypatch):
    """With every key unset, litellm's `validate_environment` lists (of its *_API_KEY variables) exactly the table's
    keys for a model of each provider; with the first of them set, neither lists any."""
    from ladr_lab.models.litellm_model import import_litellm
    litellm = import_litellm()
    for key in ALL_KEYS:
        monkeypatch.delenv(key, raising=False)
    for provider, model in SAMPLE.items():
        said = [k for k in litellm.validate_environment(model)["missing_keys"] if k.endswith("_API_KEY")]
        assert said == list(PROVIDER_KEYS[provider]), provider
        assert missing_keys(model) == said
    for provider, model in SAMPLE.items():
        first = PROVIDER_KEYS[provider][0]
        monkeypatch.setenv(first, "k")
        assert [k for k in litellm.validate_environment(model)["missing_keys"] if k.endswith("_API_KEY")] == []
        assert missing_keys(model) == []
        monkeypatch.delenv(first)


def test_every_other_spelling_litellm_reads_a_key_from_is_a_key(monkeypatch):
    """Each name of ALSO_ACCEPTED alone is a key set (a call reads it); each is one litellm's own source reads the
    provider's key from, so the table cannot name a variable litellm never reads."""
    import importlib.util
    import re

    from ladr_lab.models.keys import ALSO_ACCEPTED
    folder = Path(importlib.util.find_spec("litellm").submodule_search_locations[0])
    read = set()
    for path in folder.rglob("*.py"):
        read.update(re.findall(r'get_secret(?:_str)?\(\s*"([A-Z0-9_]+)"', path.read_text(errors="replace")))
    for provider, names in ALSO_ACCEPTED.items():
        assert provider in PROVIDER_KEYS
        for name in names:
            assert name in read, name
            assert missing_keys(SAMPLE[provider], environ={name: "k"}) == []
        assert missing_keys(SAMPLE[provider], environ={}) == list(PROVIDER_KEYS[provider])


def test_gemini_takes_either_key():
    assert missing_keys("gemini/gemini-1.5-pro", environ={"GEMINI_API_KEY": "k"}) == []
    assert missing_keys("gemini/gemini-1.5-pro", environ={}) == ["GOOGLE_API_KEY", "GEMINI_API_KEY"]


def test_a_key_or_mock_in_the_options_skips_it_and_an_api_base_does_not():
    assert missing_keys("openai/x", {"api_key": "k"}, environ={}) == []
    assert missing_keys("openai/x", {"mock_response": "hi"}, environ={}) == []
    # litellm's OpenAI client refuses a keyless call to a local server too (its "Missing credentials")
    assert missing_keys("openai/x", {"api_base": "http://127.0.0.1:1/v1"}, environ={}) == ["OPENAI_API_KEY"]


def test_a_bare_name_and_an_unknown_provider_are_left_to_litellm():
    assert missing_keys("gpt-4o-mni", environ={}) == []      # litellm says it is an unknown model first
    assert missing_keys("someprovider/x", environ={}) == []
    assert missing_keys("ollama/llama3.2", environ={}) == []


def test_the_sentence_is_the_one_litellm_s_path_gave(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    assert key_problem("openai/gpt-4o-mini") == "openai/gpt-4o-mini needs OPENAI_API_KEY, which is not set"
    for model in (LiteLLMModel("openai/gpt-4o-mini"), OpenAICompatModel("openai/m", api_base="http://127.0.0.1:1/v1")):
        with pytest.raises(ModelError, match=r"needs OPENAI_API_KEY, which is not set"):
            model.check()


def _heavy_after(code: str, env: dict | None = None) -> list[str]:
    probe = ("import sys\n" + code + "\nprint(sorted(m for m in ('litellm', 'pandas') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=120,
                          env=env or {k: v for k, v in os.environ.items() if k not in ALL_KEYS})
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.strip().splitlines()


def test_the_missing_key_is_said_with_nothing_heavy_imported():
    out = _heavy_after(
        "from ladr_lab.errors import ModelError\nfrom ladr_lab.models import get_model\n"
        "for name in ('openai/gpt-4o-mini', 'anthropic/claude-3-5-sonnet-20240620'):\n"
        "    try:\n        get_model(name).check()\n    except ModelError as exc:\n        print(exc)\n")
    assert out == ["openai/gpt-4o-mini needs OPENAI_API_KEY, which is not set",
                   "anthropic/claude-3-5-sonnet-20240620 needs ANTHROPIC_API_KEY, which is not set", "[]"]


def test_get_model_routes_openai_at_an_api_base_to_the_direct_client():
    base = "http://127.0.0.1:1/v1"
    assert type(get_model("openai/m", options={"api_base": base})) is OpenAICompatModel
    assert type(get_model("litellm:openai/m", options={"api_base": base})) is LiteLLMModel
    assert get_model("litellm:openai/m", options={"api_base": base}).name == "openai/m"
    assert type(get_model("openai/m")) is LiteLLMModel                    # OpenAI itself: litellm
    assert type(get_model("openai/m", options={"api_base": base, "mock_response": "x"})) is LiteLLMModel
    assert type(get_model("ollama/m", options={"api_base": base})) is LiteLLMModel
    with pytest.raises(ModelError, match="api_base must be an http"):
        get_model("openai/m", options={"api_base": "127.0.0.1:1"})
