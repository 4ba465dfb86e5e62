"""Static views of the executor's objects: a `Run` (status, the next prompt, the rounds so far), a pending
`CallRequest` (who asks and the exact prompt, section by section) and a `RunResult`.

They are built from the trace's stories (`trace/story.py`, `trace/html.py`), so a run shows its rounds as
the round printer and the widgets do. Showing a run never advances it: a run not yet started shows its
ladder and inputs, not its first prompt (reading that prompt would start the run).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..display import (
    Html,
    badge,
    concat,
    details,
    fmt_cost,
    fmt_int,
    join,
    json_text,
    kv_table,
    note,
    plural,
    pre,
    root,
    tag,
)
from ..trace.html import SECTION_CHARS, not_started_html, section_html, trace_html

if TYPE_CHECKING:
    from .calls import CallRequest
    from .run import Run, RunResult

__all__ = ["RUN_TRACE_CHARS", "request_body_html", "request_html", "request_text", "result_html", "result_text", "run_html",
           "run_text"]

RUN_TRACE_CHARS = 300_000     # the rounds-so-far part of a run's view


def request_body_html(req: CallRequest, limit: int = SECTION_CHARS) -> Html:
    """The prompt of a pending call, each section collapsible, and what its answer will be judged against."""
    info = req.info
    parts = [section_html(s.kind, s.name, s.text, limit) for s in req.prompt_sections()]
    judged = None
    if info.request_match is not None:
        judged = details(concat(tag("b", "requestMatch"), note("  a match is a retrieval request; anything else "
                                                               "is the final answer")),
                         pre(json_text(info.request_match), limit))
    elif info.forced_final:
        judged = tag("div", note("forced final call: its output is final whatever it looks like"))
    return join([*parts, judged])


def _request_head(req: CallRequest) -> Html:
    info = req.info
    label = " · ".join([*info.caller, info.step, f"node {info.node}", f"round {info.round}"]
                       + ([f"iteration {info.iteration}"] if info.iteration != 1 else []))
    return concat(tag("b", label), " ", badge("forced final") if info.forced_final else None,
                  note(f"  {req.prompt_chars:,} prompt chars (≈{fmt_int(req.prompt_chars / 4)} tokens) → "
                       f"{getattr(req.model, 'name', '?')}"))


def request_html(req: CallRequest) -> str:
    """A pending call as a static view."""
    return root(_request_head(req), request_body_html(req), cls="ladr-request-view",
                title="Pending model call (answer it with run.step(), or by hand with run.step(output=...))")


def request_text(req: CallRequest, limit: int = 1200) -> str:
    """A pending call as text: who asks, then each prompt section (cut at `limit` characters)."""
    lines = [repr(req)]
    for s in req.prompt_sections():
        body = s.text if len(s.text) <= limit else s.text[:limit] + f" … [{len(s.text) - limit} more chars]"
        lines += [f"── {s.kind} {s.name} ({len(s.text):,} chars)", body]
    return "\n".join(lines)


def result_html(res: RunResult) -> str:
    """A run's summary: status, counts, the error with where it was declared, a replay's divergence, the output."""
    pairs = [("status", badge(res.status)),
             ("model calls", f"{res.llm_calls:,}" + (f" ({res.live_calls} answered live)"
                                                     if res.live_calls else "")
              + (f" ({res.edited_calls} answered by hand)" if res.edited_calls else "")),
             ("steps", f"{res.steps:,}"),
             ("tokens", f"{fmt_int(res.tokens_in)} in, {fmt_int(res.tokens_out)} out"), ("cost", fmt_cost(res.cost))]
    if res.error:
        pairs.append(("error", tag("span", res.error, style="color: #cf222e")))
        where = ", ".join(x for x in (f"step {res.error_step}" if res.error_step else None,
                                      f"node {res.error_node}" if res.error_node else None, res.error_where) if x)
        if where:
            pairs.append(("where", where))
    if res.divergence:
        d = res.divergence
        pairs.append(("replay diverged", f"step {d.get('step')} node {d.get('node')} round {d.get('round')}"))
    body = [kv_table(pairs)]
    if res.divergence and res.divergence.get("diff"):
        body.append(details("divergence (recorded → now)", pre(res.divergence["diff"])))
    body.append(concat(tag("b", "output"), note(f"  {len(res.output or ''):,} chars"), pre(res.output or "(empty)")))
    return root(*body, cls="ladr-result", title="Run result")


def result_text(res: RunResult) -> str:
    """A run's summary as text."""
    hand = f" ({res.edited_calls} answered by hand)" if res.edited_calls else ""
    if getattr(res, "cached_calls", 0):
        hand += f" ({res.cached_calls} from the response cache, not called)"
    head = f"{res.status}: {res.llm_calls} model call(s){hand}, {res.steps} step(s), {res.tokens_in + res.tokens_out:,} tokens"
    lines = [head + (f", ${res.cost:.4f}" if res.cost else "")]
    if res.error:
        lines.append(f"error: {res.error}")
    lines.append("output:\n  " + (res.output or "(empty)").replace("\n", "\n  "))
    return "\n".join(lines)


def _pending(run: Run) -> list[CallRequest]:
    return sorted(run._pending, key=lambda r: r.id) if run._started else []


def run_html(run: Run) -> str:
    """A run: status and counts, the next call's prompt (sections collapsible), the rounds so far, the result."""
    led = run.ledger
    fresh = not run.done and led.llm_calls == 0       # reading the first prompt starts a run but sends nothing
    status = not_started_html() if fresh else badge(run.status)
    pairs = [("ladder", run.ladder.name), ("status", status),
             ("model", getattr(run.model, "name", "?")),
             ("inputs", tag("code", json_text(run.inputs, None)[:400])),
             ("so far", f"{plural(led.llm_calls, 'model call')}, {plural(led.steps, 'step')}, "
                        f"{fmt_int(led.tokens_in)} tokens in, {fmt_int(led.tokens_out)} out, {fmt_cost(led.cost)}")]
    body: list = [kv_table(pairs)]
    pending = _pending(run)
    if not run._started:
        body.append(tag("div", note("Not started: run.pending shows the first prompt, run.step() makes the first "
                                    "model call, run.run() runs to the end.")))
    for i, req in enumerate(pending[:4]):
        body.append(details(concat("next: ", _request_head(req)), request_body_html(req), open=i == 0,
                            cls="ladr-pending"))
    if len(pending) > 4:
        body.append(note(f"… and {len(pending) - 4} more pending calls"))
    if run.trace.events:
        calls = len(run.trace.calls())
        body.append(details(concat(tag("b", "rounds so far"), note(f"  {plural(calls, 'model call')}, "
                                                                    f"{plural(len(run.trace.events), 'event')}")),
                            trace_html(run.trace.events, max_chars=RUN_TRACE_CHARS, title=None),
                            open=calls <= 6))
    if run.done:
        body.append(Html(result_html(run.result)))
    return root(*body, cls="ladr-run", title=f"Run of {run.ladder.name}")


def run_text(run: Run) -> str:
    """A run as text: its repr, the next call, the rounds so far (as the round printer words them)."""
    lines = [repr(run)]
    for req in _pending(run)[:1]:
        lines.append(f"next: {req!r}")
    if run.trace.events:
        lines.append(run.trace.to_text())
    return "\n".join(lines)
