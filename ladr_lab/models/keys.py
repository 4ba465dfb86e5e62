"""The API key a litellm provider needs, known from the model name alone, before litellm is imported.

`import litellm` takes seconds (12-17 s on a loaded machine), so a missing key found by litellm's own
`validate_environment` came that late. `PROVIDER_KEYS` is the provider → environment variable table of the providers
litellm validates, as litellm names them (its `*_API_KEY` variables, in its order; `gemini` takes either of two);
`tests/models/test_keys.py` checks it against `litellm.validate_environment` so the two cannot drift. The provider is
a `provider/model` name's prefix (`trace.providers.provider_of`); a bare name (`gpt-4o-mini`) is left to litellm,
which first says whether it knows the name at all (`gpt-4o-mni` is an unknown model, not a missing key). `api_key` or
`mock_response` in the model's options skip the check, as `LiteLLMModel.check` does; an `api_base` does not
(litellm's OpenAI client refuses a call without a key even to a local server: pass `-O api_key=x`).
"""
from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from ..trace.providers import provider_of

__all__ = ["ALSO_ACCEPTED", "PROVIDER_KEYS", "key_problem", "missing_keys"]

PROVIDER_KEYS: dict[str, tuple[str, ...]] = {
    "anthropic": ("ANTHROPIC_API_KEY",),
    "cerebras": ("CEREBRAS_API_KEY",),
    "codestral": ("CODESTRAL_API_KEY",),
    "cohere": ("COHERE_API_KEY",),
    "deepinfra": ("DEEPINFRA_API_KEY",),
    "deepseek": ("DEEPSEEK_API_KEY",),
    "fireworks_ai": ("FIREWORKS_AI_API_KEY",),
    "gemini": ("GOOGLE_API_KEY", "GEMINI_API_KEY"),      # either one
    "groq": ("GROQ_API_KEY",),
    "huggingface": ("HUGGINGFACE_API_KEY",),
    "mistral": ("MISTRAL_API_KEY",),
    "nvidia_nim": ("NVIDIA_NIM_API_KEY",),
    "openai": ("OPENAI_API_KEY",),
    "openrouter": ("OPENROUTER_API_KEY",),
    "perplexity": ("PERPLEXITYAI_API_KEY",),
    "replicate": ("REPLICATE_API_KEY",),
    "together_ai": ("TOGETHERAI_API_KEY",),
    "xai": ("XAI_API_KEY",),
}
# the other spellings litellm reads a provider's key from when it calls (its `get_secret_str` names), which its
# `validate_environment` does not list: any of them set is a key set, as it is for the call
ALSO_ACCEPTED: dict[str, tuple[str, ...]] = {
    "fireworks_ai": ("FIREWORKS_API_KEY", "FIREWORKSAI_API_KEY", "FIREWORKS_AI_TOKEN"),
    "openrouter": ("OR_API_KEY",),
    "perplexity": ("PERPLEXITY_API_KEY",),
    "together_ai": ("TOGETHER_AI_API_KEY", "TOGETHER_API_KEY", "TOGETHER_AI_TOKEN"),
}


def missing_keys(name: str, options: Mapping[str, Any] | None = None,
                 environ: Mapping[str, str] | None = None) -> list[str]:
    """The variables `name`'s provider needs and the environment lacks (all of them, when none of a provider's
    alternatives is set); [] when the options carry a key or a mock answer, or the table does not know the
    provider (litellm then says what it knows)."""
    opts = options or {}
    if opts.get("api_key") or "mock_response" in opts:
        return []
    if "/" not in name:
        return []
    provider = provider_of(name)
    keys = PROVIDER_KEYS.get(provider or "", ())
    env = os.environ if environ is None else environ
    if not keys or any(env.get(k) for k in (*keys, *ALSO_ACCEPTED.get(provider or "", ()))):
        return []
    return list(keys)


def key_problem(name: str, options: Mapping[str, Any] | None = None) -> str | None:
    """The sentence a missing key is said with (`openai/gpt-4o-mini needs OPENAI_API_KEY, which is not set`), or
    None."""
    keys = missing_keys(name, options)
    return f"{name} needs {', '.join(keys)}, which is not set" if keys else None
