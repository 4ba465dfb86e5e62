"""get_model: turn a model name from a ladder, the CLI or a notebook into a Model."""
from __future__ import annotations

import difflib
import re
from pathlib import Path

from ..errors import ModelError
from . import replay
from .base import Model

__all__ = ["get_model"]


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
    close = difflib.get_close_matches(head.lower(), ["offline", "script", "replay"], n=1, cutoff=0.75)
    if not close or (head == close[0] and sep == ":"):
        return None
    if close[0] == "offline":
        return "offline" if not rest.strip() else None
    return f"{close[0]}:{rest.strip()}" if rest.strip() else f"{close[0]}:PATH"


def get_model(name: str | Model | None = None, *, then: str | Model | None = None,
              base_dir: str | Path | None = None) -> Model:
    """Resolve `None`/"offline", "script:PATH", "replay:PATH", a Model instance, or a litellm model string;
    `then` (a name or Model, resolved here too) is the live model of a mixed "replay:PATH"."""
    if then is not None and not (isinstance(name, str) and name.strip().startswith("replay:")):
        raise ModelError(f"then={then!r} goes with a replay:PATH model (mixed replay), not {name!r}")
    if name is None:
        from .offline import OfflineModel

        return OfflineModel()
    if not isinstance(name, str):
        if callable(getattr(name, "complete", None)):
            return name  # a Model (close() is optional for models written by users)
        raise ModelError(f"not a model name or Model: {name!r}")
    text = name.strip()
    if text in ("", "offline"):
        from .offline import OfflineModel

        return OfflineModel()
    if text.startswith("script:"):
        from .scripted import ScriptedModel

        return ScriptedModel.from_file(_resolve(text[len("script:"):], base_dir))
    if text.startswith("replay:"):
        live = get_model(then, base_dir=base_dir) if then is not None else None
        return replay.ReplayModel(_resolve(text[len("replay:"):], base_dir), then=live, base_dir=base_dir)
    meant = _did_you_mean(text)
    if meant is not None:
        raise ModelError(f'unknown model {text!r}: did you mean "{meant}"?')
    from .litellm_model import LiteLLMModel

    return LiteLLMModel(text)


replay.resolve_model = get_model    # `ReplayModel(then=NAME)` resolves the name here, not in replay.py
