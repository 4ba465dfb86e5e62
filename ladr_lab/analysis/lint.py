"""Lint: the pitfalls seed 001 lists, found in the ladder text (`lint_rules.py`) and in recorded runs.

From traces (each finding names the step, the calls that show it and a fix):

- `final-taken-as-request`: a retrieval round whose "request" names no retrieval mode (a final answer in
  JSON that a loose requestMatch let through);
- `forced-final-matched`: a forced final call whose output still matches requestMatch without naming a
  mode (the same looseness, seen at the end);
- `request-never-matches`: request-like JSON (a `request` key or a mode name) that failed requestMatch:
  the model tries to retrieve and the schema refuses it;
- `request-copies-example`: a retrieval round that asked only for paths the step's systemPrompt shows (its
  example's placeholder, `folder/note.md`) and that are not in the slate: the model copied the example;
- `rounds-nothing-new`: a retrieval round in which every entry was already in context, not found or
  matched nothing (other than the round above);
- `max-rounds-low`: forced final calls (the budget of rounds ran out; more so when the forced output
  was still a request), except those after a `final-taken-as-request` or `rounds-nothing-new` round of the
  same execution: those findings explain them (their message counts them), and more rounds would be wasted too;
- `max-rounds-unused` (info): no execution used more than a few of maxRounds' rounds;
- `budget-exhausted`: a run that stopped at executionBudget.maxLlmCalls.

From the slates on disk: `listing-hides-files` (`lint_listing.py`), listing fields that show no file name.

Verdicts are taken against the ladder as it is now (so a trace recorded before an edit is judged by the
edited schema, which is the point of linting it).
"""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..config.model import FieldSpec, Ladder, Step
from ..display import Displayable
from ..errors import ConfigError
from ..round.verdict import judge
from ..round.vocabulary import MODES
from ..trace import LlmCall, RunEnd, Trace
from .lint_listing import hidden_listings
from .lint_rules import FIXES, registry
from .positions import trace_label

NOTHING_NEW = frozenset({"already_in_context", "not_found", "no_match"})
SEVERITIES = ("error", "warning", "info")


@dataclass
class Finding:
    """One pitfall found: its code, severity, step, what was seen, the evidence (calls or a YAML position)
    and a fix."""

    code: str
    severity: str
    step: str | None
    message: str
    fix: str
    evidence: list[dict] = field(default_factory=list)
    file: str | None = None
    line: int | None = None
    column: int | None = None

    def to_dict(self) -> dict:
        """The finding as JSON-ready data."""
        return {"code": self.code, "severity": self.severity, "step": self.step, "message": self.message,
                "fix": self.fix, "evidence": self.evidence, "file": self.file, "line": self.line,
                "column": self.column}

    def format(self) -> str:
        """The finding as `ladr-lab lint` prints it."""
        where = ":".join(str(x) for x in (self.file or "<ladder>", self.line, self.column) if x is not None)
        head = f"{where}: {self.severity}: [{self.code}] " + (f'Step "{self.step}": ' if self.step and
                                                            not self.message.startswith("Step ") else "")
        lines = [head + self.message]
        if self.evidence and "seq" in self.evidence[0]:
            shown = ", ".join(_call_label(e) for e in self.evidence[:8])
            more = f" and {len(self.evidence) - 8} more" if len(self.evidence) > 8 else ""
            lines.append(f"    evidence: {shown}{more}")
        lines.append(f"    fix: {self.fix}")
        return "\n".join(lines)


def _call_label(e: dict) -> str:
    bits = [f"node {e['node']}"] if e.get("node") is not None else []
    if e.get("round") is not None:
        bits.append(f"round {e['round']}")
    if e.get("iteration", 1) != 1:
        bits.append(f"iteration {e['iteration']}")
    return f"{e.get('trace', 'trace')} #{e['seq']}" + (f" ({', '.join(bits)})" if bits else "")


