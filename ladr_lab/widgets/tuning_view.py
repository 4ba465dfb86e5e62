"""TuningView: requestMatch variants scored over a data set (`tune_request_match`), and the outputs to label by
hand: each with a Request / Answer / — toggle; every label recounts the scores at once (nothing is judged again,
no model is called) and, given `labels_path`, is saved to the labels CSV (atomically) as it is made.

**Suggest** fits a requestMatch to the labels (`suggest_request_match`): its schema, each constraint explained, the
cross-validated folds or the outputs that collide, and the frontier drawn (precision against recall, a point per
variant: the hand-written ones, the suggestions, genson's when it is installed; the chosen one marked); choosing a
variant under the chart lists its flips. **Next to label** shows the outputs whose labels would most change the
suggestion, first."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from ..analysis import SchemaTuning, load_labels, save_labels
from ..analysis.html import flips_html, frontier_html, tuning_scores_html, verdict_badge, where_label
from ..analysis.labels import Key
from ..analysis.tuning import RoundOutput
from ..display import Html, concat, join, note, plural, tag
from ..experiments.tuning import tune_request_match
from .parts import PAGE, Pager, View, head_html, html, ipw, layout, message_html

__all__ = ["TuningView"]

_CHOICES = [("Request", "request"), ("Answer", "answer"), ("—", "")]
EXCERPT = 240       # characters of an output shown in its line
NEXT = 10           # outputs "Next to label" shows


class TuningView(View):
    """`TuningView(tuning_or_source, variants, labels=None, labels_path=None)`: the scores of each requestMatch
    variant and the outputs (filtered: where the variants disagree, unlabelled), each with a Request / Answer /
    — toggle that labels it, recounts the scores and, with `labels_path`, saves the labels CSV."""

    css_class = "ladr-tuning-view"

    def __init__(self, tuning_or_source: SchemaTuning | Any, variants: dict | None = None, *, labels: Any = None,
                 labels_path: str | Path | None = None, step: str | None = None, page: int = PAGE) -> None:
        super().__init__()
        w = ipw()
        self.labels_path = Path(labels_path) if labels_path is not None else None
        saved = load_labels(self.labels_path) if self.labels_path is not None and self.labels_path.is_file() else {}
        if isinstance(tuning_or_source, SchemaTuning):
            self.tuning = tuning_or_source
            if variants:
                raise ValueError("give the variants to tune_request_match, or a source here, not both")
            if labels is not None:
                from ..analysis.labels import to_labels
                self.tuning.labels.update(to_labels(labels))
        else:
            self.tuning = tune_request_match(tuning_or_source, variants or {}, labels=labels, step=step)
        self.tuning.labels.update(saved)          # what was labelled here before wins: it is the latest word
        t = self.tuning
        self.header = html(head_html(tag("b", "requestMatch tuning  "),
                                     note(f"{plural(len(t.outputs), 'output')} of retrieve rounds · variants "
                                          + ", ".join(t.variants)
                                          + (f" · labels saved to {self.labels_path}" if self.labels_path else ""))))
        self.scores = html(cls="ladr-tuning-scores-box")
        self.message = html()
        self.only_disagree = w.Checkbox(value=False, description="only where variants disagree", indent=False,
                                        layout=w.Layout(width="auto"))
        self.only_unlabelled = w.Checkbox(value=False, description="only unlabelled", indent=False,
                                          layout=w.Layout(width="auto"))
        self.suggestion: Any = None
        self.suggested: set[str] = set()         # the variants the last Suggest added
        self.only_next: list[int] | None = None    # "Next to label": these outputs, in this order
        self.suggest_button = w.Button(description="Suggest", button_style="primary",
                                       tooltip="fit a requestMatch to the labels (no model call)")
        self.next_button = w.Button(description="Next to label",
                                    tooltip="show the outputs whose labels would most change the suggestion")
        self.all_button = w.Button(description="All outputs", tooltip="show every output again")
        self.suggestion_html = html(cls="ladr-suggestion-box")
        self.flips_of = w.Dropdown(options=[], description="flips of", layout=w.Layout(width="auto"))
        self.flips = html(cls="ladr-tuning-flips")
        self.toggles: dict[Key, Any] = {}          # the toggles of the outputs on the page shown
        self.lines: dict[Key, Any] = {}
        self.pager = Pager(self.items(), self._make, page=page, noun="output")
        self.pager.widget.add_class("ladr-tuning-outputs")
        self.widget = self._root([self.header, self.scores,
                                  w.HBox([self.suggest_button, self.next_button, self.all_button], layout=layout("row")),
                                  self.suggestion_html, self.flips_of, self.flips,
                                  w.HBox([self.only_disagree, self.only_unlabelled], layout=layout("row")),
                                  self.message, self.pager.widget])
        self.only_disagree.observe(lambda _c: self.refilter(), names="value")
        self.only_unlabelled.observe(lambda _c: self.refilter(), names="value")
        self.suggest_button.on_click(lambda _b: self.suggest())
        self.next_button.on_click(lambda _b: self.show_next())
        self.all_button.on_click(lambda _b: self.show_all())
        self.flips_of.observe(lambda _c: self.show_flips(), names="value")
        self.show_scores()

    # ---- data ----------------------------------------------------------------------------------------------
    def items(self) -> list[int]:
        """The positions (in `tuning.outputs`) of the outputs the filters let through, in order (after "Next to
        label": the outputs it chose, in its order)."""
        t = self.tuning
        if self.only_next is not None:
            return list(self.only_next)
        names = t.compared()
        out = []
        for i, o in enumerate(t.outputs):
            if self.only_unlabelled.value and t.label_of(o) is not None:
                continue
            if self.only_disagree.value and len({t.verdicts[n][i].verdict for n in names}) < 2:
                continue
            out.append(i)
        return out

    def refilter(self) -> None:
        """Show the outputs the filters now let through (labelling does not refilter: a line stays put)."""
        self.pager.set_items(self.items())

    def show_scores(self) -> None:
        """Draw the scores table again from the current labels (and the frontier, once suggested)."""
        self.scores.value = str(tuning_scores_html(self.tuning))
        if self.suggestion is not None:
            self._draw_suggestion()

    # ---- suggest ------------------------------------------------------------------------------------------------
    def suggest(self, **kw: Any) -> Any:
        """Fit a requestMatch to the labels (`suggest_request_match`; `kw` go to it): its frontier's schemas become
        variants here (`suggested` the chosen one), genson's too when it is installed; returns the Suggestion."""
        from ..analysis import suggest_request_match
        from ..analysis.suggest import genson_schema
        from ..round.verdict import extraction
        steps = sorted({o.step for o in self.tuning.outputs})
        step = kw.pop("step", None) or (steps[0] if len(steps) == 1 else None)
        try:
            sug = suggest_request_match(self.tuning, step=step, **kw)
        except Exception as exc:      # a LadrError (several steps, no retrieve rounds): said here, not raised
            self.message.value = message_html(str(exc), "error")
            return None
        for name in self.suggested:
            self.tuning.verdicts.pop(name, None)
        self.suggested = set()
        for f in sug.frontier:
            self.tuning.add_variant(f.name, f.schema, step=sug.step)
            self.suggested.add(f.name)
        values = [extraction(o.output).value for o in self.tuning.outputs
                  if self.tuning.label_of(o) == "request" and o.step == sug.step and extraction(o.output).found]
        gen = genson_schema(values) if values else None
        if gen is not None:
            try:
                self.tuning.add_variant("genson", gen, step=sug.step)
                self.suggested.add("genson")
            except Exception:         # genson wrote a schema the loader refuses: no point to draw
                pass
        self.suggestion = sug
        self.message.value = ""
        self.flips_of.options = [n for n in self.tuning.variants if n != "recorded"]
        self.flips_of.value = sug.best.name if sug.best is not None else (self.flips_of.options or [None])[0]
        self.show_scores()
        self.show_flips()
        return sug

    def _draw_suggestion(self) -> None:
        from ..analysis.html import suggestion_html
        sug = self.suggestion
        chosen = sug.best.name if sug.best is not None else None
        self.suggestion_html.value = str(concat(Html(suggestion_html(sug, frontier=False)),
                                                frontier_html(self.tuning, self.suggested - {"genson"}, chosen,
                                                              anchor=f"ladr-tv-{id(self)}")))

    def show_flips(self) -> None:
        """List the flips (against what the run decided) of the variant chosen under the chart."""
        name = self.flips_of.value
        self.flips.value = "" if not name or name not in self.tuning.verdicts else str(flips_html(self.tuning, name))

    def show_next(self, n: int = NEXT) -> list:
        """Show only the `n` outputs to label next (suggesting first if needed); returns them."""
        sug = self.suggestion or self.suggest(folds=0)
        if sug is None:
            return []
        picked = sug.next_to_label(n)
        where = {o.key: i for i, o in enumerate(self.tuning.outputs)}
        self.only_next = [where[o.key] for o in picked if o.key in where]
        self.message.value = message_html(f"the {len(self.only_next)} output(s) whose labels would most change the "
                                          "suggestion, first; Suggest again after labelling them", "info")
        self.refilter()
        return picked

    def show_all(self) -> None:
        """Leave "Next to label": show the outputs the filters let through."""
        self.only_next = None
        self.refilter()

    # ---- lines ---------------------------------------------------------------------------------------------
    def _line_html(self, i: int) -> str:
        t = self.tuning
        o = t.outputs[i]
        label = t.label_of(o)
        marks = []
        for name in t.variants:
            v = t.verdicts[name][i]
            wrong = label is not None and v.verdict is not None and v.verdict != label
            marks.append(concat(tag("span", name, style="color:#57606a"), " ", verdict_badge(v.verdict),
                                tag("span", " ✗", style="color:#cf222e", title=v.reason) if wrong else None))
        text = " ".join(o.output.split())
        where = where_label({"step": o.step, "node": o.node, "round": o.round, "iteration": o.iteration})
        return str(tag("div", tag("b", f"row {o.row}"), " · ", where,
                       note(" (forced final)") if o.forced else None, "  ", join(marks, "  "),
                       tag("div", tag("code", text[:EXCERPT] + ("…" if len(text) > EXCERPT else "")),
                           style="margin:1px 0 4px 0"), cls="ladr-tuning-line"))

    def _make(self, page: list[int]) -> list:
        w = ipw()
        self.toggles.clear()
        self.lines.clear()
        out = []
        for i in page:
            o = self.tuning.outputs[i]
            toggle = w.ToggleButtons(options=_CHOICES, value=self.tuning.label_of(o) or "",
                                     style={"button_width": "7.5em"}, layout=w.Layout(width="auto"))
            toggle.add_class("ladr-label-toggle")
            line = html(self._line_html(i))
            toggle.observe(lambda c, o=o, i=i: self._labelled(o, i, c["new"]), names="value")
            self.toggles[o.key] = toggle
            self.lines[o.key] = line
            out.append(w.VBox([line, toggle], layout=layout("box")))
        return out

    def _labelled(self, o: RoundOutput, i: int, value: str) -> None:
        self.tuning.set_label(o.row, o.step, o.round, value or None, node=o.node, iteration=o.iteration)
        if o.key in self.lines:
            self.lines[o.key].value = self._line_html(i)
        self.show_scores()
        self.show_flips() if self.suggestion is not None else None
        self.save()

    def label(self, row: str, round: int, value: str | None, *, step: str | None = None, node: int = 1,
              iteration: int = 1) -> None:
        """Label an output as its toggle would ("request", "answer", or None to clear), shown or not."""
        t = self.tuning
        found = [i for i, o in enumerate(t.outputs) if o.row == str(row) and o.round == round and o.node == node
                 and o.iteration == iteration and (step is None or o.step == step)]
        if len(found) != 1:
            raise KeyError(f"row {row} round {round}" + (f" of step {step}" if step else "")
                           + (": no such output" if not found else ": give step="))
        o = t.outputs[found[0]]
        toggle = self.toggles.get(o.key)
        if toggle is not None:
            toggle.value = value or ""          # its observer labels, recounts and saves
        else:
            self._labelled(o, found[0], value or "")

    def save(self) -> Path | None:
        """Write the labels to `labels_path` (atomically), when there is one."""
        if self.labels_path is None:
            return None
        try:
            path = save_labels(self.tuning.labels, self.labels_path)
        except OSError as exc:
            self.message.value = message_html(f"could not save the labels to {self.labels_path}: {exc}", "error")
            return None
        self.message.value = ""
        return path

    def static_html(self) -> str:
        """The scores and the outputs where the variants disagree, as a static view (with the suggestion and the
        frontier chart once suggested)."""
        if self.suggestion is None:
            return self.tuning.to_html()
        return str(concat(Html(self.tuning.to_html()), Html(self.suggestion_html.value)))

