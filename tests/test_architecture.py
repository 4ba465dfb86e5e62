"""The house rules that hold without anyone policing them: layers only look down, heavy imports stay lazy,
`__all__` is sorted and complete, every public name has a docstring."""
from __future__ import annotations

import ast
import importlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers_graph import import_cycles

PKG = Path(__file__).resolve().parents[1] / "ladr_lab"

# module (first component below ladr_lab) -> layer; a module may import only its own layer or lower ones
LAYERS = {
    "errors": 0, "cachedir": 0,
    "jsonx": 1, "slate": 1, "display": 1,
    "round": 2, "config": 2, "models": 2, "trace": 2,
    "engine": 3, "cost": 3, "runfiles": 3, "analysis": 3, "search": 3, "evaluation": 3, "experiments": 3,
    "otel": 3,
    "cli": 4, "widgets": 4, "server": 4, "magics": 4, "__init__": 4, "__main__": 4,
}
HEAVY = ("litellm", "pandas", "ipywidgets", "numpy", "jsonschema", "tantivy", "sentence_transformers", "torch", "llama_cpp",
         "ray", "mcp", "mcp_types", "opentelemetry")
HEAVY_ALLOWED = {"litellm": {"models"}, "llama_cpp": {"models"}, "ipywidgets": {"widgets"}, "jsonschema": {"round"},
                 "ray": {"experiments"}, "mcp": {"server"}, "mcp_types": {"server"}, "opentelemetry": {"otel"}}
# jsonschema's own packages, imported with it: routed through the same single owner
HEAVY_COMPANIONS = {"referencing": "jsonschema", "jsonschema_specifications": "jsonschema"}
# within a layer, packages that stand below their neighbours: what they may import of ladr_lab
BELOW_THEIR_LAYER = {"round": {"errors", "jsonx", "display", "slate"}}


def _modules():
    for path in sorted(PKG.rglob("*.py")):
        rel = path.relative_to(PKG)
        yield rel, ast.parse(path.read_text(), filename=str(path))


def _top(rel: Path) -> str:
    return rel.parts[0].removesuffix(".py")


def _imports(rel: Path, tree: ast.AST):
    """(imported ladr_lab top-level module or external package, is_module_level) for every import."""
    depth = len(rel.parts) - 1
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = list(rel.parts[:-1])[: max(0, depth - (node.level - 1))]
                parts = base + (node.module.split(".") if node.module else [])
                target = parts[0] if parts else None
                if target is None and node.names:
                    target = node.names[0].name
                yield ("ladr_lab", target), node
            elif node.module and node.module.split(".")[0] == "ladr_lab":
                parts = node.module.split(".")
                yield ("ladr_lab", parts[1] if len(parts) > 1 else node.names[0].name), node
            elif node.module:
                yield ("ext", node.module.split(".")[0]), node
        elif isinstance(node, ast.Import):
            for a in node.names:
                parts = a.name.split(".")
                yield (("ladr_lab", parts[1]) if parts[0] == "ladr_lab" and len(parts) > 1 else ("ext", parts[0])), node


def _module_level(tree: ast.Module) -> set[int]:
    ids = set()
    for stmt in tree.body:
        for node in ast.walk(stmt):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                break
        if isinstance(stmt, (ast.Import, ast.ImportFrom)):
            ids.add(id(stmt))
        elif isinstance(stmt, (ast.If, ast.Try)):
            for node in ast.walk(stmt):
                if isinstance(node, (ast.Import, ast.ImportFrom)):
                    ids.add(id(node))
    return ids


def test_layers_only_look_down():
    problems = []
    for rel, tree in _modules():
        me = _top(rel)
        assert me in LAYERS, f"{rel}: add its package to LAYERS"
        for (kind, target), node in _imports(rel, tree):
            if kind != "ladr_lab" or target == me or target is None:
                continue
            if target in LAYERS and LAYERS[target] > LAYERS[me]:
                problems.append(f"{rel}:{node.lineno} imports {target} (layer {LAYERS[target]}) from layer {LAYERS[me]}")
    assert problems == []


