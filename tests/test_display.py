"""The display protocol: every object a notebook shows has a readable static view (text/plain and text/html),
text is escaped, reprs are compact, views are bounded, and showing a run never advances it."""
from __future__ import annotations

import html
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

import ladr_lab
from ladr_lab.display import Displayable, Html, badge, clip, details, esc, pre, render, table, tag
from ladr_lab.engine import Run
from ladr_lab.models import ScriptedModel
from ladr_lab.slate import SlateStore
from tests.helpers_display import big_trace, scripted_run


def _bundle(obj) -> dict:
    data = obj._repr_mimebundle_()
    assert set(data) >= {"text/plain", "text/html"}
    return data


def _visible_text(h: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", "", h))


# ---- the helpers ------------------------------------------------------------------------------------------
@given(st.text())
def test_tag_escapes_any_text_and_keeps_it(text):
    out = tag("div", text)
    assert "<" not in out[5:-6] and ">" not in out[5:-6]
    assert html.unescape(out[5:-6]) == text


@given(st.text(), st.integers(min_value=0, max_value=50))
def test_clip_keeps_a_prefix_and_counts_the_rest(text, n):
    shown, more = clip(text, n)
    assert text.startswith(shown) and len(shown) + more == len(text) and len(shown) <= n


def test_html_passes_through_and_attributes_are_escaped():
    assert tag("p", Html("<b>x</b>")) == "<p><b>x</b></p>"
    assert tag("a", "t", title='say "hi" <now>', data_x="1") == \
        '<a title="say &quot;hi&quot; &lt;now&gt;" data-x="1">t</a>'
    assert esc(None) == "" and isinstance(esc("x"), Html)


def test_pre_cuts_long_text_and_says_how_much_is_left():
    out = pre("a" * 10_000, 100)
    assert out.count("a") < 200 and "9,900 more characters" in out


def test_details_table_and_badge_render_readable_html():
    t = table(["a", "b"], [["<1>", Html("<i>2</i>")]])
    assert "&lt;1&gt;" in t and "<i>2</i>" in t
    assert "<details" in details("head", "body") and "open" in details("h", "b", open=True)
    assert "fetched" in badge("fetched") and "#1a7f37" in badge("fetched")


def test_the_mixin_gives_a_mimebundle_and_render_reads_it():
    class Thing(Displayable):
        def to_html(self):
            return "<b>thing</b>"

    data = _bundle(Thing())
    assert data["text/html"] == "<b>thing</b>" and data["text/plain"].startswith("<")
    thing = Thing()
    assert render(thing) == "<b>thing</b>" and render(thing, "text/plain") == repr(thing)


# ---- every object of the issue displays ---------------------------------------------------------------------
def test_a_run_displays_before_during_and_after_without_being_advanced(ladder, slates):
    run = scripted_run(ladder, slates)
    data = _bundle(run)
    assert "0x" not in data["text/plain"] and "Not started" in data["text/html"]
    assert not run._started and run.trace.events == []          # showing it did not start it
    first = run.pending[0]
    during = _bundle(run)
    assert "next:" in _visible_text(during["text/html"]) and "Question" in during["text/html"]
    assert "research node 1 round 1" in repr(run)
    run.run()
    done = _bundle(run)["text/html"]
    assert "completed" in done and "rounds so far" in done and "output" in done
    assert "\\n" not in _bundle(run)["text/plain"]      # real line breaks, never a screen of escaped \n
    assert first.step == "research"


def test_a_pending_call_shows_its_prompt_section_by_section(ladder, slates):
    run = scripted_run(ladder, slates)
    req = run.pending[0]
    data = _bundle(req)
    assert repr(req).startswith("<CallRequest #") and "0x" not in repr(req)
    assert [s.name for s in req.prompt_sections()] == ["systemPrompt", "Question"]
    assert "Question" in data["text/html"] and "requestMatch" in data["text/html"]
    assert "How &lt;b&gt;dedup&lt;/b&gt;?" in data["text/html"]          # the input is escaped, not markup
    assert "── field Question" in data["text/plain"]


def test_step_returns_events_that_display_compactly(ladder, slates):
    run = scripted_run(ladder, slates)
    events = run.step()
    assert isinstance(events, ladr_lab.trace.Events) and isinstance(events, list)
    r = repr(events)
    assert r.startswith("Events([") and "LlmCall(#" in r and "research · node 1 · round 1 → retrieval" in r
    data = _bundle(events)
    assert "research · node 1 · round 1" in data["text/plain"] and "not_found" in data["text/plain"]
    assert "ladr-round" in data["text/html"] and "missing.md" in data["text/html"]


def test_event_reprs_are_compact_even_with_huge_prompts():
    t = big_trace(rounds=100, huge_every=1, huge_chars=400_000)
    call = t.calls()[0]
    assert len(repr(call)) < 300 and "LlmCall(#" in repr(call) and "prompt" in repr(call)
    for e in t.events:
        assert len(repr(e)) < 400 and "0x" not in repr(e)


def test_a_script_in_a_prompt_or_output_renders_as_text(ladder, slates):
    run = scripted_run(ladder, slates)
    run.run()
    for obj in (run, run.trace, run.trace.calls()[-1], run.result, ladr_lab.trace.Events(run.trace.events)):
        h = _bundle(obj)["text/html"]
        assert "<script>" not in h
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in run.trace.to_html()
    assert "<b>dedup</b>" not in run.trace.to_html()


def test_the_trace_view_says_what_the_round_printer_says(ladder, slates):
    run = scripted_run(ladder, slates)
    run.run()
    h = _visible_text(run.trace.to_html())
    for want in ("research · node 1 · round 1", "retrieval", "forced final", "not_found", "already_in_context",
                 "missing.md", "gate", "write", "Memory/facts/notes.md", "written", "completed",
                 "prompt characters per round"):
        assert want in h, want
    text = run.trace.to_text()
    assert "── research · node 1 · round 3 → forced final" in text and "✎ write Memory/facts/notes.md" in text


def test_a_huge_trace_stays_under_a_megabyte_and_says_what_it_left_out():
    t = big_trace(rounds=1000)
    h = t.to_html()
    assert len(h.encode()) < 1_000_000
    assert "shown as one line each" in h and h.count("ladr-round-line") > 0
    assert "lorem ipsum " * 400 not in h            # no 400,000-character block in the page


def test_a_ladder_displays_its_steps_slates_and_source():
    lad = ladr_lab.load_ladder("examples/gated_verifiers.yaml")
    data = _bundle(lad)
    assert repr(lad) == "Ladder('gated-verifiers', steps=['verify'], file='examples/gated_verifiers.yaml')"
    assert "verify" in data["text/plain"] and "retrieve Knowledge/docs" in data["text/plain"]
    h = data["text/html"]
    assert "Knowledge" in h and "jsonMatches" in h and "YAML source" in h and "requestMatch" in h


def test_a_folder_displays_its_index_tree_and_files(slates):
    store = SlateStore()
    store.bind("Knowledge", slates["Knowledge"])
    folder = store.slate("Knowledge").folder("docs")
    data = _bundle(folder)
    h = data["text/html"]
    assert "core.md" in h and "index" in h and "tree" in h and "notes/" in h
    assert "core.md" in data["text/plain"]
    assert "Knowledge" in store.to_html() and "docs" in store.slate("Knowledge").to_html()


def test_a_big_folder_shows_a_bounded_table(tmp_path):
    d = tmp_path / "docs"
    for i in range(30):
        (d / f"dir{i:02d}").mkdir(parents=True)
        for j in range(40):
            (d / f"dir{i:02d}" / f"f{j:03d}.md").write_text("x")
    store = SlateStore()
    store.bind("S", tmp_path)
    h = store.slate("S").folder("docs").to_html()
    assert "1,000 more files" in h and h.count("<tr") < 500 and len(h) < 1_000_000


def test_analysis_results_display(ladder, slates, tmp_path):
    a = scripted_run(ladder, slates)
    a.run()
    b = Run(a.ladder, model=ScriptedModel({"research": ['{"request": {"files": ["faq.md"]}}', "done"]}),
            slates=slates, input="other")
    b.run()
    d = ladr_lab.diff_runs(a.trace, b.trace)
    assert "first divergence" in _bundle(d)["text/html"] and repr(d).startswith("<RunDiff")
    report = ladr_lab.lint(a.ladder, [a.trace])
    assert "Lint of" in _bundle(report)["text/html"] and repr(report).startswith("<LintReport")
    ev = ladr_lab.evaluate(a.ladder, [{"context": "q1"}], model=ScriptedModel(lambda m, **h: "fine"),
                           slates=slates, out=tmp_path / "ev", progress=False)
    eh = _bundle(ev)["text/html"]
    assert "Evaluation" in eh and "completed" in eh and "q1" in eh and "<Evaluation: 1 row(s)" in repr(ev)


@pytest.mark.parametrize("name", ["Ladder", "Trace", "Run", "CallRequest", "RunResult", "Evaluation", "LintReport",
                                  "RunDiff"])
def test_the_public_classes_are_displayable(name):
    assert issubclass(getattr(ladr_lab, name), Displayable)


def test_folder_and_events_are_displayable():
    from ladr_lab.slate import Folder
    from ladr_lab.trace import Events, LlmCall
    assert issubclass(Folder, Displayable) and issubclass(LlmCall, Displayable) and issubclass(Events, Displayable)


# ---- include / exclude (IPython's arguments to _repr_mimebundle_) -----------------------------------------

class _Counted(Displayable):
    def __init__(self) -> None:
        self.html_calls = 0
        self.text_calls = 0

    def to_html(self) -> str:
        self.html_calls += 1
        return "<b>x</b>"

    def to_text(self) -> str:
        self.text_calls += 1
        return "x"


def test_include_text_plain_does_not_build_the_html_view():
    obj = _Counted()
    assert obj._repr_mimebundle_(include=["text/plain"]) == {"text/plain": "x"}
    assert obj.html_calls == 0 and obj.text_calls == 1


def test_exclude_removes_the_keys_and_skips_building_them():
    obj = _Counted()
    assert obj._repr_mimebundle_(exclude=["text/html"]) == {"text/plain": "x"}
    assert obj.html_calls == 0
    assert obj._repr_mimebundle_(exclude={"text/plain"}) == {"text/html": "<b>x</b>"}
    assert (obj.html_calls, obj.text_calls) == (1, 1)
    assert obj._repr_mimebundle_(include=["text/html"], exclude=["text/html"]) == {}


def test_no_include_or_exclude_builds_both_views_once():
    obj = _Counted()
    assert obj._repr_mimebundle_() == {"text/plain": "x", "text/html": "<b>x</b>"}
    assert (obj.html_calls, obj.text_calls) == (1, 1)


def test_a_plain_table_holds_the_same_cells_and_a_page_loads_nothing_from_elsewhere():
    from ladr_lab.display import PLAIN_TABLE_STYLE, page, table
    rows = [["a<b", Html("<b>x</b>")], ["2", None]]
    styled, plain = table(["h", "k"], rows, cls="c"), table(["h", "k"], rows, cls="c", plain=True)
    def cells(html):
        return re.findall(r"<t[dh](?: [^>]*)?>(.*?)</t[dh]>", html)
    assert cells(styled) == cells(plain) == ["h", "k", "a&lt;b", "<b>x</b>", "2", ""]
    assert "padding" not in plain.split("<thead>", 1)[1] and 'class="ladr-plain c"' in plain
    doc = page(plain, "T <1>", style=".x{}")
    assert doc.startswith("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">")
    assert "<title>T &lt;1&gt;</title>" in doc and PLAIN_TABLE_STYLE in doc and ".x{}" in doc
    assert doc.rstrip().endswith(plain + "</body></html>") and "src=" not in doc and "http" not in doc


def test_a_chart_point_links_with_xlink_href_which_jupyterlab_leaves_alone():
    # JupyterLab rewrites each <a href> of an HTML output by assigning `a.href`; an SVG <a> has only a getter, so the
    # whole output rendered as "Javascript Error: Cannot set property href of #<SVGAElement>" (notebook 08)
    import re
    import xml.etree.ElementTree as ET

    from ladr_lab.display import scatter_chart
    pts = [{"x": 0.5, "y": 1.0, "name": "a", "group": "g", "href": "#part-a", "label": "a: p 1, r 0.5"},
           {"x": 0.7, "y": 0.9, "name": "b", "group": "g", "href": None, "label": "b"}]
    html = str(scatter_chart(pts, title="t"))
    svg = re.search(r'<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink=.*?</svg>', html, re.S).group(0)
    assert not re.search(r"<a\s+href=", svg)
    root = ET.fromstring(svg)               # well-formed XML, the xlink namespace declared
    links = root.findall(".//{http://www.w3.org/2000/svg}a")
    assert [a.get("{http://www.w3.org/1999/xlink}href") for a in links] == ["#part-a"]
