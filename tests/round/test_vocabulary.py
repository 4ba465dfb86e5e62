"""The round's vocabulary is defined once: no module of ladr_lab spells out the request modes, the entry
statuses or the forced-final line again (a copy drifts: lint once kept its own list of the modes)."""
from __future__ import annotations

import ast
from pathlib import Path

import ladr_lab
from ladr_lab.round import FORCED_FINAL_LINE, MODES, STATUSES
from ladr_lab.slate.metatags import FOLDER_LEVEL

PKG = Path(ladr_lab.__file__).parent
HOMES = {MODES: "round/vocabulary.py", STATUSES: "round/vocabulary.py", FOLDER_LEVEL: "slate/metatags.py"}


def _literals():
    for path in sorted(PKG.rglob("*.py")):
        rel = path.relative_to(PKG).as_posix()
        for node in ast.walk(ast.parse(path.read_text(), filename=rel)):
            if isinstance(node, (ast.Tuple, ast.List, ast.Set)) and all(
                    isinstance(e, ast.Constant) and isinstance(e.value, str) for e in node.elts):
                yield rel, node.lineno, tuple(e.value for e in node.elts)
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                yield rel, node.lineno, node.value


def test_each_vocabulary_is_spelled_out_in_its_home_only():
    copies = []
    for rel, line, value in _literals():
        if isinstance(value, tuple):
            for vocab, home in HOMES.items():
                if set(value) == set(vocab) and rel != home:
                    copies.append(f"{rel}:{line} repeats {home}'s {vocab}")
        elif value == FORCED_FINAL_LINE and rel != "round/prompt.py":
            copies.append(f"{rel}:{line} repeats round/prompt.py's FORCED_FINAL_LINE")
    assert copies == []


def test_lint_recognises_a_request_by_every_mode():
    from ladr_lab.analysis.lint_rules import prompt_examples
    for mode in MODES:
        assert prompt_examples(f'Ask like this: {{"{mode}": ["x"]}} and wait.') == [{mode: ["x"]}]
