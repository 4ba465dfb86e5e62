"""Export a run's trace as OpenTelemetry spans over OTLP/HTTP (the `otel` extra), after the run or live.

`export(trace)` turns a Trace, a Run or a saved JSONL trace into the span tree of `spans.py` and sends it to
the endpoint the standard `OTEL_EXPORTER_OTLP_*` variables name (or `endpoint=`), through a tracer provider
of its own made per export, so a user's global provider is never touched (pass `tracer_provider=` to use
yours). `OtelExport` is the listener `Run(otel=True)` attaches: it exports when the run ends. Attribute values
are cut at a length limit (`MAX_LENGTH`, or the standard variables) with a marker, and OpenInference's
`OPENINFERENCE_HIDE_*` variables (or `hide_inputs=` / `hide_outputs=`) leave prompts and outputs out.
OpenTelemetry is imported only inside these functions.
"""
from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ..errors import LadrError
from ..trace import Event, RunEnd, RunStart, Trace
from .spans import KIND, SpanPlan, plan_spans

__all__ = ["INSTALL", "MAX_ATTRIBUTES", "MAX_LENGTH", "OtelExport", "OtelExportError", "export", "export_events",
           "require_otel"]

INSTALL = 'pip install "ladr_lab[otel]"'
BATCH = 512           # spans per OTLP request
MAX_LENGTH = 16_384   # characters of an attribute value (each string of a list), unless a standard variable says
MAX_ATTRIBUTES = 1024  # attributes per span of the export's own provider (the SDK's default is 128)
LENGTH_VARS = ("OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT", "OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT")
COUNT_VARS = ("OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT", "OTEL_ATTRIBUTE_COUNT_LIMIT")
INPUT_KEYS = ("input.value", "input.mime_type", "llm.input_messages.")
OUTPUT_KEYS = ("output.value", "output.mime_type", "llm.output_messages.", "ladr.request")


class OtelExportError(LadrError):
    """The spans could not be exported: the extra is missing, or the receiver refused or could not be reached."""


def require_otel() -> None:
    """Raise OtelExportError naming the extra when the OpenTelemetry SDK or its OTLP exporter is missing."""
    try:
        import opentelemetry.exporter.otlp.proto.http.trace_exporter  # noqa: F401
        import opentelemetry.sdk.trace  # noqa: F401
    except ImportError as exc:
        raise OtelExportError(f"OpenTelemetry export needs the otel extra, which is not installed: {INSTALL} "
                              f"({exc})") from exc


def _traces_url(endpoint: str) -> str:
    """A base endpoint (as OTEL_EXPORTER_OTLP_ENDPOINT) becomes its traces URL; a full traces URL stays."""
    endpoint = endpoint.rstrip("/")
    return endpoint if endpoint.endswith("/v1/traces") else endpoint + "/v1/traces"


