"""The `ladr-lab` command line (SPEC §9); the only place errors become exit codes.

Exit codes: 0 success; 1 a ladder with problems (`validate`), or a run that did not complete
(`run`: error, aborted, budget_exhausted); 2 bad command-line usage, and a `UsageError` (an assertion that cannot be
read, an experiment file's problems). Each subcommand lives in its
own module with an `add_parser(sub)` that registers it.
"""
from __future__ import annotations

import argparse
import os
import sys

from .. import errors
from . import eval as eval_
from . import install, lint, run, schema, search_runs, serve, show, slate, trace, validate
from ._common import USAGE_ERROR, _problems
from .printer import OutputClosed, RoundPrinter

_COMMANDS = (validate, run, show, trace, lint, eval_, search_runs, serve, schema, slate, install)


class _Version(argparse.Action):
    """`--version`: the installed package's version (importlib.metadata, read only when asked), then exit 0."""

    def __init__(self, option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS, help=None):
        super().__init__(option_strings, dest=dest, default=default, nargs=0, help=help)

    def __call__(self, parser, namespace, values, option_string=None):
        from importlib.metadata import PackageNotFoundError, version

        try:
            number = version("ladr_lab")
        except PackageNotFoundError:     # a checkout that was never installed
            number = "unknown (not installed)"
        print(f"ladr-lab {number}")
        parser.exit()


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of every subcommand."""
    p = argparse.ArgumentParser(prog="ladr-lab", description="Author, run and debug LADR ladders.")
    p.add_argument("--version", action=_Version, help="print the version of ladr_lab and exit")
    sub = p.add_subparsers(dest="cmd", required=True)
    for command in _COMMANDS:
        command.add_parser(sub)
    return p


def _skip_iri_grammar() -> None:
    """Keep jsonschema from importing `rfc3987_syntax` in the command's own process.

    jsonschema imports it, when installed (JupyterLab's jupyter-events pulls it in), only to check the "iri"
    formats, which no ladder check uses (only "regex" is checked); building its grammar at import costs
    3-6 s, which every `validate` would pay. A library user's process is left as it is."""
    if "jsonschema" not in sys.modules:
        sys.modules.setdefault("rfc3987_syntax", None)  # type: ignore[arg-type]   # import then raises ImportError


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `ladr-lab` command."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    _skip_iri_grammar()
    argv = sys.argv[1:] if argv is None else list(argv)
    # `eval compare A B` has a parser of its own: `eval` reads its positionals as ladder files
    args = eval_.compare_parser().parse_args(argv[2:]) if eval_.is_compare(argv) else build_parser().parse_args(argv)
    try:
        return args.fn(args)
    except errors.ConfigError as exc:
        for p in _problems(exc):
            print(p.format())
        return USAGE_ERROR if isinstance(exc, errors.UsageError) else 1
    except errors.LadrError as exc:
        print(f"ladr-lab: {exc}", file=sys.stderr)
        return USAGE_ERROR if isinstance(exc, errors.UsageError) else 1
    except KeyboardInterrupt:
        return 130
    except (BrokenPipeError, OutputClosed):
        # the reader went away (`| head`): Python's recipe for SIGPIPE, so the final flush cannot fail either
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 141


__all__ = ["OutputClosed", "RoundPrinter", "build_parser", "main"]
