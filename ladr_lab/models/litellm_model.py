"""LiteLLMModel: any litellm model string (`openai/gpt-4o-mini`, `ollama/llama3.2`, ...).

This is the only module that imports litellm, and only inside `complete()`, right after setting
`LITELLM_LOCAL_MODEL_COST_MAP=True` so that importing litellm never fetches the cost map from the
network. Extra constructor keywords are passed to `litellm.completion` as they are (temperature,
api_base, timeout, and `mock_response="..."`, which answers without any network call — handy in
tests). Hints from the runtime are not forwarded, except under `constrain="request"`: then each call carries the
grammar made from its requestMatch (models/constrain.py) in the request body's `grammar`, which llama.cpp's
OpenAI-compatible server reads; `grammar="GBNF"` sends one fixed grammar the same way.

litellm prints to stdout on its own (`Provider List: https://docs.litellm.ai/docs/providers` around calls to an
OpenAI-compatible server whose answers name a model it does not know): `litellm.suppress_debug_info` is set on
import, so a run's round printout stays readable.

A watched call (`CallInfo.stream`, models/stream.py) is made with `stream=True` and `stream_options:
{"include_usage": true}`: each chunk's text is written to the stream as it comes, the answer is the chunks'
concatenation, and its tokens and cost are read from the response litellm builds from the chunks
(`stream_chunk_builder`). A cancel is seen between chunks (the stream is then closed, and with it the connection).
"""
from __future__ import annotations

import contextlib
import difflib
import io
import os
import threading
import time

from ..errors import CallCancelled, ModelError
from .base import CallInfo, Completion, estimate_message_tokens, estimate_tokens
from .keys import key_problem
from .options import validate_option_values
from .stream import TokenStream

__all__ = ["LiteLLMModel", "import_litellm", "no_stray_event_loop"]


# the variables litellm reads a provider's server address from when no api_base is given
_BASE_ENV = ("OPENAI_API_BASE", "OPENAI_BASE_URL", "OLLAMA_API_BASE", "AZURE_API_BASE", "HOSTED_VLLM_API_BASE",
             "LM_STUDIO_API_BASE", "OPENROUTER_API_BASE")
_STDOUT_SWAP = threading.Lock()     # contextlib.redirect_stdout swaps sys.stdout for every thread


def import_litellm():
    """litellm, imported with the cost map kept local and its own stdout prints off (ModelError if it is absent)."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    try:
        import litellm
    except ImportError as exc:  # pragma: no cover - litellm is a declared dependency
        raise ModelError(f"litellm is not installed ({exc}); install it or use model: offline") from exc
    litellm.suppress_debug_info = True    # its own "Provider List: ..." prints would break into the round printout
    return litellm


@contextlib.contextmanager
def no_stray_event_loop():
    """Close the event loop litellm leaves set on the calling thread. Its service logger asks the main thread for
    `asyncio.get_event_loop()` after a call, which makes one and keeps it, never closed: an open loop and its two
    sockets per process, and a ResourceWarning when it is collected. One set before the call is left alone."""
    import asyncio

    local = getattr(asyncio.get_event_loop_policy(), "_local", None)   # peek: the public getter would make one
    before = getattr(local, "_loop", None)
    try:
        yield
    finally:
        after = getattr(local, "_loop", None)
        if after is not None and after is not before and not after.is_running():
            after.close()
            asyncio.set_event_loop(before)


def _streamed(litellm, name: str, messages: list[dict], params: dict, stream: TokenStream) -> tuple:
    """`litellm.completion(..., stream=True)` read chunk by chunk, each chunk's text written to `stream` (checked for a
    cancel between chunks: the stream is then closed, which closes its connection); returns the response litellm
    builds from the chunks (`stream_chunk_builder`: usage, for the cost) and the text, the chunks' concatenation."""
    chunks = []
    parts: list[str] = []
    options = {"include_usage": True, **(params.get("stream_options") or {})}
    resp = litellm.completion(model=name, messages=messages, **{**params, "stream": True, "stream_options": options})
    try:
        for chunk in resp:
            stream.check()
            chunks.append(chunk)
            choices = _get(chunk, "choices") or []
            piece = _get(_get(choices[0], "delta"), "content") if choices else None
            if piece:
                parts.append(piece)
                stream.write(piece)
        stream.check()
    finally:
        close = getattr(resp, "close", None)
        if callable(close) and stream.cancelled:
            with contextlib.suppress(Exception):
                close()
    built = litellm.stream_chunk_builder(chunks, messages=messages) if chunks else None
    return built, "".join(parts)


def _get(obj, key, default=None):
    if obj is None:
        return default
    if isinstance(obj, dict):
        return obj.get(key, default)
    return getattr(obj, key, default)