def _package_graph() -> dict[str, set[str]]:
    """ladr_lab package -> the ladr_lab packages it imports, module-level and lazy imports alike."""
    graph: dict[str, set[str]] = {}
    for rel, tree in _modules():
        me = _top(rel)
        for (kind, target), _node in _imports(rel, tree):
            if kind == "ladr_lab" and target and target != me and target in LAYERS:
                graph.setdefault(me, set()).add(target)
    return graph


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of the graph as a path (first == last), or None."""
    found = import_cycles(graph)
    return found[0] if found else None


def test_packages_import_each_other_only_one_way_round():
    """Packages of one layer may import each other, but only one way round: the package graph, lazy
    imports included, has no cycle (docs/ARCHITECTURE.md)."""
    assert _cycle(_package_graph()) is None, " -> ".join(_cycle(_package_graph()) or [])


def test_the_cycle_check_finds_a_cycle():
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": {"c"}, "d": {"a", "c"}}) is None


def test_evaluation_sits_above_its_layer_siblings():
    """evaluation drives the executor and re-judges with analysis; neither they nor any other package of its
    layer or below imports it back (even inside a function) — but experiments, which stands above it."""
    uses, problems = set(), []
    for rel, tree in _modules():
        me = _top(rel)
        for (kind, target), node in _imports(rel, tree):
            if kind == "ladr_lab" and me == "evaluation" and target != me:
                uses.add(target)
            if kind == "ladr_lab" and target == "evaluation" and me not in (target, "experiments") \
                    and LAYERS[me] <= LAYERS[target]:
                problems.append(f"{rel}:{node.lineno} imports evaluation")
    assert {"engine", "analysis"} <= uses
    assert problems == []


def test_experiments_sit_above_evaluation():
    """experiments run cells with evaluation's runner and re-judge with analysis; no package of layer 3 or below
    imports experiments (even inside a function)."""
    uses, problems = set(), []
    for rel, tree in _modules():
        me = _top(rel)
        for (kind, target), node in _imports(rel, tree):
            if kind == "ladr_lab" and me == "experiments" and target != me:
                uses.add(target)
            if kind == "ladr_lab" and target == "experiments" and me != target and LAYERS[me] <= LAYERS[target]:
                problems.append(f"{rel}:{node.lineno} imports experiments")
    assert {"evaluation", "analysis"} <= uses
    assert problems == []


def test_heavy_packages_are_imported_only_inside_functions_and_by_their_owner():
    problems = []
    for rel, tree in _modules():
        top_level = _module_level(tree)
        for (kind, target), node in _imports(rel, tree):
            if kind == "ext" and target in HEAVY_COMPANIONS:
                target = HEAVY_COMPANIONS[target]
            if kind == "ext" and target in HEAVY:
                if id(node) in top_level:
                    problems.append(f"{rel}:{node.lineno} imports {target} at module level")
                owners = HEAVY_ALLOWED.get(target)
                if owners is not None and _top(rel) not in owners:
                    problems.append(f"{rel}:{node.lineno} imports {target}; only {owners} may")
    assert problems == []


def test_a_package_below_its_layer_imports_only_the_floors_beneath():
    """`round` shares layer 2 with config, models and trace but stands below them: they import it, it
    imports none of them (nor anything above), so the import goes one way."""
    problems = []
    for rel, tree in _modules():
        me = _top(rel)
        allowed = BELOW_THEIR_LAYER.get(me)
        if allowed is None:
            continue
        for (kind, target), node in _imports(rel, tree):
            if kind == "ladr_lab" and target not in (me, None) and target not in allowed:
                problems.append(f"{rel}:{node.lineno} imports {target}; {me} may import only {sorted(allowed)}")
    assert problems == []


def test_jsonschema_has_one_importer_round():
    """Every import of jsonschema (and of referencing, jsonschema_specifications) in ladr_lab is in `round`."""
    importers = set()
    for rel, tree in _modules():
        for (kind, target), _node in _imports(rel, tree):
            if kind == "ext" and HEAVY_COMPANIONS.get(target, target) == "jsonschema":
                importers.add(_top(rel))
    assert importers == {"round"}


def test_otel_imports_only_trace_and_errors_and_only_engine_and_the_faces_import_it():
    """otel stands beside the engine at layer 3: it reads traces (trace, errors), and the engine (for
    `Run(otel=True)`) and layer 4 import it, never the other way round."""
    uses, importers = set(), set()
    for rel, tree in _modules():
        me = _top(rel)
        for (kind, target), _node in _imports(rel, tree):
            if kind == "ladr_lab" and me == "otel" and target != me:
                uses.add(target)
            if kind == "ladr_lab" and target == "otel" and me != "otel":
                importers.add(me)
    assert uses == {"trace", "errors"}
    assert importers and all(m == "engine" or LAYERS[m] == 4 for m in importers), importers


def test_import_ladr_lab_loads_no_heavy_package():
    code = f"import sys, ladr_lab; print(','.join(m for m in {HEAVY!r} if m in sys.modules))"
    env = dict(os.environ, LITELLM_LOCAL_MODEL_COST_MAP="True")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert out.stdout.strip() == ""


@pytest.mark.parametrize("name", ["ladr_lab", "ladr_lab.cli", "ladr_lab.config", "ladr_lab.engine", "ladr_lab.models", "ladr_lab.round",
                                  "ladr_lab.slate", "ladr_lab.runfiles", "ladr_lab.analysis", "ladr_lab.search",
                                  "ladr_lab.server", "ladr_lab.evaluation", "ladr_lab.trace", "ladr_lab.widgets", "ladr_lab.otel",
                                  "ladr_lab.display"])
def test_all_is_sorted_complete_and_documented(name):
    mod = importlib.import_module(name)
    names = list(mod.__all__)
    assert names == sorted(names), f"{name}.__all__ is not sorted"
    public = {k for k, v in vars(mod).items() if not k.startswith("_") and not isinstance(v, type(sys))
              and getattr(v, "__module__", "").startswith("ladr_lab")}
    assert public <= set(names), f"{name} exports {public - set(names)} without listing them"
    for n in names:
        obj = getattr(mod, n)
        if callable(obj):
            assert (obj.__doc__ or "").strip(), f"{name}.{n} has no docstring"


# packages every module of which lists its public names; a module waiting for a change of its own to land
ALL_PER_MODULE = ("engine", "slate", "cli")
ALL_PENDING = {"slate/globbing.py"}      # gets its __all__ with `match_glob`, which another change adds


def _per_module_names() -> list[str]:
    return [".".join(["ladr_lab", *path.relative_to(PKG).with_suffix("").parts])
            for pkg in ALL_PER_MODULE for path in sorted((PKG / pkg).glob("*.py"))
            if path.name != "__init__.py" and str(path.relative_to(PKG)) not in ALL_PENDING]


@pytest.mark.parametrize("name", _per_module_names())
def test_every_module_of_engine_slate_and_cli_has_a_sorted_complete_documented_all(name):
    """Each module's `__all__` is sorted, names only what the module has, lists every public class and function
    it defines, and every class and function it lists has a docstring."""
    import inspect

    mod = importlib.import_module(name)
    assert hasattr(mod, "__all__"), f"{name} has no __all__"
    names = list(mod.__all__)
    assert names == sorted(names), f"{name}.__all__ is not sorted"
    assert [n for n in names if not hasattr(mod, n)] == [], f"{name}.__all__ names what it does not have"
    own = {k for k, v in vars(mod).items() if not k.startswith("_") and (inspect.isclass(v) or inspect.isfunction(v))
           and v.__module__ == name}
    assert own <= set(names), f"{name} defines {sorted(own - set(names))} without listing them"
    for n in names:
        obj = getattr(mod, n)
        if inspect.isclass(obj) or inspect.isfunction(obj):
            assert (obj.__doc__ or "").strip(), f"{name}.{n} has no docstring"


def test_architecture_document_agrees_with_layers():
    """docs/ARCHITECTURE.md's layer table names the same packages at the same layers as LAYERS."""
    import re

    doc = (PKG.parent / "docs" / "ARCHITECTURE.md").read_text()
    table: dict[str, int] = {}
    for line in doc.splitlines():
        m = re.match(r"\|\s*(\d)\s*\|([^|]*)\|", line)
        if m:
            for name in re.findall(r"`([A-Za-z_]+)`", m.group(2)):
                table[name] = int(m.group(1))
    assert table == LAYERS