def _where(endpoint: str | None) -> str:
    """The URL the OTLP exporter will send to, for messages."""
    if endpoint:
        return _traces_url(endpoint)
    env = os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
    if env:
        return env
    return _traces_url(os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT", "http://localhost:4318"))


def _env_int(names: Sequence[str]) -> int | None:
    """The first of these variables that holds an integer."""
    for name in names:
        value = os.environ.get(name, "").strip()
        if value.isdigit():
            return int(value)
    return None


def _max_length() -> int:
    """The attribute value length limit: `OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT`, `OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT`
    or MAX_LENGTH."""
    found = _env_int(LENGTH_VARS)
    return MAX_LENGTH if found is None else found


def _cut(value: Any, limit: int) -> Any:
    """A string longer than `limit` cut to `limit` characters, ending in a marker saying how long it was."""
    if isinstance(value, str) and len(value) > limit:
        marker = f"…[truncated: {len(value)} chars]"
        return (value[:max(0, limit - len(marker))] + marker)[:limit]
    if isinstance(value, (list, tuple)):
        return [_cut(v, limit) for v in value]
    return value


def _hidden(flag: bool | None, *names: str) -> bool:
    """An explicit flag, else whether any of OpenInference's variables says `true`."""
    if flag is not None:
        return flag
    return any(os.environ.get(n, "").strip().lower() == "true" for n in names)


def _shape(attributes: dict[str, Any], limit: int, hide: tuple[str, ...]) -> dict[str, Any]:
    """The attributes to send: hidden keys left out, values cut, the span kind last (the SDK drops the oldest)."""
    out: dict[str, Any] = {}
    for k, v in attributes.items():
        if k == KIND or (hide and k.startswith(hide)):
            continue
        # most values are short strings or numbers, passed as they are (this runs for every attribute)
        out[k] = _cut(v, limit) if isinstance(v, (list, tuple)) or (isinstance(v, str) and len(v) > limit) else v
    if KIND in attributes:
        out[KIND] = attributes[KIND]
    return out


def _hide(hide_inputs: bool | None, hide_outputs: bool | None) -> tuple[str, ...]:
    """The attribute key prefixes to leave out, from the flags or the `OPENINFERENCE_HIDE_*` variables."""
    hide: tuple[str, ...] = ()
    if _hidden(hide_inputs, "OPENINFERENCE_HIDE_INPUTS"):
        hide += INPUT_KEYS
    elif _hidden(None, "OPENINFERENCE_HIDE_INPUT_MESSAGES"):
        hide += ("llm.input_messages.",)
    if _hidden(hide_outputs, "OPENINFERENCE_HIDE_OUTPUTS"):
        hide += OUTPUT_KEYS
    elif _hidden(None, "OPENINFERENCE_HIDE_OUTPUT_MESSAGES"):
        hide += ("llm.output_messages.",)
    return hide


def _emit(plans: Sequence[SpanPlan], tracer: Any, hide: tuple[str, ...] = ()) -> None:
    """Start and end every planned span with its own times, a parent always before its children."""
    from opentelemetry import trace as ot
    from opentelemetry.trace import Status, StatusCode

    limit = _max_length()
    made: list[Any] = []
    for p in plans:
        ctx = ot.set_span_in_context(made[p.parent]) if p.parent is not None else None
        span = tracer.start_span(p.name, context=ctx, start_time=int(p.start * 1e9),
                                 attributes=_shape(p.attributes, limit, hide))
        for name, at, attrs in p.events:
            span.add_event(name, attributes=_shape(attrs, limit, ()), timestamp=int(at * 1e9))
        if p.error:
            span.set_status(Status(StatusCode.ERROR, p.error))
        made.append(span)
    for span, p in zip(made, plans, strict=True):    # ended after all are started: a parent's end time is already known
        span.end(end_time=int(p.end * 1e9))


def export_events(events: Sequence[Event], start: float, *, endpoint: str | None = None, exporter: Any = None,
                  tracer_provider: Any = None, headers: dict[str, str] | None = None, hide_inputs: bool | None = None,
                  hide_outputs: bool | None = None) -> int:
    """Export a run's events (its wall-clock `start` in epoch seconds) as spans; return how many were made."""
    require_otel()
    plans = plan_spans(events, start)
    hide = _hide(hide_inputs, hide_outputs)
    if tracer_provider is not None:
        _emit(plans, tracer_provider.get_tracer("ladr_lab"), hide)
        flush = getattr(tracer_provider, "force_flush", None)
        if callable(flush):
            flush()
        return len(plans)
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import ReadableSpan, SpanLimits, SpanProcessor, TracerProvider
    from opentelemetry.sdk.trace.export import SpanExportResult

    ended: list[ReadableSpan] = []

    class _Collect(SpanProcessor):
        def on_end(self, span: ReadableSpan) -> None:
            ended.append(span)

    limits = SpanLimits(max_span_attributes=None if _env_int(COUNT_VARS) is not None else MAX_ATTRIBUTES,
                        max_span_attribute_length=_max_length())
    provider = TracerProvider(resource=Resource.create({"service.name": os.environ.get("OTEL_SERVICE_NAME",
                                                                                       "ladr_lab")}),
                              span_limits=limits)
    provider.add_span_processor(_Collect())
    _emit(plans, provider.get_tracer("ladr_lab"), hide)
    provider.shutdown()
    if exporter is None:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        exporter = OTLPSpanExporter(endpoint=_traces_url(endpoint) if endpoint else None, headers=headers)
        own = True
    else:
        own = False
    try:
        for i in range(0, len(ended), BATCH):
            if exporter.export(ended[i:i + BATCH]) != SpanExportResult.SUCCESS:
                where = _where(endpoint) if own else type(exporter).__name__
                raise OtelExportError(f"could not export {len(ended) - i} of {len(ended)} span(s) to {where} "
                                      "(is an OTLP/HTTP receiver listening there? set OTEL_EXPORTER_OTLP_ENDPOINT)")
    finally:
        if own:
            exporter.shutdown()
    return len(ended)


def _recorded_start(events: Sequence[Event]) -> float | None:
    """The wall-clock start the top-level `run_start` recorded (`started_at`, epoch seconds), if it did."""
    for e in events:
        if isinstance(e, RunStart) and not e.caller:
            at = e.get("started_at")
            if isinstance(at, (int, float)) and not isinstance(at, bool):
                return float(at) - (e.t or 0.0)
            return None
    return None


def _start_of(source: Any, events: Sequence[Event]) -> float:
    """The run's recorded start; else a saved trace began its last event's `t` before the file was last written,
    anything else before now."""
    recorded = _recorded_start(events)
    if recorded is not None:
        return recorded
    last = max((e.t or 0.0 for e in events), default=0.0)
    if isinstance(source, (str, Path)) and Path(source).exists():
        return Path(source).stat().st_mtime - last
    return time.time() - last


def export(trace: Trace | str | Path | Any, *, endpoint: str | None = None, start: float | None = None,
           exporter: Any = None, tracer_provider: Any = None, headers: dict[str, str] | None = None,
           hide_inputs: bool | None = None, hide_outputs: bool | None = None) -> int:
    """Export a run (a Trace, a Run, or a JSONL trace's path) as OpenTelemetry spans; return how many were made."""
    require_otel()
    events = list(Trace.of(trace))
    return export_events(events, _start_of(trace, events) if start is None else start, endpoint=endpoint,
                         exporter=exporter, tracer_provider=tracer_provider, headers=headers,
                         hide_inputs=hide_inputs, hide_outputs=hide_outputs)


class OtelExport:
    """A trace listener that exports the run when its top-level `run_end` arrives (what `Run(otel=True)` attaches).

    `spans` counts what the last export made; an export that fails is the listener's failure: the run goes on,
    and `Trace.listener_errors` keeps the OtelExportError."""

    def __init__(self, *, endpoint: str | None = None, exporter: Any = None, tracer_provider: Any = None,
                 headers: dict[str, str] | None = None, on_export: Callable[[int], Any] | None = None,
                 hide_inputs: bool | None = None, hide_outputs: bool | None = None) -> None:
        require_otel()
        self.endpoint, self.exporter, self.tracer_provider, self.headers = endpoint, exporter, tracer_provider, headers
        self.hide_inputs, self.hide_outputs = hide_inputs, hide_outputs
        self.on_export = on_export
        self.events: list[Event] = []
        self.start: float | None = None
        self.spans = 0

    def __call__(self, event: Event) -> None:
        if self.start is None:
            self.start = _recorded_start([event])
            if self.start is None:
                self.start = time.time() - (event.t or 0.0)
        self.events.append(event)
        if isinstance(event, RunEnd) and not event.depth:
            events, self.events = self.events, []
            self.spans = export_events(events, self.start, endpoint=self.endpoint, exporter=self.exporter,
                                       tracer_provider=self.tracer_provider, headers=self.headers,
                                       hide_inputs=self.hide_inputs, hide_outputs=self.hide_outputs)
            self.start = None
            if self.on_export is not None:
                self.on_export(self.spans)
