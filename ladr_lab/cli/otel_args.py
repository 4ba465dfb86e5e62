"""The OpenTelemetry flags of `run`, `eval` and `trace otel` (docs/otel.md): `--otel`, `--otel-no-content` (send no
text a run read or wrote: prompts, documents, outputs, reasons) and `--otel-document-chars N` (a retrieved
document's content on its fetch span, default 4,000; 0 sends none); and `eval`'s `--phoenix [URL]`, the upload of the
experiment to Phoenix (docs/experiments.md)."""
from __future__ import annotations

import argparse
from typing import Any

from ._common import _whole

__all__ = ["add_otel_options", "otel_options"]


def _count(text: str) -> int:
    return _whole(text, 0)


def add_otel_options(p: argparse.ArgumentParser, *, export_flag: bool = True, phoenix: bool = False) -> None:
    """Register the OpenTelemetry flags on `p` (`--otel` itself unless the command is the export; `--phoenix`)."""
    g = p.add_argument_group("OpenTelemetry (the otel extra; docs/otel.md)")
    if export_flag:
        g.add_argument("--otel", action="store_true",
                       help="export the run (each cell's run) as OpenTelemetry spans over OTLP/HTTP when it ends, to "
                            "OTEL_EXPORTER_OTLP_ENDPOINT")
    g.add_argument("--otel-no-content", action="store_true",
                   help="send no text the run read or wrote (prompts, documents, outputs, reasons): names, paths, "
                        "statuses, counts, tokens and times only" + ("; implies --otel" if export_flag else ""))
    g.add_argument("--otel-document-chars", type=_count, metavar="N",
                   help="characters of each retrieved document's content on its fetch span (default 4,000, or "
                        "LADR_OTEL_DOCUMENT_CHARS; 0 sends none)")
    if phoenix:
        g.add_argument("--phoenix", nargs="?", const="", default=None, metavar="URL",
                       help="upload the experiment to Phoenix (default: PHOENIX_COLLECTOR_ENDPOINT, else "
                            "http://localhost:6006) as a dataset of the rows and an experiment per variant, each "
                            "cell's run exported there too; needs arize-phoenix-client")


def otel_options(a: argparse.Namespace) -> dict[str, Any] | None:
    """The export's options the flags give (`OtelExport`'s keywords), or None when no export is asked for."""
    asked = getattr(a, "otel", True) or a.otel_no_content or a.otel_document_chars is not None
    if not asked:
        return None
    opts: dict[str, Any] = {}
    if a.otel_no_content:
        opts["content"] = False
    if a.otel_document_chars is not None:
        opts["document_chars"] = a.otel_document_chars
    return opts