def _import_time_imports(body: list[ast.stmt]):
    """The import statements that run when the module is imported: not inside a function, nor under
    `if TYPE_CHECKING:` (its `else:` does run)."""
    for stmt in body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        if isinstance(stmt, (ast.Import, ast.ImportFrom)):
            yield stmt
            continue
        if isinstance(stmt, ast.If) and "TYPE_CHECKING" in ast.unparse(stmt.test):
            yield from _import_time_imports(stmt.orelse)
            continue
        for field in ("body", "orelse", "finalbody"):       # a class body, if/try/with/for blocks
            yield from _import_time_imports(getattr(stmt, field, None) or [])
        for clause in [*getattr(stmt, "handlers", []), *getattr(stmt, "cases", [])]:   # except:, case:
            yield from _import_time_imports(clause.body)


def _imported_modules(rel: Path, node: ast.Import | ast.ImportFrom) -> set[str]:
    """The dotted modules an import statement of module `rel` may load (`from . import html` loads `.html`)."""
    if isinstance(node, ast.Import):
        return {a.name for a in node.names}
    if node.level:
        parts = ["ladr_lab", *rel.parts[:-1]]
        base = parts[: len(parts) - (node.level - 1)]
    else:
        base = []
    module = ".".join([*base, *(node.module.split(".") if node.module else [])])
    return {module} | {f"{module}.{a.name}" for a in node.names}