@dataclass
class LintReport(Displayable):
    """What lint found in a ladder (and its traces): findings, or the ladder's errors when it is invalid."""

    ladder: str
    findings: list[Finding]
    problems: list[ConfigError] = field(default_factory=list)
    traces: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """True when the ladder is valid and nothing above `info` was found."""
        return not self.problems and not any(f.severity in ("error", "warning") for f in self.findings)

    def by_code(self, code: str) -> list[Finding]:
        """The findings of one code."""
        return [f for f in self.findings if f.code == code]

    def to_dataframe(self):
        """One row per finding (a pandas DataFrame)."""
        import pandas as pd
        return pd.DataFrame([f.to_dict() for f in self.findings],
                            columns=["code", "severity", "step", "message", "fix", "evidence", "file", "line", "column"])

    def to_dict(self) -> dict:
        """Everything as JSON-ready data (what `ladr-lab lint --json` prints)."""
        return {"ladder": self.ladder, "ok": self.ok, "traces": self.traces,
                "findings": [f.to_dict() for f in self.findings], "problems": [p.to_dict() for p in self.problems]}

    def __repr__(self) -> str:
        counts: defaultdict[str, int] = defaultdict(int)
        for f in self.findings:
            counts[f.severity] += 1
        found = ", ".join(f"{n} {s}(s)" for s, n in counts.items()) or "nothing found"
        return f"<LintReport of {self.ladder}: " + (f"{len(self.problems)} error(s)>" if self.problems else f"{found}>")

    def to_text(self) -> str:
        """The report as `ladr-lab lint` prints it."""
        return self.format()

    def to_html(self) -> str:
        """The findings as a static HTML view."""
        from .html import lint_html
        return lint_html(self)

    def format(self) -> str:
        """The report as text."""
        if self.problems:
            return "\n".join(p.format() for p in self.problems) + \
                f"\n{len(self.problems)} error(s): fix them first (ladr-lab validate)"
        lines = [f.format() for f in self.findings]
        counts: defaultdict[str, int] = defaultdict(int)
        for f in self.findings:
            counts[f.severity] += 1
        summary = ", ".join(f"{counts[s]} {s}(s)" for s in SEVERITIES if counts[s]) or "nothing found"
        lines.append(f"{self.ladder}: {summary}" + (f" (with {len(self.traces)} trace(s))" if self.traces else ""))
        return "\n".join(lines)


def _static(ladder: Ladder | str | Path, knobs: dict | None) -> tuple[Ladder | None, list[ConfigError], str]:
    from ..config import check_text
    from ..config.loader import read_ladder_file
    if isinstance(ladder, Ladder):
        if not ladder.text:
            return ladder, [], ladder.file or ladder.name
        built, problems = check_text(ladder.text, file=ladder.file, knobs=knobs if knobs is not None else ladder.knobs,
                                     base_dir=ladder.base_dir, registry=registry())
        return built or ladder, problems, ladder.file or ladder.name
    path = Path(ladder)
    try:
        text = read_ladder_file(path)
    except ConfigError as exc:
        return None, [exc], str(path)
    built, problems = check_text(text, file=str(path), knobs=knobs, base_dir=path.resolve().parent,
                                 registry=registry())
    return built, problems, str(path)


def _fix_for(p: ConfigError) -> str:
    if p.rule == "unknown-schema-keyword":
        key = p.path[-1] if p.path else "?"
        return f'write "{p.suggestion}" instead of "{key}"' if p.suggestion else \
            f'remove "{key}" or spell a keyword of the schema\'s dialect'
    return FIXES.get(p.rule or "", "see docs/config.md for this rule")


def _evidence(label: str, e) -> dict:
    return {"trace": label, "seq": e.seq, "node": e.node, "round": getattr(e, "round", None),
            "iteration": getattr(e, "iteration", 1), "caller": list(e.caller)}


def _names_mode(value: Any) -> bool:
    if not isinstance(value, dict):
        return False
    inner = value.get("request") if isinstance(value.get("request"), dict) else value
    return isinstance(inner, dict) and any(m in inner for m in MODES)


def _request_like(value: Any) -> bool:
    return isinstance(value, dict) and ("request" in value or _names_mode(value))


