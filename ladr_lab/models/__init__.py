"""Models: the `complete(messages, call=CallInfo) -> Completion` interface and its implementations.

- OfflineModel — the embedded default (`offline`): deterministic, no key, no network
- ScriptedModel — scripted outputs per step/node (`script:PATH`), also for users' own tests
- ReplayModel — answers from a recorded trace and reports the first divergence (`replay:PATH`)
- LiteLLMModel — any litellm model string; litellm is imported on the first call only
- OpenAICompatModel — `openai/MODEL` with an `api_base`: an OpenAI-compatible server called directly, no litellm
- PROVIDER_KEYS, key_problem — the API key a provider needs, said from the model name before litellm is imported
- LocalModel — a GGUF model run in-process by llama.cpp (`local`, `local:NAME`), from packaged weights
- get_model — name → Model; warm_up — import what named models will need (a Ray worker, before its first cell)
- ResponseCache, CachedModel — the response cache of live models' answers across runs (models/cache.py)
- Recording — the optional protocol of a model that answers from a recorded run (ReplayModel is one)
- TokenStream, CallWatcher — a call's text as it is generated, its watchers, and how a call is cancelled
"""
from .base import CallInfo, Completion, Model, Recording, estimate_tokens
from .cache import CachedModel, ResponseCache
from .embedding import LiteLLMEmbedder
from .keys import PROVIDER_KEYS, key_problem
from .litellm_model import LiteLLMModel
from .local import LocalModel
from .local.weights import WeightsError
from .offline import OfflineModel
from .openai_compat import OpenAICompatModel
from .registry import get_model, warm_up
from .replay import ReplayDivergence, ReplayModel
from .scripted import ScriptedModel
from .stream import CallWatcher, TokenStream

__all__ = [
    "CachedModel",
    "CallInfo",
    "CallWatcher",
    "Completion",
    "LiteLLMEmbedder",
    "LiteLLMModel",
    "LocalModel",
    "Model",
    "OfflineModel",
    "OpenAICompatModel",
    "PROVIDER_KEYS",
    "Recording",
    "ReplayDivergence",
    "ReplayModel",
    "ResponseCache",
    "ScriptedModel",
    "TokenStream",
    "WeightsError",
    "estimate_tokens",
    "get_model",
    "key_problem",
    "warm_up",
]