def test_a_package_html_module_is_imported_by_its_siblings_only_inside_functions():
    """The view pattern (a model's `to_html()` imports its package's `html.py`, which imports the model back
    under TYPE_CHECKING) stays a lazy tie, never an import-time loop."""
    problems, lazy = [], 0
    for html_path in sorted(PKG.rglob("html.py")):
        package = ".".join(["ladr_lab", *html_path.parent.relative_to(PKG).parts])
        target = f"{package}.html"
        for path in sorted(html_path.parent.glob("*.py")):
            if path == html_path:
                continue
            rel = path.relative_to(PKG)
            tree = ast.parse(path.read_text(), filename=str(path))
            at_import = {id(n) for n in _import_time_imports(tree.body)}
            for node in ast.walk(tree):
                if isinstance(node, (ast.Import, ast.ImportFrom)) and target in _imported_modules(rel, node):
                    if id(node) in at_import:
                        problems.append(f"{rel}:{node.lineno} imports {target} at module level")
                    else:
                        lazy += 1
    assert problems == []
    assert lazy >= 5        # the engine's, trace's, config's, analysis's and slate's views are found


def test_one_import_style_inside_the_package():
    """Modules of ladr_lab import each other relatively (`from ..slate import Folder`), never by the absolute
    `ladr_lab.` name: one style, chosen once."""
    absolute = []
    for rel, tree in _modules():
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and not node.level and (node.module or "").split(".")[0] == "ladr_lab":
                absolute.append(f"{rel}:{node.lineno}")
            elif isinstance(node, ast.Import) and any(a.name.split(".")[0] == "ladr_lab" for a in node.names):
                absolute.append(f"{rel}:{node.lineno}")
    assert absolute == []
