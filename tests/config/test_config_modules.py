"""The config package's modules import each other one way only (module-level and lazy imports alike; imports
under `TYPE_CHECKING` do not run and are not counted)."""
from __future__ import annotations

import ast
from pathlib import Path

import ladr_lab.config as config_pkg
from tests.helpers_graph import import_cycles

PKG = Path(config_pkg.__file__).resolve().parent

# the view pattern: a model's `to_html()` imports its package's html.py inside the function, and html.py names the
# model back (under TYPE_CHECKING today); that lazy edge is allowed, and so is `Ladder.of(path)` importing the
# loader inside the classmethod (as `Trace.of` loads with `load_trace`); any other circle is not
ALLOWED = {("model", "html"), ("model", "loader")}


def _is_type_checking(node: ast.AST) -> bool:
    test = getattr(node, "test", None)
    return isinstance(node, ast.If) and (
        (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING")
        or (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"))


def _imports(tree: ast.AST, me: str) -> set[str]:
    deps: set[str] = set()
    stack = [tree]
    while stack:
        node = stack.pop()
        if _is_type_checking(node):
            stack.extend(node.orelse)          # only the `if TYPE_CHECKING:` body is skipped
            continue
        if isinstance(node, ast.ImportFrom):
            parts = (node.module or "").split(".") if node.module else []
            if node.level == 0 and parts[:2] == ["ladr_lab", "config"]:
                deps.add(parts[2] if len(parts) > 2 else "__init__")
            elif node.level == 1 and parts:
                deps.add(parts[0])
            elif node.level == 1:                      # from . import a, b
                deps.update(alias.name for alias in node.names)
            elif node.level == 2 and parts[:1] == ["config"]:
                deps.add(parts[1] if len(parts) > 1 else "__init__")
        elif isinstance(node, ast.Import):
            for alias in node.names:
                parts = alias.name.split(".")
                if parts[:2] == ["ladr_lab", "config"]:
                    deps.add(parts[2] if len(parts) > 2 else "__init__")
        stack.extend(ast.iter_child_nodes(node))
    return deps - {me}


def _config_imports() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for path in sorted(PKG.glob("*.py")):
        graph[path.stem] = _imports(ast.parse(path.read_text(), filename=str(path)), path.stem)
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    return import_cycles(graph, ALLOWED)


def test_config_modules_form_no_cycle():
    graph = _config_imports()
    assert "__init__" not in set().union(*(deps for mod, deps in graph.items() if mod != "__init__"))
    graph.pop("__init__")
    assert _cycles(graph) == []
    assert "steps" not in graph["shape"]          # the old knot: shape.new_doc needed steps.step_scopes


def test_the_graph_sees_lazy_imports_and_skips_type_checking_ones():
    tree = ast.parse("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .a import x\n"
                     "def f():\n    from .b import y\nfrom . import c, d\n")
    assert _imports(tree, "me") == {"b", "c", "d"}
    assert _cycles({"a": {"b"}, "b": {"a"}}) == [["a", "b", "a"]]
    assert _cycles({"model": {"html"}, "html": {"model"}}) == []


def test_new_doc_builds_the_walkers_doc_with_step_scopes():
    from ladr_lab.config.walker import new_doc

    doc = new_doc({"name": "x", "steps": [{"id": "a", "prompt": "hi"}]}, None, None, {})
    assert doc.data["name"] == "x" and doc.runtime_knobs == {}
    assert list(doc.steps) == ["a"] and doc.scopes[("steps", 0)].id == "a"     # step scopes worked out
