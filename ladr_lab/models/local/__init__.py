"""LocalModel: a real language model that runs offline, in this process, from packaged weights (`model: local`).

`local` is the default packaged model (docs/local_model.md), `local:NAME` another packaged one (`local:1.5b`) and
`local:PATH.gguf` any GGUF file. The runtime is llama.cpp through `llama-cpp-python` (the `ladr_lab[local]` extra),
imported on first use; without it, resolving the name says which package to install, at once.

- **Loaded once per process.** Every LocalModel of one weights file and load settings shares one loaded model
  (`_RUNTIMES`), whose lock serializes calls (`max_concurrency` is 1: the model holds one context).
- **The prompt prefix cache.** llama.cpp keeps the tokens it has read; a call whose prompt starts with the same
  tokens reads only what follows (round N+1's prompt is round N's with its retrieved block appended, so it re-reads
  only that block). `stats` keeps, per call, how many prompt tokens were read and how many came from the cache.
- **Repeatable by default, warm or cold.** temperature 0 (greedy) and seed 0, unless options say otherwise; and a
  warm call gives the text a cold one gives: llama.cpp's float results for a token depend on the batch it was read
  in (its CPU kernels take a different path for a batch of 1, 2–3 or more tokens), so the cache is reused only in
  whole `n_batch` blocks counted from the prompt's start, which is how a cold call reads it (`reusable_prefix`).
  `prefix_cache="off"` reads every prompt from nothing; `"all"` is llama-cpp-python's own reuse of every cached
  token, faster by up to a block a call and not repeatable (docs/local_model.md).
- **`constrain="request"`** decodes under a grammar made from the call's requestMatch (models/constrain.py): the
  output is a JSON object valid against it, or prose; on the forced final call, or a call that may not retrieve,
  only an answer: prose, or any JSON object when the step tests its output as JSON. The completion says so
  (`Completion.constrained`), and so do the trace and the printout's `why:` line. Off by default: the raw model's
  mistakes are what teaching shows.

- **Watched calls stream.** With a `TokenStream` in the call (models/stream.py), each token is written to it as
  llama.cpp samples it, and a cancel stops the generation between two tokens (`tokens.py`: the call itself is the
  unstreamed one, so its answer is the same). Every call records llama.cpp's prompt and generation speeds.

The backend's own modules, beside this one: `weights` (the packaged GGUF files, assembled and checked) and `tokens`
(the streaming hook and the speeds). The grammar
of `constrain="request"` stays at `models/constrain.py`, because the litellm backend sends it too (to llama.cpp's
OpenAI-compatible server).
"""
from __future__ import annotations

import atexit
import contextlib
import os
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...errors import ModelError
from ..base import CallInfo, Completion
from ..options import check_options
from .tokens import speeds, watching
from .weights import DEFAULT_LOCAL, find_packaged, weights_path

__all__ = ["LOCAL_OPTIONS", "CallStats", "LocalModel", "default_threads", "local_runtime_missing",
           "resolve_weights", "reusable_prefix"]

LOAD_OPTIONS = ("n_ctx", "n_threads", "n_threads_batch", "n_batch")
CALL_OPTIONS = ("temperature", "seed", "max_tokens", "top_p", "top_k", "repeat_penalty", "grammar", "constrain",
                "prefix_cache")
LOCAL_OPTIONS = LOAD_OPTIONS + CALL_OPTIONS
DEFAULT_CTX = 8192
DEFAULT_MAX_TOKENS = 512
INSTALL = ('ladr-lab install local (llama.cpp is compiled with portable flags, its progress shown; or pip install '
           '"ladr_lab[local]" with CMAKE_ARGS set as docs/local_model.md says)')


def local_runtime_missing() -> str | None:
    """Why `local` cannot run here (the runtime is not installed), or None when it can."""
    import importlib.util

    if importlib.util.find_spec("llama_cpp") is None:
        return f"model local needs llama.cpp's Python runtime (llama-cpp-python), which is not installed: {INSTALL}"
    return None