class LiteLLMModel:
    """A model served through litellm, imported on the first call."""

    def __init__(self, name: str, *, max_concurrency: int = 8, **params) -> None:
        self.name = name
        self.max_concurrency = max_concurrency
        validate_option_values(params, name)
        self.constrain = params.pop("constrain", None)
        grammar = params.pop("grammar", None)
        if self.constrain:
            from .local import local_runtime_missing

            missing = local_runtime_missing()
            if missing:
                raise ModelError(f'model "{name}": constrain needs llama.cpp\'s grammar converter; {missing}')
        if grammar:
            params["extra_body"] = {**(params.get("extra_body") or {}), "grammar": grammar}
        self.params = params
        self._checked = False

    def check(self) -> None:
        """Refuse, before any call, a name litellm knows no provider for or a provider whose API key is not set."""
        if self._checked:
            return
        problem = key_problem(self.name, self.params)   # from the name alone: said before litellm's slow import
        if problem:
            raise ModelError(problem)
        litellm = import_litellm()
        # on an unknown name litellm prints "Provider List: ..." to stdout: keep the CLI's output clean. The swap of
        # sys.stdout is process-wide: under a lock, or two cells checking at once leave a StringIO as sys.stdout
        with _STDOUT_SWAP, contextlib.redirect_stdout(io.StringIO()):
            try:
                litellm.get_llm_provider(self.name, api_base=self.params.get("api_base"))
            except Exception as exc:
                close = difflib.get_close_matches(self.name, list(getattr(litellm, "model_list", []) or []), n=1)
                hint = f'; did you mean "{close[0]}"?' if close else " (write it as provider/model, e.g. openai/gpt-4o-mini)"
                raise ModelError(f"unknown model {self.name!r}: litellm knows no provider for it{hint}") from exc
            # a mock answer or a key passed in needs no environment; only missing *_API_KEY variables block a
            # call: litellm also lists OLLAMA_API_BASE and AWS/Vertex variables, which working setups often lack
            if "mock_response" not in self.params and "api_key" not in self.params:
                try:
                    missing = litellm.validate_environment(self.name).get("missing_keys") or []
                except Exception:  # litellm could not tell: let the call itself say what is wrong
                    missing = []
                keys = [k for k in missing if str(k).endswith("_API_KEY")]
                if keys:
                    raise ModelError(f"{self.name} needs {', '.join(keys)}, which is not set")
        self._checked = True

    def complete(self, messages: list[dict], call: CallInfo | None = None) -> Completion:
        """Call `litellm.completion(model=name, messages=messages, **params)` and measure it."""
        self.check()  # before litellm's retries, so a missing key is said at once
        litellm = import_litellm()
        params, constrained = self._params_for(call)
        stream = call.stream if call is not None else None
        start = time.perf_counter()
        streamed: str | None = None
        try:
            with no_stray_event_loop():
                if stream is None:
                    resp = litellm.completion(model=self.name, messages=messages, **params)
                else:
                    resp, streamed = _streamed(litellm, self.name, messages, params, stream)
        except CallCancelled:
            raise
        except Exception as exc:
            raise ModelError(f'model "{self.name}" failed: {type(exc).__name__}: {exc}') from exc
        latency = time.perf_counter() - start
        try:
            text = streamed if streamed is not None else _get(_get(resp.choices[0], "message"), "content") or ""
            choices = _get(resp, "choices") or []
            finish = _get(choices[0], "finish_reason") if choices else None
        except (AttributeError, IndexError, KeyError, TypeError) as exc:
            raise ModelError(f'model "{self.name}" returned no choices') from exc
        usage = _get(resp, "usage")
        tokens_in = _get(usage, "prompt_tokens") or estimate_message_tokens(messages)
        tokens_out = _get(usage, "completion_tokens") or estimate_tokens(text)
        try:
            cost = float(litellm.completion_cost(completion_response=resp) or 0.0)
        except Exception:  # unknown model/provider pricing: cost is simply not known
            cost = 0.0
        return Completion(
            text=text,
            tokens_in=int(tokens_in),
            tokens_out=int(tokens_out),
            cost=cost,
            latency=latency,
            model=self.name,
            constrained=constrained,
            finish_reason=str(finish) if finish else None,
            invocation_parameters=self.invocation_parameters(params),
        )

    def invocation_parameters(self, params: dict) -> dict:
        """What a call sends besides its messages, credentials left out: the model and its keywords, as
        openinference-instrumentation-litellm records `llm.invocation_parameters` for the same call."""
        from .cache import without_secrets
        return {"model": self.name, **without_secrets(params)}

    def _params_for(self, call: CallInfo | None) -> tuple[dict, str | None]:
        """The call's litellm keywords: under constrain, the grammar of this call's requestMatch in the body."""
        if not self.constrain or call is None:
            return self.params, ("grammar" if "grammar" in (self.params.get("extra_body") or {}) else None)
        from .constrain import CallConstraint

        c = CallConstraint.of(call)
        body = {**(self.params.get("extra_body") or {}), "grammar": c.grammar}
        return {**self.params, "extra_body": body}, c.kind

    def cache_request(self, messages: list[dict], call: CallInfo | None = None) -> dict:
        """What this call sends (the model, the exact messages, the call's keywords with its grammar), as the response
        cache keys it (models/cache.py leaves the secrets out)."""
        request = {"backend": "litellm", "model": self.name, "messages": messages, "params": self._params_for(call)[0]}
        if "api_base" not in request["params"]:     # a server named by the environment is part of what answers
            env = {k: os.environ[k] for k in _BASE_ENV if os.environ.get(k)}
            if env:
                request["base_from_env"] = env
        return request

    def close(self) -> None:
        """Nothing held between calls (litellm pools its own connections)."""

    def __repr__(self) -> str:
        return f"LiteLLMModel({self.name!r})"