class _TraceLint:
    """Collects evidence across traces, step by step, then turns it into findings."""

    def __init__(self, ladder: Ladder) -> None:
        self.ladder = ladder
        self.ev: dict[tuple[str, str], list[dict]] = defaultdict(list)
        self.rounds_used: dict[str, list[int]] = defaultdict(list)
        self.misses: dict[str, list[tuple[dict, Any]]] = defaultdict(list)
        self.retrieved: dict[str, int] = defaultdict(int)
        self.runs_exhausted: list[dict] = []

    def add(self, label: str, trace: Trace) -> None:
        executions: dict[tuple, list[LlmCall]] = defaultdict(list)
        for e in trace.events:
            if isinstance(e, LlmCall):
                executions[(e.caller, e.step, e.iteration, e.node)].append(e)
            elif isinstance(e, RunEnd) and not e.depth and e.status == "budget_exhausted":
                self.runs_exhausted.append({"trace": label, "seq": e.seq, "node": None, "round": None,
                                            "iteration": 1, "llm_calls": e.llm_calls, "error": e.error})
        for (_, step_id, _, _), calls in executions.items():
            step = self.ladder.step(step_id)
            if step is None or step.retrieve is None:
                continue
            schema = step.retrieve.request_match
            used = 0
            wasted: str | None = None
            for c in calls:
                if c.request_match == "retrieval":
                    used += 1
                    self.retrieved[step_id] += 1
                    why = self._retrieval(label, step_id, c)
                    wasted = wasted or why          # the first wasted round is the cause to fix
                elif c.forced_final:
                    self._forced(label, step_id, c, schema, wasted)
                elif c.request_match == "final":
                    v = judge(c.output, schema)
                    if not v.is_request and v.json_value is not None and _request_like(v.json_value):
                        self.misses[step_id].append((_evidence(label, c), v.judgement))
            self.rounds_used[step_id].append(used)

    def _retrieval(self, label: str, step_id: str, c: LlmCall) -> str | None:
        """Collect a retrieval round's evidence; the code of the finding when the round was wasted."""
        fetched = c.fetched or ()
        no_mode = any(f.mode == "request" for f in fetched) or not _names_mode(c.request or {})
        if no_mode:
            self.ev[("final-taken-as-request", step_id)].append(_evidence(label, c))
            return "final-taken-as-request"
        copied = _copied_example_paths(c)
        if copied:
            self.ev[("request-copies-example", step_id)].append({**_evidence(label, c), "paths": copied})
            return "request-copies-example"
        if fetched and all(f.status in NOTHING_NEW for f in fetched):
            self.ev[("rounds-nothing-new", step_id)].append(
                {**_evidence(label, c), "statuses": sorted({f.status for f in fetched})})
            return "rounds-nothing-new"
        return None

    def _forced(self, label: str, step_id: str, c: LlmCall, schema: dict, wasted: str | None = None) -> None:
        # a forced final after a wasted round is that finding's consequence: "raise maxRounds" would only
        # buy more wasted calls, so it counts there and not as max-rounds-low (a learner follows fixes literally)
        self.ev[("max-rounds-low" if wasted is None else f"forced-after:{wasted}", step_id)].append(
            _evidence(label, c))
        v = judge(c.output, schema)
        if v.is_request and not _names_mode(v.json_value):
            self.ev[("forced-final-matched", step_id)].append(_evidence(label, c))
        elif v.is_request:
            self.ev[("still-requesting", step_id)].append(_evidence(label, c))

    def findings(self) -> list[Finding]:
        out: list[Finding] = []
        for step in self.ladder.all_steps():
            if step.retrieve is None:
                continue
            sid, r = step.id, step.retrieve
            got = self.ev.get(("final-taken-as-request", sid))
            if got:
                out.append(Finding("final-taken-as-request", "warning", sid,
                                   f"{len(got)} retrieval round(s) whose request names no retrieval mode "
                                   f"({', '.join(MODES)}): a final answer in JSON matched requestMatch"
                                   + _forced_note(self.ev, "final-taken-as-request", sid),
                                   FIXES["loose-request-match"], got))
            got = self.ev.get(("forced-final-matched", sid))
            if got:
                out.append(Finding("forced-final-matched", "warning", sid,
                                   f"{len(got)} forced final call(s) whose output still matches requestMatch "
                                   "without naming a mode: the schema cannot tell a final answer from a request",
                                   FIXES["loose-request-match"], got))
            misses = self.misses.get(sid)
            if misses:
                _, j = misses[0]
                ever = self.retrieved.get(sid, 0)
                how = "the step never retrieved" if not ever else f"the step retrieved {ever} time(s) otherwise"
                where = f"`{j.keyword}` at {j.schema_path or '/'} (instance {j.instance_path or '/'})"
                out.append(Finding("request-never-matches", "warning", sid,
                                   f"{len(misses)} request-like output(s) failed requestMatch, first on {where}; "
                                   f"{how}", f"loosen requestMatch at {j.schema_path or '/'} (`{j.keyword}`: "
                                   f"{j.message}) or show the exact request shape in the systemPrompt",
                                   [e for e, _ in misses]))
            got = self.ev.get(("request-copies-example", sid))
            if got:
                paths = sorted({p for e in got for p in e["paths"]})
                shown = ", ".join(f"`{p}`" for p in paths[:3])
                out.append(Finding("request-copies-example", "warning", sid,
                                   f"{len(got)} retrieval round(s) asked only for {shown}, which the systemPrompt "
                                   "shows as its example and which is not in the slate: the model copies the "
                                   "example instead of choosing from the listing"
                                   + _forced_note(self.ev, "request-copies-example", sid),
                                   FIXES["request-copies-example"].format(path=paths[0]), got))
            got = self.ev.get(("rounds-nothing-new", sid))
            if got:
                out.append(Finding("rounds-nothing-new", "warning", sid,
                                   f"{len(got)} retrieval round(s) brought nothing new (every entry already in "
                                   "context, not found or matching nothing)"
                                   + _forced_note(self.ev, "rounds-nothing-new", sid),
                                   "show FileIndex / FolderTree so requests name real paths, and say in the "
                                   "systemPrompt that (already in context) means the document is above", got))
            forced = self.ev.get(("max-rounds-low", sid))
            if forced:
                still = self.ev.get(("still-requesting", sid), [])
                extra = f"; in {len(still)} of them the model was still asking for documents" if still else ""
                out.append(Finding("max-rounds-low", "warning", sid,
                                   f"{len(forced)} forced final call(s): maxRounds {r.max_rounds} ran out{extra}",
                                   f"raise retrieve.maxRounds (to {r.max_rounds + 2}, say) or let one request ask "
                                   "for more (glob, subfolders, several files)", forced))
            used = self.rounds_used.get(sid)
            if used and not forced and 1 <= max(used) and max(used) + 1 < r.max_rounds:
                out.append(Finding("max-rounds-unused", "info", sid,
                                   f"at most {max(used)} of maxRounds {r.max_rounds} retrieval round(s) used in "
                                   f"{len(used)} execution(s)",
                                   f"lower retrieve.maxRounds to {max(used) + 1} (one spare round); each unused "
                                   "round is a model call the budget must allow for"))
        if self.runs_exhausted:
            cap = self.ladder.budget.max_llm_calls
            out.append(Finding("budget-exhausted", "warning", None,
                               f"{len(self.runs_exhausted)} run(s) stopped at executionBudget.maxLlmCalls ({cap})",
                               FIXES["fan-out-cost"], self.runs_exhausted))
        for f in out:
            at: Step | None = self.ladder.step(f.step) if f.step else None
            lc = self.ladder.positions.of(at.path) if at is not None and self.ladder.positions else None
            f.file = self.ladder.file
            if lc:
                f.line, f.column = lc
        return out


