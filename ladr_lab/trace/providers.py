"""`provider_of`: the provider a model name gives, the one answer the rate limiter (`models/limited.py`, which counts
calls by provider) and the span plan (`otel/spans.py`, whose rounds say `gen_ai.system`) both use.

It reads the name only (a trace keeps names, not model objects), and nothing is imported:

- ladr_lab's own models (`offline`, `script:PATH`, `replay:PATH`, `local`, `local:NAME`) are `ladr_lab`;
- `litellm:` (ladr_lab's way to name the litellm backend, as the `litellm:MODEL` embedder does) is dropped first;
- a litellm `provider/model` is its provider, lower-cased (`openai/gpt-4o` and `litellm:openai/gpt-4o` are `openai`,
  `ollama/llama3.2` is `ollama`);
- a bare name of OpenAI's families (`gpt-…`, `chatgpt-…`, `o1`/`o3`/`o4…`, `text-embedding-…`) is `openai`, as
  litellm routes it (a bare name litellm does not know never reaches a call: `LiteLLMModel.check` refuses it);
- any other name, and no name, is None: the name alone does not say (the limiter then counts the model under its
  own name, and the span names no provider).
"""
from __future__ import annotations

import re

__all__ = ["LADR_LAB", "OWN_MODELS", "provider_of"]

LADR_LAB = "ladr_lab"
OWN_MODELS = ("local", "offline", "replay", "script")    # the heads of the model names ladr_lab answers itself
_OPENAI_BARE = re.compile(r"(?:gpt-|chatgpt-|text-embedding-|o\d(?:$|-))", re.I)


def provider_of(model: str | None) -> str | None:
    """The provider a model name gives (`openai/gpt-4o`, `litellm:openai/gpt-4o` and `gpt-4o` are `openai`; `offline`,
    `script:`, `replay:` and `local` are `ladr_lab`), or None when the name does not say."""
    name = str(model or "").strip()
    head, colon, rest = name.partition(":")
    if head.strip().lower() in OWN_MODELS:
        return LADR_LAB
    if colon and head.strip().lower() == "litellm":
        name = rest.strip()
    prefix, slash, rest = name.partition("/")
    if slash and prefix.strip() and rest.strip():
        return prefix.strip().lower()
    if _OPENAI_BARE.match(name):
        return "openai"
    return None
