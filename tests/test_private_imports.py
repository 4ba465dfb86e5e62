"""No module imports another package's private names: what crosses a package boundary is public (named without
an underscore, with a docstring) in its home. Inside one package, private helpers may be shared."""
from __future__ import annotations

import ast
from pathlib import Path

import ladr_lab

ROOT = Path(ladr_lab.__file__).resolve().parent


def _package(parts: tuple[str, ...]) -> str:
    """The top-level room of a module path under ladr_lab (a subpackage, or a top-level module)."""
    return parts[0] if parts else ""


def _crossings() -> list[str]:
    found = []
    for path in sorted(ROOT.rglob("*.py")):
        rel = path.relative_to(ROOT).with_suffix("").parts
        here, mine = rel[:-1], _package(rel)         # the package a relative import starts from; this room
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if not isinstance(node, ast.ImportFrom):
                continue
            if node.level:
                base = here[: len(here) - (node.level - 1)] if node.level > 1 else here
                target = base + tuple((node.module or "").split(".")) if node.module else base
            elif (node.module or "").startswith("ladr_lab."):
                target = tuple(node.module.split(".")[1:])
            else:
                continue
            target = tuple(p for p in target if p)
            if _package(target) == mine:
                continue
            names = [a.name for a in node.names if a.name.startswith("_") and not a.name.startswith("__")]
            modules = [p for p in target if p.startswith("_") and not p.startswith("__")]
            if names or modules:
                found.append(f"{'/'.join(rel)}.py: from {'.'.join(target)} import {', '.join(names) or '...'}")
    return found


def test_no_private_name_crosses_a_package_boundary():
    assert _crossings() == []