def _copied_example_paths(c: LlmCall) -> list[str]:
    """The paths of a round that asked only for paths its systemPrompt shows and that were not found (a model
    copying the prompt's placeholder, `folder/note.md`); empty when any entry was anything else."""
    system = next((m.get("content") for m in c.messages if m.get("role") == "system"), None)
    entries = [f for f in (c.fetched or ()) if f.mode in ("files", "subfolders")]
    if not isinstance(system, str) or not entries or len(entries) != len(c.fetched or ()):
        return []
    paths = []
    for f in entries:
        asked = (f.asked or f.path).strip()
        shown = {asked, f.path, asked.lstrip("./").rstrip("/")} - {""}
        if f.status != "not_found" or not any(_in_prompt(p, system) for p in shown):
            return []
        paths.append(f.path or asked)
    return paths


def _in_prompt(path: str, text: str) -> bool:
    """True when `path` stands in `text` as a path of its own (not part of a longer one)."""
    import re
    return re.search(r"(?<![\w./-])" + re.escape(path) + r"(?![\w/-]|\.\w)", text) is not None


def _forced_note(ev: dict, code: str, sid: str) -> str:
    n = len(ev.get((f"forced-after:{code}", sid), ()))
    return (f"; {n} forced final call(s) follow from these wasted rounds (raising maxRounds would only waste "
            "more calls: fix this first)") if n else ""


def _listing_findings(ladder: Ladder, slates: Mapping[str, str | Path] | None) -> list[Finding]:
    out = []
    for h in hidden_listings(ladder, slates):
        f0: FieldSpec = h["fields"][0]
        lc = ladder.positions.of(f0.path) if ladder.positions and f0.path else None
        if lc is None and ladder.positions:
            lc = ladder.positions.of(h["step"].path)
        out.append(Finding("listing-hides-files", "warning", h["step"].id, h["message"], h["fix"], [],
                           ladder.file, *(lc or (None, None))))
    return out


def lint(ladder: Ladder | str | Path, traces=(), *, knobs: dict | None = None,
         slates: Mapping[str, str | Path] | None = None) -> LintReport:
    """Lint a ladder (a Ladder or a path) for seed 001's pitfalls, statically, against its slates on disk
    (`slates`: title -> directory overrides, as `run` takes) and from recorded runs (`traces`: Traces or JSONL
    paths); returns a LintReport of findings, each with evidence and a fix."""
    built, problems, name = _static(ladder, knobs)
    labels = [trace_label(t) for t in traces]
    errors = [p for p in problems if p.severity == "error"]
    if errors or built is None:
        return LintReport(name, [], errors or problems, labels)
    findings = [Finding(p.rule or "warning", p.severity, p.step_id, str(p), _fix_for(p), [], p.file, p.line, p.column)
                for p in problems]
    findings += _listing_findings(built, slates)
    tl = _TraceLint(built)
    for t, label in zip(traces, labels, strict=True):
        tl.add(label, Trace.of(t))
    findings += tl.findings()
    return LintReport(name, findings, [], labels)


__all__ = ["Finding", "LintReport", "NOTHING_NEW", "lint"]