def default_threads() -> tuple[int, int]:
    """(generation threads, prompt threads): one for generation (memory-bound, and a second thread spinning against
    a busy core cost 10× in the measurements of docs/local_model.md), every available core (at most 4) for the
    prompt."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        cores = os.cpu_count() or 1
    return 1, max(1, min(4, cores))


def resolve_weights(which: str) -> tuple[str, Path]:
    """(display name, GGUF path) of `which`: a packaged model's name (short names too) or a path to a .gguf file."""
    text = (which or DEFAULT_LOCAL).strip()
    if text.lower().endswith(".gguf") or "/" in text:
        path = Path(text).expanduser()
        if not path.is_file():
            raise ModelError(f"local:{text}: no such GGUF file")
        return f"local:{path.name}", path
    model = find_packaged(text)
    return f"local:{model.name}", weights_path(model.name)


@dataclass
class CallStats:
    """What one call cost: prompt tokens read and taken from the cache, tokens generated, and the seconds of each."""

    prompt_tokens: int
    cached_tokens: int
    generated_tokens: int
    seconds: float


def reusable_prefix(cached: Sequence[int], prompt: Sequence[int], aligned: int, n_batch: int, mode: str = "on") -> int:
    """How many of `prompt`'s first tokens to take from the cache so the call reads the rest as a cold call would.

    A cold call reads the prompt in blocks of `n_batch` tokens from its start, and llama.cpp's float results for a
    token depend on the batch it was read in. So (mode "on") the reuse is the common prefix of `cached` and `prompt`,
    cut to the `aligned` tokens that were themselves read in whole blocks from the start, rounded down to a block,
    and short of the prompt's last token (which must be read again, in its block, for the logits): every block the
    call reads is then the block a cold call reads. "off": nothing. ("all" is not decided here: llama-cpp-python's
    own reuse, every matching token.)"""
    if mode == "off" or n_batch <= 0 or not prompt:
        return 0
    common = 0
    for a, b in zip(cached, prompt, strict=False):
        if a != b:
            break
        common += 1
    keep = min(common, aligned, len(prompt) - 1)
    return max(0, keep // n_batch * n_batch)


_BLOCK_LLAMA: Any = None


def _block_llama_class() -> Any:
    """`llama_cpp.Llama` whose `generate` first cuts the cached tokens to `reusable_prefix` (per `prefix_cache`), then
    lets llama-cpp-python reuse what is left as it always does; made on first use (llama_cpp is a heavy import)."""
    global _BLOCK_LLAMA
    if _BLOCK_LLAMA is None:
        from llama_cpp import Llama

        class BlockLlama(Llama):
            """Llama that reuses its cached prompt prefix only in whole n_batch blocks (see `reusable_prefix`)."""

            prefix_cache = "on"
            aligned = 0          # the leading cached tokens that were read in whole n_batch blocks from the start
            reused = 0           # how many prompt tokens the last call took from the cache

            def generate(self, tokens, *args, **kwargs):
                tokens = list(tokens)
                if self.prefix_cache == "all":
                    common = reusable_prefix(self._input_ids, tokens, len(tokens), 1)
                    self.reused = min(common, len(tokens) - 1)
                    self.aligned = 0     # its reads started anywhere: the next "on" call starts from nothing
                else:
                    keep = reusable_prefix(self._input_ids, tokens, self.aligned, self.n_batch, self.prefix_cache)
                    if keep < self.n_tokens:
                        self.n_tokens = keep     # llama-cpp-python then reuses exactly `keep` and drops the rest
                    self.reused = keep
                    self.aligned = len(tokens) // self.n_batch * self.n_batch
                return super().generate(tokens, *args, **kwargs)

        _BLOCK_LLAMA = BlockLlama
    return _BLOCK_LLAMA


@dataclass
class _Runtime:
    llama: Any
    lock: threading.Lock = field(default_factory=threading.Lock)


_RUNTIMES: dict[tuple, _Runtime] = {}
_RUNTIMES_LOCK = threading.Lock()


@atexit.register
def _close_runtimes() -> None:
    """Free the loaded models before the interpreter tears down the modules their finalizers need (else llama.cpp's
    `__del__` fails at exit with "'NoneType' object is not callable")."""
    with _RUNTIMES_LOCK:
        for rt in _RUNTIMES.values():
            with contextlib.suppress(Exception):
                rt.llama.close()
        _RUNTIMES.clear()


def _runtime(path: Path, load: dict[str, int]) -> _Runtime:
    """The loaded model for `path` and these load settings: loaded on first use, then shared by the process."""
    key = (str(path.resolve()), tuple(sorted(load.items())))
    with _RUNTIMES_LOCK:
        rt = _RUNTIMES.get(key)
        if rt is None:
            missing = local_runtime_missing()
            if missing:
                raise ModelError(missing)
            try:
                llama = _block_llama_class()(model_path=str(path), n_ctx=load["n_ctx"], n_threads=load["n_threads"],
                              n_threads_batch=load["n_threads_batch"], n_batch=load["n_batch"], logits_all=False,
                              seed=0, verbose=False)
            except (ValueError, RuntimeError, OSError) as exc:
                raise ModelError(f"local: could not load {path}: {exc}") from exc
            rt = _RUNTIMES[key] = _Runtime(llama)
        return rt


class LocalModel:
    """A GGUF model run in-process by llama.cpp: `LocalModel()` is the default packaged model."""

    max_concurrency = 1

    def __init__(self, which: str = DEFAULT_LOCAL, **options: Any) -> None:
        self.name, self.path = resolve_weights(which)
        check_options(options, LOCAL_OPTIONS, self.name)
        gen, batch = default_threads()
        self.load = {"n_ctx": int(options.pop("n_ctx", DEFAULT_CTX)), "n_threads": int(options.pop("n_threads", gen)),
                     "n_threads_batch": int(options.pop("n_threads_batch", batch)),
                     "n_batch": int(options.pop("n_batch", 512))}
        self.constrain: str | None = options.pop("constrain", None)
        self.grammar_text: str | None = options.pop("grammar", None)
        reuse = options.pop("prefix_cache", "on")      # (its value was checked by check_options)
        self.prefix_cache = ("on" if reuse else "off") if isinstance(reuse, bool) else str(reuse)
        self.sampling = {"temperature": 0.0, "seed": 0, "max_tokens": DEFAULT_MAX_TOKENS, **options}
        self.stats: list[CallStats] = []
        self._grammars: dict[str, Any] = {}
        if self.grammar_text is not None:
            self._grammar_of(self.grammar_text, "grammar")     # a bad grammar is said now, not at the first call

    @property
    def options(self) -> dict:
        """Every setting in force (load, sampling, grammar or constrain), as a trace or a benchmark records it."""
        out = {**self.load, **self.sampling}
        if self.prefix_cache != "on":
            out["prefix_cache"] = self.prefix_cache
        if self.constrain:
            out["constrain"] = self.constrain
        if self.grammar_text:
            out["grammar"] = self.grammar_text
        return out

    def check(self) -> None:
        """Load the model now (the CLI calls this before the run, so a load failure is said before any step)."""
        _runtime(self.path, self.load)

    def _grammar_of(self, text: str, what: str):
        g = self._grammars.get(text)
        if g is None:
            vocab = _runtime(self.path, self.load).llama._model.vocab     # (says so when the runtime is missing)
            import llama_cpp

            # LlamaGrammar only keeps the text; llama.cpp parses it when a sampler is made from it (NULL if it cannot)
            sampler = llama_cpp.llama_sampler_init_grammar(vocab, text.encode("utf-8"), b"root")
            if not sampler:
                raise ModelError(f'model "{self.name}": the {what} is not a GBNF grammar llama.cpp can read (with a '
                                 f"rule named root): {text[:200]!r}")
            llama_cpp.llama_sampler_free(sampler)
            g = self._grammars[text] = llama_cpp.LlamaGrammar.from_string(text, verbose=False)
        return g

    def _constraint(self, call: CallInfo | None) -> tuple[Any, str | None, Any]:
        """(grammar, how the call is constrained, the CallConstraint that checks the output, if any)."""
        if self.grammar_text is not None:
            return self._grammar_of(self.grammar_text, "grammar"), "grammar", None
        if self.constrain != "request" or call is None:
            return None, None, None
        from ..constrain import CallConstraint

        c = CallConstraint.of(call)
        return self._grammar_of(c.grammar, "constrained grammar"), c.kind, c

    def complete(self, messages: list[dict], call: CallInfo | None = None) -> Completion:
        """Answer `messages` with the local model (greedy by default), re-reading only the prompt's new suffix."""
        grammar, constrained, constraint = self._constraint(call)
        rt = _runtime(self.path, self.load)
        kwargs = dict(self.sampling)
        stream = call.stream if call is not None else None
        with rt.lock:
            rt.llama.prefix_cache = self.prefix_cache
            start = time.perf_counter()
            try:
                # a watched call streams its tokens (tokens.py); both measure llama.cpp's own speeds
                with speeds(rt.llama) as speed, watching(rt.llama, stream):
                    resp = rt.llama.create_chat_completion(messages=messages, grammar=grammar, **kwargs)
            except ValueError as exc:
                if "context window" in str(exc) or "exceed" in str(exc):
                    raise ModelError(f'model "{self.name}": {exc}; raise the option n_ctx (now {self.load["n_ctx"]}) '
                                     f"or shorten the prompt") from exc
                raise ModelError(f'model "{self.name}" failed: {exc}') from exc
            latency = time.perf_counter() - start
            reused = rt.llama.reused                 # under the lock: the next call changes it
        usage = resp.get("usage") or {}
        prompt_tokens = int(usage.get("prompt_tokens") or 0)
        generated = int(usage.get("completion_tokens") or 0)
        cached = min(reused, max(0, prompt_tokens - 1))
        self.stats.append(CallStats(prompt_tokens, cached, generated, latency))
        choice = resp["choices"][0]
        text = choice["message"].get("content") or ""
        if constrained and choice.get("finish_reason") == "length" and text.lstrip().startswith(("{", "[")):
            raise ModelError(f'model "{self.name}": the constrained output was cut at max_tokens '
                             f'({self.sampling["max_tokens"]}) before its JSON closed; raise the option max_tokens')
        if constraint is not None:
            constraint.check(text, self.name)
        return Completion(text=text, tokens_in=prompt_tokens, tokens_out=generated, cost=0.0, latency=latency,
                          model=self.name, constrained=constrained,
                          finish_reason=str(choice.get("finish_reason") or "") or None,
                          invocation_parameters={"model": self.name, **kwargs},
                          prompt_tps=speed.get("prompt_tps"), gen_tps=speed.get("gen_tps"))

    def cache_request(self, messages: list[dict], call: CallInfo | None = None) -> dict:
        """What decides this call's answer (the weights, the exact messages, the sampling options, the call's grammar),
        as the response cache keys it (models/cache.py); the load settings (threads, batch, context) do not."""
        if self.grammar_text is not None:
            grammar: str | None = self.grammar_text
        elif self.constrain == "request" and call is not None:
            from ..constrain import CallConstraint

            grammar = CallConstraint.of(call).grammar
        else:
            grammar = None
        try:
            size = self.path.stat().st_size
        except OSError:
            size = None
        return {"backend": "local", "model": self.name, "weights": [self.path.name, size], "messages": messages,
                "params": dict(self.sampling), "grammar": grammar}

    def close(self) -> None:
        """Nothing to release per model: the loaded weights stay for the process's other LocalModels."""

    def __repr__(self) -> str:
        extra = f", constrain={self.constrain!r}" if self.constrain else ""
        return f"LocalModel({self.name!r}{extra})"

