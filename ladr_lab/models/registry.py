"""get_model: turn a model name from a ladder, the CLI or a notebook into a Model."""
from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from ..errors import ModelError
from . import replay
from .base import Model
from .local.weights import DEFAULT_LOCAL
from .options import check_options

__all__ = ["get_model", "warm_up"]


def _resolve(path: str, base_dir: str | Path | None) -> Path:
    p = Path(path.strip()).expanduser()
    if not p.is_absolute() and base_dir is not None:
        p = Path(base_dir) / p
    return p


def _did_you_mean(text: str) -> str | None:
    """The ladr_lab model name `text` was probably meant to be (`offlne` → offline, `scrip:x` → script:x)."""
    head, sep, rest = re.match(r"([^:\s/]*)([:\s]?)(.*)", text, re.S).groups()  # type: ignore[union-attr]
    if "/" in text and not sep:
        return None  # provider/model: litellm's
    close = difflib.get_close_matches(head.lower(), ["offline", "script", "replay", "local"], n=1, cutoff=0.75)
    if not close or (head == close[0] and sep == ":"):
        return None
    if close[0] in ("offline", "local") and not sep:
        return close[0] if not rest.strip() else None
    if close[0] == "offline":
        return "offline" if not rest.strip() else None
    return f"{close[0]}:{rest.strip()}" if rest.strip() else f"{close[0]}:PATH"


def get_model(name: str | Model | None = None, *, then: str | Model | None = None,
              base_dir: str | Path | None = None, options: Mapping[str, Any] | None = None,
              cache: Any = None) -> Model:
    """Resolve `None`/"offline", "script:PATH", "replay:PATH", "local[:NAME|:PATH.gguf]", a Model instance, or a
    litellm model string (`openai/MODEL` with an `api_base` option: `OpenAICompatModel`, called without litellm;
    `litellm:NAME` forces litellm); `then` (a name or Model, resolved here too) is the live model of a mixed "replay:PATH";
    `options` (models/options.py) go to the model made from the name (to `then` in a mixed replay), and a model
    that does not take one refuses it at once. `cache` (True, a folder or a ResponseCache: models/cache.py) makes a
    live model, or a mixed replay's live model, answer through the response cache."""
    if cache is not None and cache is not False:     # the response cache wraps the live model made here
        from .cache import with_cache

        if isinstance(name, str) and name.strip().startswith("replay:") and then is not None:
            then, options = get_model(then, base_dir=base_dir, options=options, cache=cache), None
        else:
            made = get_model(name, then=then, base_dir=base_dir, options=options)
            return with_cache(made, cache, owns=made is not name)
    opts = dict(options or {})
    if then is not None and not (isinstance(name, str) and name.strip().startswith("replay:")):
        raise ModelError(f"then={then!r} goes with a replay:PATH model (mixed replay), not {name!r}")
    if name is None:
        name = "offline"
    if not isinstance(name, str):
        if callable(getattr(name, "complete", None)):
            if opts:
                raise ModelError(f"model options ({', '.join(opts)}) go with a model name; set them on "
                                 f"{getattr(name, 'name', type(name).__name__)} itself")
            return name  # a Model (close() is optional for models written by users)
        raise ModelError(f"not a model name or Model: {name!r}")
    text = name.strip()
    if text in ("", "offline"):
        from .offline import OfflineModel

        check_options(opts, (), "offline", why=" (it is deterministic)")
        return OfflineModel()
    if text.startswith("script:"):
        from .scripted import ScriptedModel

        check_options(opts, (), text, why=" (it answers from its script)")
        return ScriptedModel.from_file(_resolve(text[len("script:"):], base_dir))
    if text.startswith("replay:"):
        if opts and then is None:
            check_options(opts, (), text, why=" (it answers from its recording; options go to the live model of "
                                              "--then)")
        live = get_model(then, base_dir=base_dir, options=opts) if then is not None else None
        return replay.ReplayModel(_resolve(text[len("replay:"):], base_dir), then=live, base_dir=base_dir)
    if text == "local" or text.startswith("local:"):
        from .local import LocalModel, local_runtime_missing

        missing = local_runtime_missing()
        if missing:
            raise ModelError(missing)
        which = text[len("local:"):].strip() if ":" in text else ""
        if which.lower().endswith(".gguf"):
            which = str(_resolve(which, base_dir))
        return LocalModel(which or DEFAULT_LOCAL, **opts)
    meant = _did_you_mean(text)
    if meant is not None:
        raise ModelError(f'unknown model {text!r}: did you mean "{meant}"?')
    if text.startswith("openai/") and opts.get("api_base") and "mock_response" not in opts:
        from .openai_compat import OpenAICompatModel  # an OpenAI-compatible server: no litellm import

        return OpenAICompatModel(text, **opts)
    from .litellm_model import LiteLLMModel

    if text.startswith("litellm:"):     # litellm, always (an OpenAI-compatible server too)
        text = text[len("litellm:"):].strip()
    return LiteLLMModel(text, **opts)


replay.resolve_model = get_model    # `ReplayModel(then=NAME)` resolves the name here, not in replay.py


def warm_up(models: Iterable[tuple[Any, Mapping[str, Any] | None]]) -> list[str]:
    """Import, now, the libraries the models named by `(name, options)` pairs will need on their first call (litellm
    for a `LiteLLMModel`; nothing for ladr_lab's own models and `OpenAICompatModel`): a Ray worker does it before
    its first cell. Returns the names of the models warmed; a name that does not resolve is skipped (its cells
    say why)."""
    from ..trace.providers import LADR_LAB, provider_of
    from .litellm_model import LiteLLMModel, import_litellm

    warmed = []
    for name, options in models:
        if not isinstance(name, str) or provider_of(name) == LADR_LAB:     # offline, script:, replay:, local: own
            continue
        try:
            model = get_model(name, options=options)
        except Exception:   # noqa: BLE001 - the cells say what is wrong with it
            continue
        if type(model) is LiteLLMModel:
            import_litellm()
            warmed.append(name)
    return warmed
