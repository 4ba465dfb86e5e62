"""RequestMatchEditor: edit a step's requestMatch (YAML or JSON) and see, as you type, which recorded rounds
would flip.

On every change of the text: it is parsed (a YAML or JSON syntax error is shown at its line), checked against
its metaschema (each error at the line of the offending part) and for `$ref`s that do not resolve, checked for
keywords its dialect does not know (`requried`), all by `config.iter_schema_problems`; then every recorded
output of the step (in one trace, several, or a whole evaluation) is judged again with `rejudge` (no model call).
Each flip is listed with the deciding keyword and its schema and instance paths, and what it would change
downstream. Lint's findings for the step are shown for the edited ladder.
**Suggest** (given `labels=` for the recorded outputs) puts the requestMatch `suggest_request_match` fits to the
labels in the box, so its flips show as an edit's do, with each constraint explained (or the outputs that collide).
`apply()` returns the edited Ladder (its YAML rewritten in place, see `config/rewrite.py`) and `to_yaml()`
its text; the Apply button warns when the edit also changes other steps (a schema shared through a YAML
anchor) or when the ladder had to be written out again, losing its comments (`editor.rewrite.warnings`).
"""
from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

from ..analysis import lint, rejudge_rows
from ..analysis.edits import Edits
from ..analysis.html import finding_html
from ..analysis.tuning import iter_sources
from ..config import Ladder, iter_schema_problems
from ..config.rewrite import (
    TEST_KEYS,
    SchemaRewrite,
    current_schema,
    rewrite_schema,
    schema_text,
    to_yaml_text,
)
from ..config.standalone import read_schema
from ..display import Html, badge, concat, note, plural, pre, root, table, tag
from ..errors import ConfigError
from ..experiments.tuning import as_source
from ..trace import Trace
from .parts import View, button, head_html, html, ipw, layout

__all__ = ["RequestMatchEditor"]

FLIPS_PAGE = 25           # flips shown at once (a schema edit can flip every recorded round)
SYNC_LIMIT = 300          # up to this many recorded model calls, every keystroke re-judges at once
DEBOUNCE = 0.3            # beyond it, re-judge this long after the last keystroke


def _traces(trace: Any, evaluation: Any) -> list[tuple[str, Trace]]:
    out: list[tuple[str, Trace]] = []
    items = trace if isinstance(trace, (list, tuple)) else ([] if trace is None else [trace])
    for i, t in enumerate(items, 1):
        kind = "trace" if isinstance(t, Trace) else "run" if isinstance(getattr(t, "trace", None), Trace) else None
        label = str(t) if kind is None else f"{kind} {i}" if len(items) > 1 else kind
        out.append((label, Trace.of(t)))
    if evaluation is not None:     # a batch run (or its folder): its cells' traces, as schema tuning reads them
        out += [(f"row {rid}", t) for rid, t in iter_sources(as_source(evaluation))]
    return out


def _said(problem: ConfigError) -> str:
    """A problem as the editor lists it: `line N: message`."""
    return (f"line {problem.line}: " if problem.line else "") + problem.message


