"""One answer to "which provider serves this model name": the rate limiter and the span plan use the same function."""
from __future__ import annotations

import contextlib
import io

import pytest

from ladr_lab.trace.providers import provider_of

SPELLINGS = [
    ("litellm:openai/gpt-4o", "openai"),      # the limiter counted this under "litellm:openai" before
    ("openai/gpt-4o", "openai"),
    ("OpenAI/gpt-4o", "openai"),
    ("gpt-4o", "openai"),                     # litellm routes the bare name to openai (the span said None before)
    ("o3-mini", "openai"),
    ("litellm:gpt-4o", "openai"),
    ("anthropic/claude-3-5-haiku", "anthropic"),
    ("ollama/llama3.2", "ollama"),
    (" ollama/qwen:7b ", "ollama"),
    ("offline", "ladr_lab"),                  # the limiter said "offline" before
    ("script:tests/fixtures/a/script.yaml", "ladr_lab"),
    ("replay:runs/a.jsonl", "ladr_lab"),
    ("local", "ladr_lab"),
    ("local:1.5b", "ladr_lab"),
    ("local:/models/x.gguf", "ladr_lab"),
    ("mistral-large-latest", None),           # the name alone does not say
    ("scripted-gpt", None),
    ("openai/", None),
    ("", None),
    (None, None),
]


@pytest.mark.parametrize(("name", "provider"), SPELLINGS)
def test_a_model_name_gives_its_provider(name, provider):
    assert provider_of(name) == provider


def test_the_rate_limiter_and_the_spans_ask_the_same_function():
    from ladr_lab.models import limited
    from ladr_lab.otel import spans

    assert limited.provider_of is spans.provider_of is provider_of
    assert "provider_of" in limited.__all__ and "provider_of" in spans.__all__


@pytest.mark.parametrize("name", ["openai/gpt-4o", "gpt-4o", "gpt-4o-mini", "o3-mini", "text-embedding-3-small",
                                  "ollama/llama3.2", "anthropic/claude-3-5-haiku"])
def test_litellm_agrees_on_the_names_litellm_knows(name):
    from ladr_lab.models.litellm_model import import_litellm

    litellm = import_litellm()          # a declared dependency; imported as the model imports it (cost map local)
    with contextlib.redirect_stdout(io.StringIO()):
        _model, provider, _key, _base = litellm.get_llm_provider(name)
    assert provider_of(name) == provider
