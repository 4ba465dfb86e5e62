"""errors.py's docstring draws every exception class of ladr_lab: each one a user can meet sits in the tree
under its real base, in the module the tree names, and is reachable as `ladr_lab.<Name>`; the others are
allow-listed here with the reason a user never meets them."""
from __future__ import annotations

import ast
import builtins
import importlib
import re
from pathlib import Path

import ladr_lab
from ladr_lab import errors
from ladr_lab.errors import LadrError

PKG = Path(ladr_lab.__file__).resolve().parent

# defined under ladr_lab, but never reaching a user: name -> why
INTERNAL = {
    "Abort": "engine control flow: Run catches it, and the run ends with status 'aborted'",
    "PatternTimeout": "caught in round.validators: a slow pattern is taken as not matching",
    "UnresolvableRef": "caught in config.schemas: reported as the config rule schema-ref",
    "_Skip": "caught in engine.writes: the write is recorded as skipped",
    "_NoSuchMethod": "caught in server.protocol: answered as a JSON-RPC error",
    "ResourceRefused": "caught in server.mcp_server: answered as a JSON-RPC error (invalid params)",
    "ResourceMissing": "caught in server.mcp_server: answered as a JSON-RPC error (resource not found)",
    "OutputClosed": "caught by the CLI's main: a closed pipe ends it quietly",
    "TranslationError": "raised by runfiles.rules.refresh when an upstream gitleaks rule uses RE2 syntax the "
                        "translation does not know, so a refresh fails before the rules ship; the vendored rules "
                        "all translate (tests/runfiles/test_masking_rules.py)",
}

_LINE = re.compile(r"^ {4}(?P<tree>[│├└─ ]*)(?P<name>[A-Z_]\w*)(?: \(also (?P<also>\w+)\))?"
                   r"(?: \[(?P<module>[\w/]+)\.py\])?(?:\s|$)")


def _exception_classes() -> dict[str, str]:
    """name -> dotted module of every class under ladr_lab that derives (by name) from an exception."""
    classes: list[tuple[str, str, set[str]]] = []
    for path in sorted(PKG.rglob("*.py")):
        module = ".".join(("ladr_lab", *path.relative_to(PKG).with_suffix("").parts)).removesuffix(".__init__")
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef):
                names = {b.attr if isinstance(b, ast.Attribute) else getattr(b, "id", "") for b in node.bases}
                classes.append((node.name, module, names))
    exceptions = {n for n, v in vars(builtins).items()    # a Warning (trace.ListenerWarning) is not an error
                  if isinstance(v, type) and issubclass(v, BaseException) and not issubclass(v, Warning)}
    found: dict[str, str] = {}
    while more := [(n, m) for n, m, bases in classes if (n, m) not in found.items() and bases & exceptions]:
        for name, module in more:
            assert name not in found, f"two exception classes named {name}: the tree could not tell them apart"
            found[name] = module
            exceptions.add(name)
    return found


def _tree() -> dict[str, dict]:
    """name -> {parent, also, module} as errors.py's docstring draws it."""
    drawn: dict[str, dict] = {}
    stack: list[tuple[int, str]] = []
    for line in (errors.__doc__ or "").splitlines():
        m = _LINE.match(line)
        if not m or (not m["tree"] and m["name"] != "LadrError"):
            continue
        column = len(m["tree"])
        while stack and stack[-1][0] >= column:
            stack.pop()
        module = "ladr_lab." + m["module"].replace("/", ".") if m["module"] else "ladr_lab.errors"
        drawn[m["name"]] = {"parent": stack[-1][1] if stack else None, "also": m["also"], "module": module}
        stack.append((column, m["name"]))
    return drawn


def test_the_walk_finds_the_exception_classes():
    found = _exception_classes()
    assert {"LadrError", "SearchError", "SnapshotGone", "RetrieveError", "ReplayDivergence", "Abort",
            "PatternTimeout", "OutputClosed"} <= set(found)
    assert found["SnapshotGone"] == "ladr_lab.search.errors"


def test_every_ladr_error_is_drawn_under_its_real_base_in_its_module():
    found = _exception_classes()
    drawn = _tree()
    ours = {n: m for n, m in found.items() if issubclass(getattr(importlib.import_module(m), n), LadrError)}
    assert set(drawn) == set(ours)
    for name, where in drawn.items():
        cls = getattr(importlib.import_module(where["module"]), name)
        assert cls.__module__ == where["module"] == ours[name], name
        first, *others = cls.__bases__
        assert (first.__name__ if name != "LadrError" else None) == where["parent"], name
        assert [b.__name__ for b in others] == ([where["also"]] if where["also"] else []), name


def test_every_error_a_user_can_meet_is_reachable_from_the_top():
    for name in _tree():
        if name in INTERNAL:
            assert name not in ladr_lab.__all__ and not hasattr(ladr_lab, name), name
            continue
        assert name in ladr_lab.__all__, f"ladr_lab.__all__ lacks {name}"
        module = importlib.import_module(_tree()[name]["module"])
        assert getattr(ladr_lab, name) is getattr(module, name)


def test_the_exceptions_that_are_not_ladr_errors_are_internal_and_said_so():
    found = _exception_classes()
    outside = {n for n, m in found.items() if not issubclass(getattr(importlib.import_module(m), n), LadrError)}
    assert outside == set(INTERNAL) - {"Abort"}
    for name in INTERNAL:
        assert name in errors.__doc__, f"errors.py's docstring does not say why {name} is internal"
    assert issubclass(importlib.import_module("ladr_lab.engine.steps").Abort, ladr_lab.RunError)


def test_a_search_error_is_caught_as_a_ladr_error_from_the_top():
    try:
        raise ladr_lab.SnapshotGone("gone", {"indexVersion": 3})
    except ladr_lab.SearchError as exc:
        assert isinstance(exc, ladr_lab.LadrError) and exc.data == {"indexVersion": 3}
