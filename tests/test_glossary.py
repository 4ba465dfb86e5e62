"""Every "seed 00N" and "SPEC §N" that the code cites is named in docs/glossary.md, so a reader without
../shared can follow the reference."""
from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CITE = re.compile(r"\b(?:seeds? (?P<seed>00\d)(?: and (?P<seed2>00\d))?|SPEC §(?P<spec>\d+(?:\.\d+)?))")


def _cited() -> dict[str, set[str]]:
    cited: dict[str, set[str]] = {}
    for path in sorted((ROOT / "ladr_lab").rglob("*.py")):
        for m in CITE.finditer(path.read_text()):
            for name in (f"seed {m['seed']}" if m["seed"] else None, f"seed {m['seed2']}" if m["seed2"] else None,
                         f"SPEC §{m['spec']}" if m["spec"] else None):
                if name:
                    cited.setdefault(name, set()).add(str(path.relative_to(ROOT)))
    return cited


def _glossary_rows() -> set[str]:
    text = (ROOT / "docs" / "glossary.md").read_text()
    return {m.group(1) for m in re.finditer(r"^\| (seed 00\d|SPEC §\d+(?:\.\d+)?) \|", text, re.M)}


def test_the_code_cites_seeds_and_spec_sections():
    cited = _cited()
    assert {"seed 001", "seed 002", "seed 004", "SPEC §9"} <= set(cited), sorted(cited)


def test_every_cited_name_has_a_glossary_row():
    missing = {name: sorted(paths)[:3] for name, paths in _cited().items() if name not in _glossary_rows()}
    assert not missing, f"cited in the code but not in docs/glossary.md: {missing}"


def test_glossary_rows_name_real_sections():
    spec = ROOT.parent / "shared" / "SPEC.md"
    rows = {r for r in _glossary_rows() if r.startswith("SPEC")}
    assert rows, "docs/glossary.md lists no SPEC section"
    if spec.exists():
        headings = set(re.findall(r"^#{2,3} (\d+(?:\.\d+)?)[. ]", spec.read_text(), re.M))
        assert {r.removeprefix("SPEC §") for r in rows} <= headings
