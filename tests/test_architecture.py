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

# module (first component below ladr_lab) -> layer; a module imports only from strictly lower layers (and its own
# package): the floors the code really has, so no package needs an exception (docs/ARCHITECTURE.md)
LAYERS = {
    "errors": 0, "cachedir": 0, "jsonx": 0, "display": 0,
    "slate": 1, "round": 1,
    "config": 2, "trace": 2,
    "models": 3, "runfiles": 3, "otel": 3, "cost": 3,
    "search": 4,
    "engine": 5, "server": 5,
    "analysis": 6,
    "experiments": 7,
    "cli": 8, "widgets": 8, "magics": 8, "evaluation": 8,      # evaluation: a deprecated alias of experiments' names
    "__init__": 9, "__main__": 9,
}
HEAVY = ("litellm", "pandas", "ipywidgets", "numpy", "jsonschema", "tantivy", "sentence_transformers", "torch", "llama_cpp",
         "ray", "mcp", "mcp_types", "opentelemetry", "phoenix")
HEAVY_ALLOWED = {"litellm": {"models"}, "llama_cpp": {"models"}, "ipywidgets": {"widgets"}, "jsonschema": {"round"},
                 "ray": {"experiments"}, "mcp": {"server"}, "mcp_types": {"server"}, "opentelemetry": {"otel"},
                 "phoenix": {"experiments"}}
# jsonschema's own packages, imported with it: routed through the same single owner
HEAVY_COMPANIONS = {"referencing": "jsonschema", "jsonschema_specifications": "jsonschema"}


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
                if parts[0] == "ladr_lab":
                    yield ("ladr_lab", parts[1] if len(parts) > 1 else "__init__"), node
                else:
                    yield ("ext", parts[0]), node


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


def _upward(modules) -> list[str]:
    """Every import of a package at the importer's layer or above (its own package aside), as `file:line` text."""
    problems = []
    for rel, tree in modules:
        me = _top(rel)
        assert me in LAYERS, f"{rel}: add its package to LAYERS"
        for (kind, target), node in _imports(rel, tree):
            if kind != "ladr_lab" or target == me or target is None:
                continue
            if target not in LAYERS:      # a name the package root re-exports (`from .. import evaluate`)
                target = "__init__"
            if LAYERS[target] >= LAYERS[me]:
                problems.append(f"{rel}:{node.lineno} imports {target} (layer {LAYERS[target]}) from layer {LAYERS[me]}")
    return problems


def test_layers_only_look_down():
    """A package imports only from strictly lower layers, module-level and lazy imports alike."""
    assert _upward(_modules()) == []


def test_the_layer_check_finds_an_upward_and_a_sideways_import():
    """The check itself: an import of a higher layer, and one of a package on the same layer, are both found."""
    up = ast.parse("from ..experiments import experiment\n")
    side = ast.parse("def f():\n    from ..server import serve\n")
    root = ast.parse("from .. import evaluate\nimport ladr_lab\n")
    down = ast.parse("from ..slate import Folder\nfrom . import html\nfrom .. import errors\n")
    found = _upward([(Path("engine/x.py"), up), (Path("engine/y.py"), side), (Path("engine/r.py"), root),
                     (Path("engine/z.py"), down)])
    assert found == ["engine/x.py:1 imports experiments (layer 7) from layer 5",
                     "engine/y.py:2 imports server (layer 5) from layer 5",
                     "engine/r.py:1 imports __init__ (layer 9) from layer 5",
                     "engine/r.py:2 imports __init__ (layer 9) from layer 5"]


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
    """The package graph, lazy imports included, has no cycle (docs/ARCHITECTURE.md): what the strict layers
    already give, checked on its own so a cycle is named as one."""
    assert _cycle(_package_graph()) is None, " -> ".join(_cycle(_package_graph()) or [])


def test_the_cycle_check_finds_a_cycle():
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": {"c"}, "d": {"a", "c"}}) is None


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


def test_jsonschema_has_one_importer_round():
    """Every import of jsonschema (and of referencing, jsonschema_specifications) in ladr_lab is in `round`."""
    importers = set()
    for rel, tree in _modules():
        for (kind, target), _node in _imports(rel, tree):
            if kind == "ext" and HEAVY_COMPANIONS.get(target, target) == "jsonschema":
                importers.add(_top(rel))
    assert importers == {"round"}


def test_import_ladr_lab_loads_no_heavy_package():
    code = f"import sys, ladr_lab; print(','.join(m for m in {HEAVY!r} if m in sys.modules))"
    env = dict(os.environ, LITELLM_LOCAL_MODEL_COST_MAP="True")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert out.stdout.strip() == ""


@pytest.mark.parametrize("name", ["ladr_lab", "ladr_lab.cli", "ladr_lab.config", "ladr_lab.engine", "ladr_lab.models", "ladr_lab.round",
                                  "ladr_lab.slate", "ladr_lab.runfiles", "ladr_lab.analysis", "ladr_lab.search",
                                  "ladr_lab.server", "ladr_lab.experiments", "ladr_lab.trace", "ladr_lab.widgets", "ladr_lab.otel",
                                  "ladr_lab.display"])
