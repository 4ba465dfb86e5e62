"""The model options every command that runs a model takes: `--temperature`, `--seed`, `--max-tokens`,
`--grammar FILE`, `--constrain request` and `--model-option KEY=VALUE` (models/options.py says which model takes
which; one it does not take is refused before the run starts), and the response cache's flags, `--no-cache` and
`--cache-dir DIR` (models/cache.py), which `run` and `eval` take."""
from __future__ import annotations

import argparse
from pathlib import Path

from ..errors import ModelError
from ..models.options import CONSTRAIN_MODES, OPTION_HELP, parse_option

__all__ = ["add_cache_options", "add_model_options", "cache_arg", "model_options"]


def add_model_options(p: argparse.ArgumentParser) -> None:
    """Register the model option flags on `p`."""
    g = p.add_argument_group("model options", "passed to the model (local, a litellm model; offline, script: and "
                                              "replay: take none)")
    g.add_argument("--temperature", type=float, metavar="T", help=OPTION_HELP["temperature"])
    g.add_argument("--seed", type=int, metavar="N", help=OPTION_HELP["seed"])
    g.add_argument("--max-tokens", type=int, metavar="N", help=OPTION_HELP["max_tokens"])
    g.add_argument("--grammar", metavar="FILE", help="a GBNF grammar file every output must follow")
    g.add_argument("--constrain", choices=CONSTRAIN_MODES, help=OPTION_HELP["constrain"])
    g.add_argument("--model-option", "-O", action="append", default=[], metavar="KEY=VALUE",
                   help="any other model option (VALUE read as JSON when it parses), e.g. -O n_ctx=16384")


def add_cache_options(p: argparse.ArgumentParser) -> None:
    """Register `--no-cache` and `--cache-dir DIR` (the response cache of live models' answers) on `p`."""
    g = p.add_argument_group("response cache", "live models' answers are kept per user and reused by a later run "
                                               "that sends the same request (docs/models.md); offline, script: and "
                                               "replay: are never cached")
    m = g.add_mutually_exclusive_group()
    m.add_argument("--no-cache", action="store_true",
                   help="call the model for every request: neither read nor write the response cache")
    m.add_argument("--cache-dir", metavar="DIR", help="keep the response cache in DIR (default: the per-user "
                                                      "cache folder's responses/, or $LADR_LAB_RESPONSE_CACHE)")


def cache_arg(a) -> bool | str:
    """What `cache=` the flags in `a` ask for: False (`--no-cache`), a folder (`--cache-dir`), else True."""
    if getattr(a, "no_cache", False):
        return False
    return getattr(a, "cache_dir", None) or True


def model_options(a) -> dict:
    """The options the flags in `a` name (ModelError for a malformed one or an unreadable grammar file)."""
    out: dict = {}
    for item in a.model_option or []:
        key, value = parse_option(item)
        out[key] = value
    for key in ("temperature", "seed", "max_tokens", "constrain"):
        value = getattr(a, key, None)
        if value is not None:
            out[key] = value
    if a.grammar:
        try:
            out["grammar"] = Path(a.grammar).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ModelError(f"--grammar {a.grammar}: cannot read it ({exc.__class__.__name__}: {exc})") from exc
    return out
