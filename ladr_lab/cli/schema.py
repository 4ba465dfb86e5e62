"""`ladr-lab schema [--experiment] [--out FILE]`: the JSON Schema of the ladder format, or of the experiment file,
for editors and check-jsonschema."""
from __future__ import annotations

from pathlib import Path

__all__ = ["add_parser", "cmd_schema"]


def cmd_schema(a) -> int:
    """Print the ladder JSON Schema (the experiment file's with --experiment), or write it to --out."""
    if a.experiment:
        from ..experiments.file_schema import to_schema_text
    else:
        from ..config.jsonschema import to_schema_text
    text = to_schema_text()
    if a.out:
        Path(a.out).write_text(text, encoding="utf-8")
    else:
        print(text, end="")
    return 0


def add_parser(sub) -> None:
    """Register `schema`."""
    s = sub.add_parser("schema", help="print the JSON Schema of the ladder format, or of the experiment file "
                                      "(for editors' YAML support)")
    s.add_argument("--experiment", action="store_true",
                   help="the experiment file's schema (ladr-lab eval EXPERIMENT.yaml), not the ladder's")
    s.add_argument("--out", metavar="FILE", help="write it to FILE instead of printing it")
    s.set_defaults(fn=cmd_schema)