def test_all_is_sorted_complete_and_documented(name):
    mod = importlib.import_module(name)
    names = list(mod.__all__)
    assert names == sorted(names), f"{name}.__all__ is not sorted"
    public = {k for k, v in vars(mod).items() if not k.startswith("_") and not isinstance(v, type(sys))
              and getattr(v, "__module__", "").startswith("ladr_lab")}
    assert public <= set(names), f"{name} exports {public - set(names)} without listing them"
    assert set(names) <= set(dir(mod)), f"{name}.__all__ lists {set(names) - set(dir(mod))}, which it lacks"
    for n in names:
        obj = getattr(mod, n)
        if callable(obj):
            assert (obj.__doc__ or "").strip(), f"{name}.{n} has no docstring"


# packages each of whose modules (not only the package's face) has a sorted, complete and documented __all__
MODULE_ALL_PACKAGES = ("cli", "engine", "search", "server", "slate")
# deprecated aliases: importable by their old names (for old callers), listed in no __all__
DEPRECATED_ALIASES = {"ladr_lab.server.limits": {"Limits"}, "ladr_lab.search.request": {"MODES"},
                      "ladr_lab.server.http": {"DISCARD_FACTOR", "Limits", "PATHS", "host_name"}}


def _module_names() -> list[str]:
    return [f"ladr_lab.{package}.{path.stem}" for package in MODULE_ALL_PACKAGES
            for path in sorted((PKG / package).glob("*.py")) if path.name != "__init__.py"]


def _defined_names(tree: ast.Module) -> set[str]:
    """The public names a module binds at its top level (def, class, assignment)."""
    names: set[str] = set()
    for stmt in tree.body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(stmt.name)
        elif isinstance(stmt, (ast.Assign, ast.AnnAssign)):
            for target in stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]:
                if isinstance(target, ast.Name):
                    names.add(target.id)
    return {n for n in names if not n.startswith("_")}


def _names_imported_from_modules() -> dict[str, set[str]]:
    """dotted module -> the public names that ladr_lab, the tests and the benchmarks import from it by name."""
    root = PKG.parent
    found: dict[str, set[str]] = {}
    for folder in (PKG, root / "tests", root / "benchmarks"):
        for path in sorted(folder.rglob("*.py")):
            parts = path.relative_to(root).with_suffix("").parts
            for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
                if not isinstance(node, ast.ImportFrom):
                    continue
                if node.level:
                    base = list(parts[:-1])[: len(parts) - node.level]
                    module = ".".join([*base, *(node.module.split(".") if node.module else [])])
                else:
                    module = node.module or ""
                found.setdefault(module, set()).update(a.name for a in node.names if not a.name.startswith("_"))
    return found


@pytest.mark.parametrize("name", _module_names())
def test_every_module_of_the_listed_packages_has_a_sorted_complete_documented_all(name):
    """Complete: every public name the module defines, and every public name another module (or a test)
    imports from it, is in its __all__ (a deprecated alias only stays importable)."""
    import inspect

    mod = importlib.import_module(name)
    names = list(getattr(mod, "__all__", None) or [])
    assert names, f"{name} has no __all__"
    assert names == sorted(names), f"{name}.__all__ is not sorted"
    assert len(set(names)) == len(names), f"{name}.__all__ lists a name twice"
    missing = [n for n in names if not hasattr(mod, n)]
    assert not missing, f"{name}.__all__ lists {missing}, which it does not have"
    tree = ast.parse(Path(mod.__file__).read_text())
    aliases = DEPRECATED_ALIASES.get(name, set())
    wanted = (_defined_names(tree) | _names_imported_from_modules().get(name, set())) - aliases
    assert wanted <= set(names), f"{name} has public names its __all__ does not list: {sorted(wanted - set(names))}"
    assert not aliases & set(names), f"{name}.__all__ lists a deprecated alias"
    for n in names:
        obj = getattr(mod, n)
        if inspect.isclass(obj) or inspect.isroutine(obj):
            assert (obj.__doc__ or "").strip(), f"{name}.{n} has no docstring"


def test_the_old_evaluation_package_is_an_alias_that_warns():
    import ladr_lab
    from ladr_lab import evaluation, experiments

    for name in evaluation.__all__:
        with pytest.warns(DeprecationWarning, match=f"ladr_lab.experiments.{name}"):
            assert getattr(evaluation, name) is getattr(experiments, name) is getattr(ladr_lab, name)
    with pytest.raises(AttributeError):
        evaluation.batch  # noqa: B018


def test_a_deprecated_alias_is_the_renamed_thing():
    from ladr_lab.search import request
    from ladr_lab.server import asgi, http, limits, serving

    assert limits.Limits is limits.HttpLimits and request.MODES is request.SEARCH_MODES
    assert (http.Limits, http.PATHS, http.DISCARD_FACTOR, http.host_name) == \
        (limits.HttpLimits, asgi.PATHS, asgi.DISCARD_FACTOR, serving.host_name)
    with pytest.warns(DeprecationWarning, match="HttpLimits"):
        from ladr_lab.server import Limits
    assert Limits is limits.HttpLimits


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
