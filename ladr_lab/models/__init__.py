"""Models: the `complete(messages, call=CallInfo) -> Completion` interface and its implementations.

- OfflineModel — the embedded default (`offline`): deterministic, no key, no network
- ScriptedModel — scripted outputs per step/node (`script:PATH`), also for users' own tests
- ReplayModel — answers from a recorded trace and reports the first divergence (`replay:PATH`)
- LiteLLMModel — any litellm model string; litellm is imported on the first call only
- LocalModel — a GGUF model run in-process by llama.cpp (`local`, `local:NAME`), from packaged weights
- get_model — name → Model
- ResponseCache, CachedModel — the response cache of live models' answers across runs (models/cache.py)
- Recording — the optional protocol of a model that answers from a recorded run (ReplayModel is one)
"""
from .base import CallInfo, Completion, Model, Recording, estimate_tokens
from .cache import CachedModel, ResponseCache
from .embedding import LiteLLMEmbedder
from .litellm_model import LiteLLMModel
from .local import LocalModel
from .local.weights import WeightsError
from .offline import OfflineModel
from .registry import get_model
from .replay import ReplayDivergence, ReplayModel
from .scripted import ScriptedModel

__all__ = [
    "CachedModel",
    "CallInfo",
    "Completion",
    "LiteLLMEmbedder",
    "LiteLLMModel",
    "LocalModel",
    "Model",
    "OfflineModel",
    "Recording",
    "ReplayDivergence",
    "ReplayModel",
    "ResponseCache",
    "ScriptedModel",
    "WeightsError",
    "estimate_tokens",
    "get_model",
]
