"""SlateView: the paged file table with metatags, the filter, the preview, the tree opened level by level, and
a round's fetched files lit with their status."""
from __future__ import annotations

import pytest

pytest.importorskip("ipywidgets")

from ladr_lab.slate import SlateStore  # noqa: E402
from ladr_lab.trace import Write  # noqa: E402
from ladr_lab.widgets import SlateView  # noqa: E402
from tests.helpers_display import scripted_run, with_class  # noqa: E402


def _store(slates) -> SlateStore:
    store = SlateStore()
    for title, path in slates.items():
        store.bind(title, path)
    return store


def test_it_shows_a_folder_with_sizes_dates_and_metatags(slates):
    (slates["Knowledge"] / "docs" / ".metatags.json").write_text('{"core.md": {"tags": ["dedup", "<x>"]}}')
    sv = SlateView(_store(slates), slate="Knowledge", folder="docs")
    assert "ladr-slate-view" in sv.widget._dom_classes
    assert sv.folder.name == "docs" and "Knowledge / docs" in sv.header.value
    assert "core.md" in sv.table.value and "dedup" in sv.table.value and "&lt;x&gt;" in sv.table.value
    assert sv.slate_pick.options == ("Knowledge", "Memory") and "private" in sv.folder_pick.options


def test_filter_pages_and_preview(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    for i in range(130):
        (docs / f"file-{i:03d}.md").write_text(f"body {i} <b>bold</b>")
    (docs / "other.txt").write_text("x")
    sv = SlateView(tmp_path, page=50)
    assert "1–50 of 131" in sv.page_label.value and sv.table.value.count("<tr") == 51
    sv.next.click()
    assert "51–100 of 131" in sv.page_label.value
    sv.filter.value = "other"
    assert "1–1 of 1" in sv.page_label.value and sv.preview_pick.options == ("other.txt",)
    sv.filter.value = "file-12"
    sv.preview_pick.value = "file-120.md"
    assert "body 120 &lt;b&gt;bold&lt;/b&gt;" in sv.preview.value


def test_the_tree_opens_one_level_at_a_time(slates):
    sv = SlateView(_store(slates), slate="Knowledge", folder="docs")
    assert sv.tree.children == ()                          # not built until the Tree tab is shown
    sv.tabs.selected_index = 1
    dirs = with_class(sv.tree, "ladr-tree-dir")
    names = [d.children[0].children[1].value for d in dirs]
    assert any("notes/" in n for n in names)
    notes = dirs[[i for i, n in enumerate(names) if "notes/" in n][0]]
    assert len(notes.children) == 1                          # only its header until it opens
    notes.children[0].children[0].click()
    assert notes.children[1].children                       # the level below, built now


def test_light_shows_a_rounds_fetched_files_with_their_status(ladder, slates):
    run = scripted_run(ladder, slates)
    run.run()
    sv = SlateView(run)                                     # a Run: its store, its ladder
    assert sv.folder.name == "docs"                         # the folder the ladder retrieves from
    sv.light(run.trace, "research", 1, 1)
    assert sv.lit == {"core.md": "fetched", "missing.md": "not_found"}
    assert "not_found" in sv.lit_html.value and "missing.md" in sv.lit_html.value
    assert "fetched" in sv.table.value
    sv.light(run.trace, "research", 1, 2)
    assert sv.lit["core.md"] == "already_in_context" and sv.lit["faq.md"] == "fetched"
    sv.clear_light()
    assert sv.lit == {} and sv.lit_html.value == ""


def test_light_takes_whatever_trace_of_takes(ladder, slates, tmp_path):
    run = scripted_run(ladder, slates)
    run.run()
    path = tmp_path / "t.jsonl"
    run.trace.to_jsonl(path)
    for source in (run, run.trace, path, str(path), run.trace.to_dicts()):
        sv = SlateView(run)
        sv.light(source, "research", 1, 1)
        assert sv.lit == {"core.md": "fetched", "missing.md": "not_found"}, source


def test_a_write_shows_after_refresh(slates):
    store = _store(slates)
    sv = SlateView(store, slate="Memory", folder="facts")
    assert "notes.md" not in sv.table.value
    (slates["Memory"] / "facts" / "notes.md").write_text("new fact")
    sv.note_write(Write(step="s", node=1, mechanism="slateWrite", target="Memory/facts/notes.md", policy="append",
                        status="written", reason=""))
    assert "notes.md" in sv.table.value and sv.lit["notes.md"] == "written" and "written" in sv.message.value


def test_switching_folders(slates):
    sv = SlateView(_store(slates), slate="Knowledge", folder="docs")
    sv.slate_pick.value = "Memory"
    assert sv.folder.name in ("facts", "registry") and "Memory" in sv.header.value
    sv.show(folder="registry")
    assert sv.folder.name == "registry"


def test_it_refuses_what_it_cannot_show():
    with pytest.raises(TypeError, match="SlateView shows"):
        SlateView(42)


def test_lighting_turns_to_the_page_of_the_lit_files(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    for i in range(60):
        (docs / f"f{i:02d}.md").write_text("x")
    from ladr_lab.trace import Fetched, LlmCall
    call = LlmCall(step="s", node=1, round=1, iteration=1, messages=[], output="", forced_final=False,
                   request_match="retrieval", model="m",
                   fetched=(Fetched(path="f45.md", mode="files", status="fetched", chars=1),))
    sv = SlateView(tmp_path, page=20)
    sv.light(call)
    assert "41–60 of 60" in sv.page_label.value and "fetched" in sv.table.value


def test_a_file_fetched_and_listed_again_in_one_round_stays_fetched(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_text("x")
    from ladr_lab.trace import Fetched, LlmCall
    call = LlmCall(step="s", node=1, round=1, iteration=1, messages=[], output="", forced_final=False,
                   request_match="retrieval", model="m",
                   fetched=(Fetched(path="a.md", mode="files", status="fetched", chars=1),
                            Fetched(path="a.md", mode="glob", status="already_in_context", chars=0),
                            Fetched(path="b.md", mode="glob", status="already_in_context", chars=0),
                            Fetched(path="b.md", mode="files", status="fetched", chars=1)))
    sv = SlateView(tmp_path)
    sv.light(call)
    assert sv.lit == {"a.md": "fetched", "b.md": "fetched"}


def test_a_path_that_is_not_a_folder_is_refused_by_name(tmp_path):
    from ladr_lab.errors import SlateError
    missing = tmp_path / "does-not-exist"
    with pytest.raises(SlateError, match="does-not-exist.*not a directory"):
        SlateView(missing)
    afile = tmp_path / "f.md"
    afile.write_text("x")
    with pytest.raises(SlateError, match="f.md is a file"):
        SlateView(str(afile))


def test_the_header_counts_one_file_in_the_singular(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_text("x")
    assert "1 file," in SlateView(tmp_path).header.value


def test_the_header_shows_the_folder_relative_to_the_working_directory(tmp_path, monkeypatch):
    (tmp_path / "work" / "slate" / "docs").mkdir(parents=True)
    (tmp_path / "work" / "nb").mkdir()
    (tmp_path / "far" / "away").mkdir(parents=True)
    slate = tmp_path / "work" / "slate"
    monkeypatch.chdir(tmp_path / "work" / "nb")             # a notebook's folder beside the slate
    head = SlateView(slate).header.value
    assert "../slate/docs" in head and str(tmp_path) not in head
    monkeypatch.chdir(tmp_path / "far" / "away")             # far from it: the whole path
    assert str(slate / "docs") in SlateView(slate).header.value


def test_the_edit_box_sets_a_previewed_files_metatags_typed_and_checked(tmp_path):
    """issue 31: a teacher gives a file its summary and tags in SlateView, through the slate's checked writes."""
    import json

    from ladr_lab.slate import FolderSpec
    (tmp_path / "docs" / "recipes").mkdir(parents=True)
    (tmp_path / "docs" / "recipes" / "pancakes.md").write_text("# Pancakes")
    store = SlateStore()
    store.bind("Notes", tmp_path, [FolderSpec("docs", {"summary": "string", "tags": "string[]"})])
    sv = SlateView(store, slate="Notes", folder="docs")
    assert sv.editor.layout.display == "none"                    # nothing previewed, nothing to edit
    sv.preview_pick.value = "recipes/pancakes.md"
    assert sv.editor.layout.display is None and sv.tag_name.options == ("summary", "tags")
    sv.tag_name.value = "tags"
    sv.tag_value.value = "breakfast, recipe"
    sv.set_button.click()
    assert json.loads((tmp_path / "docs" / ".metatags.json").read_text()) == \
        {"recipes/pancakes.md": {"tags": ["breakfast", "recipe"]}}
    assert "breakfast" in sv.table.value and 'tags = ["breakfast", "recipe"]' in sv.edit_message.value.replace(
        "&quot;", '"')
    sv.tag_name.value = "summary"
    assert sv.tag_value.value == ""                              # the chosen metatag's value, none yet
    sv.tag_name.value = "tags"
    assert sv.tag_value.value == "breakfast, recipe"             # shown as it is typed
    assert not sv.set_metatag("sumary", "x")
    assert "did you mean &quot;summary&quot;" in sv.edit_message.value or 'did you mean "summary"' in \
        sv.edit_message.value
    sv.unset_button.click()
    assert json.loads((tmp_path / "docs" / ".metatags.json").read_text()) == {}
