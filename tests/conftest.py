"""Shared fixtures: a copy of the small knowledge slate and a ladder builder."""
from __future__ import annotations

import shutil
import textwrap
from pathlib import Path

import pytest

from ladr_lab.config import load_ladder_text

FIXTURES = Path(__file__).parent / "fixtures"

SLATES_YAML = """\
slates:
  - title: Knowledge
    folders:
      - name: docs
        metatags: { tags: "string[]", priority: number, summary: string }
        files:
          - name: core.md
      - name: private
  - title: Memory
    folders:
      - name: facts
        metatags: { summary: string, tags: "string[]", score: number }
        files:
          - name: core.md
      - name: registry
        files:
          - name: entities.md
            metatags: { items: object }
"""

FULL_REQUEST = {
    "type": "object", "required": ["request"], "additionalProperties": False,
    "properties": {"request": {"type": "object", "additionalProperties": False, "properties": {
        "files": {"type": "array", "items": {"type": "string"}},
        "subfolders": {"type": "array", "items": {"type": "string"}},
        "metatag": {"type": "object", "properties": {"name": {"type": "string"}, "contains": {"type": "string"},
                                                      "similarTo": {"type": "string"}}},
        "glob": {"type": "string"}}}, "topK": {"type": "integer"}},
}


@pytest.fixture(autouse=True, scope="session")
def _no_cache_in_home(tmp_path_factory):
    """`ladr-lab search` caches its index per user: in tests, in a temporary folder, never the real home."""
    import os

    old = os.environ.get("LADR_LAB_CACHE_DIR")
    os.environ["LADR_LAB_CACHE_DIR"] = str(tmp_path_factory.mktemp("ladr_lab_cache"))
    yield
    if old is None:
        os.environ.pop("LADR_LAB_CACHE_DIR", None)
    else:  # pragma: no cover - a cache folder set around the test run
        os.environ["LADR_LAB_CACHE_DIR"] = old


@pytest.fixture
def slates(tmp_path: Path) -> dict[str, Path]:
    """Fresh, writable copies of the Knowledge and Memory slates."""
    know = tmp_path / "Knowledge"
    shutil.copytree(FIXTURES / "knowledge", know)
    mem = tmp_path / "Memory"
    (mem / "facts").mkdir(parents=True)
    (mem / "facts" / "core.md").write_text("Seed fact.")
    (mem / "registry").mkdir()
    return {"Knowledge": know, "Memory": mem}


@pytest.fixture
def ladder():
    """Build a ladder from a steps: YAML snippet (the slates above are declared)."""
    def build(steps: str, head: str = "name: t\n", **kw):
        text = head + SLATES_YAML + "steps:\n" + textwrap.indent(textwrap.dedent(steps).strip("\n") + "\n", "  ")
        return load_ladder_text(text, **kw)
    return build


@pytest.fixture(autouse=True)
def _own_response_cache(tmp_path_factory, monkeypatch):
    """Each test its own response cache (models/cache.py), never the user's nor another test's: a cached answer of
    one test would otherwise answer the same request in another (subprocesses inherit the variable)."""
    monkeypatch.setenv("LADR_LAB_RESPONSE_CACHE", str(tmp_path_factory.mktemp("responses")))
