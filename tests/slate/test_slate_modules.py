"""The slate package's modules import each other one way only, and FolderSpec has one home."""
from __future__ import annotations

import ast
from pathlib import Path

import ladr_lab.slate as slate_pkg
from tests.helpers_graph import import_cycles

PKG = Path(slate_pkg.__file__).resolve().parent


def _slate_imports() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for path in sorted(PKG.glob("*.py")):
        me = path.stem
        deps: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.ImportFrom) and node.module:
                parts = node.module.split(".")
                if parts[:2] == ["ladr_lab", "slate"] and len(parts) > 2:
                    deps.add(parts[2])
                elif node.level == 1 and parts[0] != me:
                    deps.add(parts[0])
        graph[me] = deps - {me}
    return graph


def test_slate_modules_form_no_cycle():
    graph = _slate_imports()
    graph.pop("__init__")
    assert import_cycles(graph) == []
    assert "store" not in graph["folder"]  # the old circle: folder needed FolderSpec from store
    # the atomic-write machinery is writing.py's: folder delegates to it, and it knows nothing of folder
    assert graph["writing"] == {"cache", "locks", "metatags", "paths", "vectors"}
    assert graph["folder"] - {"html"} == {"cache", "embed", "globbing", "locks", "metatags", "paths", "reading",
                                          "spec", "vectors", "watch", "writing"}


def test_folder_spec_lives_in_its_own_module():
    from ladr_lab.config.model import FolderSpec as from_config
    from ladr_lab.slate import FolderSpec
    from ladr_lab.slate.spec import FolderSpec as home

    assert FolderSpec is home is from_config
    assert FolderSpec.__module__ == "ladr_lab.slate.spec"
