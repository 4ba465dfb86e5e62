"""`ladr-lab slate show | set`: metatags set without Python, typed by the ladder, through the slate's own writes."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from ladr_lab.cli import main

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def notes(tmp_path):
    """A copy of the sample knowledge slate and research_small.yaml bound to it (summary: string, tags: string[])."""
    shutil.copytree(ROOT / "sample_slates" / "knowledge", tmp_path / "knowledge")
    text = (ROOT / "examples" / "research_small.yaml").read_text(encoding="utf-8")
    lad = tmp_path / "l.yaml"
    lad.write_text(text.replace("path: ../sample_slates/knowledge", f"path: {tmp_path / 'knowledge'}"),
                   encoding="utf-8")
    return lad, tmp_path / "knowledge" / "docs"


def sidecar(docs: Path) -> dict:
    return json.loads((docs / ".metatags.json").read_text(encoding="utf-8"))


def test_set_types_values_by_the_ladder_and_writes_the_sidecar(notes, capsys):
    lad, docs = notes
    assert main(["slate", "set", str(lad), "Knowledge/docs/retrieve/dedup.md", "summary=How dedup works",
                 "tags=dedup, rounds"]) == 0
    out = capsys.readouterr().out
    assert 'Knowledge/docs/retrieve/dedup.md: tags = ["dedup", "rounds"]' in out
    assert sidecar(docs)["retrieve/dedup.md"]["summary"] == "How dedup works"
    assert sidecar(docs)["retrieve/dedup.md"]["tags"] == ["dedup", "rounds"]
    assert main(["slate", "set", str(lad), "Knowledge/docs/retrieve/dedup.md", "--unset", "summary", "--json"]) == 0
    assert "summary" not in json.loads(capsys.readouterr().out)["metatags"]
    assert "summary" not in sidecar(docs)["retrieve/dedup.md"]
    assert (docs / ".ladr" / ".gitignore").is_file()


@pytest.mark.parametrize("args, message", [
    (["Knowledge/docs/retrieve/dedup.md", "sumary=x"], 'did you mean "summary"'),
    (["Knowledge/docs/retrieve/dedup.md", "tags=[1]"], "is not a JSON array of strings"),
    (["Knowledge/docs/nowhere.md", "summary=x"], 'no file "nowhere.md"'),
    (["Knowlege/docs/a.md", "summary=x"], 'declares no slate "Knowlege" (did you mean "Knowledge"?)'),
    (["Knowledge/nope/a.md", "summary=x"], "declares no folder"),
])
def test_what_cannot_be_set_is_said_and_nothing_is_written(notes, capsys, args, message):
    lad, docs = notes
    before = (docs / ".metatags.json").read_bytes()
    assert main(["slate", "set", str(lad), *args]) == 1
    assert message in capsys.readouterr().err
    assert (docs / ".metatags.json").read_bytes() == before


def test_usage_errors_exit_2(notes, capsys):
    lad, _ = notes
    with pytest.raises(SystemExit) as e:
        main(["slate", "set", str(lad), "Knowledge/docs/retrieve/dedup.md"])
    assert e.value.code == 2 and "NAME=VALUE" in capsys.readouterr().err
    with pytest.raises(SystemExit) as e:
        main(["slate", "set", str(lad), "Knowledge/docs/retrieve/dedup.md", "novalue"])
    assert e.value.code == 2


def test_show_prints_the_declared_metatags_and_each_files_values(notes, capsys):
    lad, _ = notes
    assert main(["slate", "show", str(lad), "Knowledge/docs/retrieve/dedup.md"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("Knowledge/docs declares: tags: string[], summary: string") and "retrieve/dedup.md" in out
    assert main(["slate", "show", str(lad), "Knowledge/docs", "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["declared"] == {"tags": "string[]", "summary": "string"} and "retrieve/dedup.md" in got["files"]


def test_a_folder_no_ladder_declares_takes_any_name_with_dir(tmp_path, capsys):
    (tmp_path / "notes" / "recipes").mkdir(parents=True)
    (tmp_path / "notes" / "recipes" / "pancakes.md").write_text("# Pancakes")
    assert main(["slate", "set", "--dir", str(tmp_path), "notes/recipes/pancakes.md", "summary=How to make pancakes",
                 "servings=4"]) == 0
    assert json.loads((tmp_path / "notes" / ".metatags.json").read_text()) == \
        {"recipes/pancakes.md": {"summary": "How to make pancakes", "servings": 4}}