class RequestMatchEditor(View):
    """`RequestMatchEditor(ladder, step, trace=None, evaluation=None)`: a step's requestMatch in a text box
    (YAML, or JSON with `format="json"`), re-judged live against recorded runs (`trace`: a Trace, a Run, a JSONL
    path or a list of them; `evaluation`: an Evaluation or Experiment, or its folder). `test="jsonMatches"` or `"match"` edits
    the step's gate or slateWrite schema instead."""

    css_class = "ladr-schema-editor"

    def __init__(self, ladder: Ladder | str | Path, step: str, trace: Any = None, evaluation: Any = None, *,
                 test: str = "requestMatch", format: str = "yaml", slates: dict | None = None,
                 debounce: float | None = None, labels: Any = None) -> None:
        super().__init__()
        w = ipw()
        self.ladder = Ladder.of(ladder)
        self.step = step
        self.test = test
        self.slates = slates
        if test not in TEST_KEYS:
            raise ValueError(f"test must be one of {', '.join(TEST_KEYS)} (got {test!r})")
        self.original_text = schema_text(self.ladder, step, test)      # ConfigError when the step has none
        self.original: dict = current_schema(self.ladder.step(step), test)
        self.traces = _traces(trace, evaluation)
        self.labels = labels
        # what Suggest reads: the batch run (its rows named by id, as labels name them), else the traces given
        self._source = as_source(evaluation) if evaluation is not None else (
            list(trace) if isinstance(trace, (list, tuple)) else [trace] if trace is not None else [])
        self.suggestion: Any = None
        recorded = sum(len(t.calls()) for _, t in self.traces)
        # re-judging costs about what validating each recorded output costs (jsonschema: ~0.1 ms each): with many,
        # judge once typing pauses, on a timer thread, so keystrokes never queue up behind re-judges
        self.debounce = debounce if debounce is not None else (DEBOUNCE if recorded > SYNC_LIMIT else 0.0)
        self._timer: threading.Timer | None = None
        self._lock = threading.Lock()
        self._updating = threading.Lock()    # one re-judge at a time (a timer thread and the kernel's may both ask)
        self._cache: dict[str, list[dict]] = {}
        self._built: tuple[tuple[str, str], SchemaRewrite | ConfigError] | None = None  # the edited text's ladder
        self.schema: dict | None = dict(self.original)
        self.errors: list[str] = []
        self.warnings: list[str] = []
        self.rows: list[dict] = []
        self.findings: list = []
        self.findings_before_edit: list = []   # trace-based findings judged with the schema before the edit
        self.applied: Ladder | None = None
        self.rewrite: SchemaRewrite | None = None   # the last apply's: the other steps it changed, comments lost
        self.format = w.ToggleButtons(options=["YAML", "JSON"], value="JSON" if format.lower() == "json" else "YAML",
                                      style={"button_width": "5em"})
        self.text = w.Textarea(value=self.original_text if self.format.value == "YAML" else
                               json.dumps(self.original, indent=2, ensure_ascii=False),
                               layout=w.Layout(width="100%", height=f"{min(30, max(8, self.original_text.count(chr(10)) + 3))}em"))
        self.text.add_class("ladr-schema-text")
        self.errors_html = html()
        self.errors_html.add_class("ladr-schema-errors")
        self.summary = html()
        self.summary.add_class("ladr-rejudge-summary")
        self.flips_html = html()
        self.flips_html.add_class("ladr-flips")
        self._flip_start = 0
        self.flips_prev = button("◀", key="arrow", width="2.6em")
        self.flips_next = button("▶", key="arrow", width="2.6em")
        self.flips_label = html()
        self.flips_pager = w.HBox([], layout=layout("row", align_items="center"))
        self.flips_prev.on_click(lambda _b: self._show_flips(self._flip_start - FLIPS_PAGE))
        self.flips_next.on_click(lambda _b: self._show_flips(self._flip_start + FLIPS_PAGE))
        self.lint_html = html()
        self.lint_html.add_class("ladr-lint-findings")
        self.apply_button = w.Button(description="Apply", button_style="primary",
                                     tooltip="make the edited ladder (editor.applied)")
        self.export_button = w.Button(description="Export YAML", tooltip="show the whole edited ladder's YAML")
        self.revert_button = w.Button(description="Revert", tooltip="back to the ladder's schema")
        self.suggest_button = w.Button(description="Suggest", tooltip="fit the requestMatch to the labels of the "
                                       "recorded outputs (labels=): the schema goes in the box, its flips below",
                                       disabled=test != "requestMatch")
        self.export = w.Textarea(layout=w.Layout(width="100%", height="16em", display="none"))
        self.export.add_class("ladr-export")
        self.message = html()
        where = (f"re-judging the recorded outputs of {plural(len(self.traces), 'run')}" if self.traces
                 else "no recorded runs given: pass trace= or evaluation= to see flips")
        title = html(head_html(tag("b", f"{test} of step {step}"), note(f"  ({self.ladder.name}; {where})")))
        self.widget = self._root([title, self.format, self.text, self.errors_html, self.summary, self.flips_pager,
                                  self.flips_html,
                                  self.lint_html, w.HBox([self.apply_button, self.export_button, self.revert_button, self.suggest_button]),
                                  self.message, self.export])
        self.text.observe(lambda _c: self._changed(), names="value")
        self.format.observe(self._switch, names="value")
        self.apply_button.on_click(lambda _b: self._apply_clicked())
        self.export_button.on_click(lambda _b: self._export_clicked())
        self.revert_button.on_click(lambda _b: self.revert())
        self.suggest_button.on_click(lambda _b: self.suggest())
        self.update()

    # ---- parsing and checking ------------------------------------------------------------------------
    def _parse(self, text: str, fmt: str | None = None) -> tuple[Any, Any, list[str]]:
        """(value, positions, syntax errors) of `text` read as `fmt` (default: the format chosen)."""
        value, pos, error = read_schema(text, fmt or self.format.value)
        return value, pos, [] if error is None else [_said(error)]

    def _check(self, value: Any, pos: Any) -> list[str]:
        problems = list(iter_schema_problems(value, positions=pos))
        self.warnings = [_said(p) for p in problems if p.severity != "error"]
        return [_said(p) for p in problems if p.severity == "error"]

    # ---- the live part -------------------------------------------------------------------------------
    def _changed(self) -> None:
        if self.debounce <= 0:
            self.update()
            return
        with self._lock:
            if self._timer is not None:
                self._timer.cancel()
            timer = threading.Timer(self.debounce, lambda: self._fire(timer))
            timer.daemon = True
            self._timer = timer
            timer.start()
        self.summary.value = str(note("re-judging when you pause typing…"))

    def _fire(self, timer: threading.Timer) -> None:
        with self._lock:
            if self._timer is not timer:
                return                      # a later keystroke started a later timer
            self._timer = None
        self.update()

    def flush(self) -> None:
        """Re-judge now if a change is waiting for typing to pause."""
        with self._lock:
            timer, self._timer = self._timer, None
        if timer is not None:
            timer.cancel()
            self.update()

    def set_text(self, text: str) -> None:
        """Put `text` in the box and re-judge it now (what typing does, without waiting for a pause)."""
        self.text.value = text
        self.flush()

    def update(self) -> None:
        """Parse, check and re-judge the text now in the box (on every change, or once typing pauses)."""
        with self._updating:
            self._update()

    def close(self) -> None:
        """Cancel a waiting re-judge and close the editor's widgets."""
        with self._lock:
            timer, self._timer = self._timer, None
        if timer is not None:
            timer.cancel()
        super().close()

    def _update(self) -> None:
        value, pos, errors = self._parse(self.text.value)
        self.warnings = []
        if not errors:
            errors = self._check(value, pos)
        self.errors = errors
        self.errors_html.value = "".join(str(tag("div", "✗ ", e, cls="ladr-schema-error",
                                                 style="color: #cf222e; white-space: pre-wrap")) for e in errors) + \
            "".join(str(tag("div", "⚠ ", x, cls="ladr-schema-warning", style="color: #bc4c00")) for x in self.warnings)
        if errors:
            self.schema = None
            self.summary.value = str(note("fix the schema to re-judge"))
            self.lint_html.value = str(note("lint runs again once the schema is valid"))
            self.findings = []
            self.rows = []
            self._show_flips(0)
            return
        self.schema = value
        self._rejudge()
        self._lint()

    def _rejudge(self) -> None:
        assert self.schema is not None
        key = json.dumps(self.schema, sort_keys=True, default=str)
        rows = self._cache.get(key)
        if rows is None:             # an edit undone, or a comment typed, is judged already
            # the edited ladder lets a flip say what it would do (what a round would fetch, which gate branch);
            # when it does not load, the schema alone still re-judges the verdicts
            try:
                edits = Edits(self._edited())
            except ConfigError:
                edits = Edits({self.step: {self.test: self.schema}})
            rows = []
            for label, trace in self.traces:
                for r in rejudge_rows(trace, edits, step=self.step, slates=self.slates):
                    r["trace"] = label
                    rows.append(r)
            if len(self._cache) >= 16:
                self._cache.pop(next(iter(self._cache)))
            self._cache[key] = rows
        self.rows = rows
        flips = self.flips
        changed = sum(r["changed"] for r in rows)
        self.summary.value = head_html(tag("b", f"{len(rows):,} recorded verdict(s) re-judged: "),
                                       badge("flip") if flips else badge("same", title="nothing flips"),
                                       f" {len(flips)} flipped, {changed} with a different outcome")
        self._show_flips(0)

    def _show_flips(self, start: int) -> None:
        flips = self.flips
        start = max(0, min(start, max(0, (len(flips) - 1) // FLIPS_PAGE * FLIPS_PAGE)))
        self._flip_start = start
        shown = flips[start:start + FLIPS_PAGE]
        self.flips_html.value = "".join(self._flip_html(r) for r in shown)
        many = len(flips) > FLIPS_PAGE
        self.flips_label.value = str(note(f"flips {start + 1:,}–{start + len(shown):,} of {len(flips):,}")) if many \
            else ""
        self.flips_prev.disabled = start <= 0
        self.flips_next.disabled = start + FLIPS_PAGE >= len(flips)
        self.flips_pager.children = (self.flips_prev, self.flips_label, self.flips_next) if many else ()

    @property
    def flips(self) -> list[dict]:
        """The re-judged rows whose verdict flipped (each with `trace`, the run it comes from)."""
        return [r for r in self.rows if r["flipped"]]

    @staticmethod
    def _flip_html(r: dict) -> str:
        where = f"{r['step']} · node {r['node']}" + (f" · round {r['round']}" if r["round"] is not None else "") + \
            (f" · iteration {r['iteration']}" if r["iteration"] != 1 else "")
        old = "match" if r["old"] else "no match"
        new = "match" if r["new"] else "no match"
        deciding = concat(" — deciding keyword ", tag("code", r["keyword"]), " at ", tag("code", r["schema_path"] or "/"),
                          " (instance ", tag("code", r["instance_path"] or "/"), ")",
                          note(f"  {r['message']}") if r.get("message") else None) if r.get("keyword") else None
        effect = tag("div", "→ ", r["effect"], style="margin-left: 1.5em") if r.get("effect") else None
        out = (r.get("output") or "")[:160]
        return str(tag("div", "⇄ ", tag("b", where), note(f"  {r['trace']} #{r['seq']}  "), badge(old), " → ",
                       badge(new), deciding, effect,
                       tag("div", note("output: "), tag("code", out + ("…" if len(r.get("output") or "") > 160 else "")),
                           style="margin-left: 1.5em"),
                       cls="ladr-flip",
                       style="border-left: 3px solid #cf222e; padding: 1px 6px; margin: 3px 0"))

    def _edited(self) -> Ladder:
        """The edited ladder of the text now in the box."""
        return self._rewrite().ladder

    def _rewrite(self) -> SchemaRewrite:
        """The edit written into the ladder, built once per text (re-judging, lint and apply all ask)."""
        assert self.schema is not None
        key = (self.format.value, self.text.value)
        if self._built is None or self._built[0] != key:
            text = self.text.value if self.format.value == "YAML" else None
            try:
                built: SchemaRewrite | ConfigError = rewrite_schema(self.ladder, self.step, self.schema, self.test,
                                                                    text=text)
            except ConfigError as exc:
                built = exc
            self._built = (key, built)
        built = self._built[1]
        if isinstance(built, ConfigError):
            raise built
        return built

    def _lint(self) -> None:
        try:
            edited = self._edited()
        except ConfigError as exc:
            self.findings = []
            self.lint_html.value = str(tag("div", f"the edited ladder does not load: {exc}", style="color: #cf222e"))
            return
        report = lint(edited, [t for _, t in self.traces])
        self.findings = [f for f in report.findings if f.step in (self.step, None)]
        if not self.findings:
            self.lint_html.value = str(note("lint: nothing found for this step"))
            return
        cols = ["", "code", "step", "seen", "fix", "where"]
        edited_schema = self.schema is not None and self.schema != self.original
        # a finding drawn from recorded verdicts was judged with the ladder's own schema: after an edit it is
        # history, shown apart and marked, not as if the edited schema had produced it
        recorded = [f for f in self.findings if edited_schema and f.evidence and "seq" in f.evidence[0]]
        current = [f for f in self.findings if f not in recorded]
        self.findings_before_edit = recorded
        parts: list = []
        if current:
            parts += [tag("b", "lint"), table(cols, [finding_html(f) for f in current])]
        if recorded:
            parts += [tag("b", "lint, before your edit"),
                      note("  from the recorded runs, judged with the ladder's own schema; the flips above say "
                           "what your edit changes"),
                      table(cols, [finding_html(f) for f in recorded])]
        self.lint_html.value = str(concat(*parts))

    # ---- the buttons ---------------------------------------------------------------------------------
    def _switch(self, change: dict) -> None:
        value, _pos, errors = self._parse(self.text.value, change["old"])
        if errors or value is None:
            self.update()   # keep the text as it is (converting a broken schema would lose it); re-read it
            return
        self.text.value = json.dumps(value, indent=2, ensure_ascii=False) if change["new"] == "JSON" \
            else to_yaml_text(value)

    def apply(self) -> Ladder:
        """The edited ladder (its YAML rewritten in place); raises ConfigError while the schema has errors."""
        self.flush()
        if self.schema is None:
            raise ConfigError(f"the edited {self.test} has errors: " + "; ".join(self.errors), step_id=self.step,
                              rule="invalid-schema")
        self.rewrite = self._rewrite()
        self.applied = self.rewrite.ladder
        return self.applied

    def to_yaml(self) -> str:
        """The whole edited ladder's YAML."""
        return self.apply().text

    def revert(self) -> None:
        """Put the ladder's own schema back in the box (the last Apply's line and export go: they were of the edit)."""
        self.text.value = self.original_text if self.format.value == "YAML" else \
            json.dumps(self.original, indent=2, ensure_ascii=False)
        self.message.value = str(note("reverted to the ladder's own schema"))
        self.export.layout.display = "none"

    def suggest(self, labels: Any = None, **kw: Any) -> Any:
        """Fit requestMatch to the labels (`labels`, else the editor's `labels=`; `kw` go to
        `suggest_request_match`), put the suggested schema in the box (its flips follow) and say why each constraint
        is there; when the labels collide, say which outputs and leave the box as it is. Returns the Suggestion."""
        from ..analysis import suggest_request_match
        from ..analysis.html import suggestion_html
        if labels is not None:
            self.labels = labels
        if self.test != "requestMatch":
            self.message.value = str(note("Suggest fits a requestMatch; this editor edits a " + self.test))
            return None
        if not self._source or self.labels is None:
            self.message.value = str(note("Suggest needs recorded runs (trace= or evaluation=) and their labels "
                                          "(labels=: a CSV, a mapping or a DataFrame, as tune_request_match takes)"))
            return None
        try:
            sug = suggest_request_match(self._source, labels=self.labels, step=self.step, ladder=self.ladder, **kw)
        except Exception as exc:        # a LadrError (a label naming no row, no retrieve rounds): said, not raised
            self.message.value = str(tag("div", str(exc), style="color: #cf222e"))
            return None
        self.suggestion = sug
        if sug.schema is not None:
            self.set_text(json.dumps(sug.schema, indent=2, ensure_ascii=False) if self.format.value == "JSON"
                          else to_yaml_text(sug.schema))
        self.message.value = suggestion_html(sug, frontier=False)
        return sug

    def _apply_clicked(self) -> None:
        try:
            edited = self.apply()
        except ConfigError as exc:
            self.message.value = str(tag("div", str(exc), style="color: #cf222e"))
            return
        warnings = self.rewrite.warnings if self.rewrite is not None else []
        self.message.value = str(concat(badge("ok"), f" applied: editor.applied is the edited ladder {edited.name}"
                                                     f" ({plural(len(self.flips), 'flip')} against the recorded runs)",
                                        *(tag("div", "⚠ ", w, cls="ladr-apply-warning", style="color: #bc4c00")
                                          for w in warnings)))

    def _export_clicked(self) -> None:
        try:
            self.export.value = self.to_yaml()
        except ConfigError as exc:
            self.message.value = str(tag("div", str(exc), style="color: #cf222e"))
            return
        self.export.layout.display = None

    def static_html(self) -> str:
        """The editor's state as a static view (the text and the flips found), for a notebook saved without
        widget state."""
        return str(root(pre(self.text.value, 8000), Html(self.errors_html.value), Html(self.summary.value),
                        Html(self.flips_html.value), Html(self.lint_html.value), cls="ladr-schema-editor-static",
                        title=f"{self.test} of step {self.step}"))
