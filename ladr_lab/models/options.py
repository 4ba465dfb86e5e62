"""Model options: the settings a run passes to its model (`temperature`, `seed`, `grammar`, `constrain`, ...).

One vocabulary for every model, from the command line (`--temperature 0`, `--seed 7`, `--grammar FILE`,
`--constrain request`, `--model-option KEY=VALUE`) or from Python (`Run(..., model_options={...})`). Each kind of
model says which options it takes, and anything else is refused at once, naming the option and the model, with the
near name when there is one: an option that would silently do nothing is a mistake the user never sees.

- `local` (llama.cpp) takes the sampling options, `grammar`, `constrain`, `prefix_cache`, and its load settings
  (`n_ctx`, `n_threads`, `n_threads_batch`, `n_batch`).
- a litellm model takes any option: litellm passes it to the provider; `grammar` travels as the request body's
  `grammar` (what llama.cpp's and other OpenAI-compatible servers read); `constrain` needs the grammar converter of
  the local extra and a server that reads `grammar`.
- `offline`, `script:` and `replay:` are deterministic: they take none (a replay's live model, `--then`, does).
"""
from __future__ import annotations

import difflib
import json
from collections.abc import Iterable, Mapping
from typing import Any

from ..errors import ModelError

__all__ = ["CONSTRAIN_MODES", "OPTION_HELP", "PREFIX_CACHE_MODES", "check_options", "parse_option", "validate_option_values"]

CONSTRAIN_MODES = ("request",)

OPTION_HELP: dict[str, str] = {
    "temperature": "sampling temperature, a number ≥ 0 (local: 0 by default)",
    "seed": "the sampler's seed, a whole number (local: 0 by default)",
    "max_tokens": "at most this many generated tokens per call (local: 512 by default)",
    "top_p": "nucleus sampling, a number in (0, 1]",
    "top_k": "sample among the k likeliest tokens, a whole number ≥ 0",
    "repeat_penalty": "penalty on repeated tokens, a number > 0",
    "grammar": "a GBNF grammar every output must follow (on the command line: --grammar FILE)",
    "constrain": '"request": every output is a JSON object valid against the step\'s requestMatch, or prose',
    "n_ctx": "context window in tokens (local: 8192 by default)",
    "n_threads": "threads for generation (local: measured default, see docs/local_model.md)",
    "n_threads_batch": "threads for reading the prompt (local: measured default)",
    "n_batch": "prompt tokens read per batch (local: 512 by default)",
    "prefix_cache": 'local: "on" (the default: the cached prompt is reused in whole n_batch blocks, so a warm call '
                    'gives a cold call\'s text), "off" (every prompt read from nothing) or "all" (every cached token '
                    'reused: faster, and a warm call may differ from a cold one)',
}
PREFIX_CACHE_MODES = ("on", "off", "all")

_NUMBERS = {"temperature": (0.0, None), "top_p": (0.0, 1.0), "repeat_penalty": (0.0, None)}
_WHOLE = {"seed": None, "max_tokens": 1, "top_k": 0, "n_ctx": 256, "n_threads": 1, "n_threads_batch": 1,
          "n_batch": 1}


def parse_option(text: str) -> tuple[str, Any]:
    """`KEY=VALUE` → (key, value), the value read as JSON when it parses (`0.2`, `true`, `[1]`), else kept as text."""
    key, sep, raw = text.partition("=")
    key = key.strip().replace("-", "_")
    if not sep or not key:
        raise ModelError(f"a model option is KEY=VALUE (got {text!r})")
    try:
        value = json.loads(raw)
    except ValueError:
        value = raw
    return key, value


def check_options(options: Mapping[str, Any], accepted: Iterable[str], model: str, *, why: str = "") -> None:
    """Refuse every option `model` does not take, naming it and the near name; then the values (a litellm model,
    which takes any option, checks only the values: `validate_option_values`)."""
    if not options:
        return
    allowed = sorted(accepted)
    for key in options:
        if key in allowed:
            continue
        if not allowed:
            raise ModelError(f'model "{model}" takes no options{why}; got "{key}"')
        close = difflib.get_close_matches(key, allowed, n=1, cutoff=0.6)
        hint = f'; did you mean "{close[0]}"?' if close else f" (it takes: {', '.join(allowed)})"
        raise ModelError(f'model "{model}" takes no option "{key}"{hint}')
    validate_option_values(options, model)


def validate_option_values(options: Mapping[str, Any], model: str) -> None:
    """Refuse a known option given a value of the wrong kind (`temperature: "hot"`, `seed: 1.5`, `constrain: x`),
    and `constrain` beside `grammar` (each is the whole grammar of a call)."""
    if options.get("constrain") and options.get("grammar"):
        raise ModelError(f'model "{model}": give "constrain" or "grammar", not both')
    for key, value in options.items():
        if key in _NUMBERS:
            lo, hi = _NUMBERS[key]
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value < lo or (hi is not None and value > hi):
                span = f"between {lo} and {hi}" if hi is not None else f"≥ {lo}"
                raise ModelError(f'model "{model}": option "{key}" must be a number {span} (got {value!r})')
        elif key in _WHOLE:
            least = _WHOLE[key]
            if isinstance(value, bool) or not isinstance(value, int) or (least is not None and value < least):
                more = f" ≥ {least}" if least is not None else ""
                raise ModelError(f'model "{model}": option "{key}" must be a whole number{more} (got {value!r})')
        elif key == "constrain":
            if value is not None and value not in CONSTRAIN_MODES:
                raise ModelError(f'model "{model}": option "constrain" takes "request" (or nothing), got {value!r}')
        elif key == "prefix_cache":
            if value not in PREFIX_CACHE_MODES and not isinstance(value, bool):
                raise ModelError(f'model "{model}": option "prefix_cache" takes "on", "off" or "all" (got {value!r})')
        elif key == "grammar":
            if value is not None and (not isinstance(value, str) or not value.strip()):
                raise ModelError(f'model "{model}": option "grammar" must be the text of a GBNF grammar')
