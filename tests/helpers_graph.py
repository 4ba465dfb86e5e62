"""The cycle finder the import-graph tests share (package level, config's modules, slate's modules)."""
from __future__ import annotations

from collections.abc import Collection, Mapping


def import_cycles(graph: Mapping[str, Collection[str]], allowed: Collection[tuple[str, str]] = ()) -> list[list[str]]:
    """Every cycle a depth-first walk of `graph` meets, each as a path whose first and last names are the same;
    edges in `allowed` (a deliberate lazy back-import) are not followed."""
    state: dict[str, int] = {}
    cycles: list[list[str]] = []

    def visit(mod: str, trail: list[str]) -> None:
        if state.get(mod) == 2:
            return
        if state.get(mod) == 1:
            cycles.append(trail[trail.index(mod):] + [mod])
            return
        state[mod] = 1
        for dep in sorted(graph.get(mod, ())):
            if (mod, dep) not in allowed:
                visit(dep, trail + [mod])
        state[mod] = 2

    for mod in sorted(graph):
        visit(mod, [])
    return cycles
