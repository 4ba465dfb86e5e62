"""Export a run's trace as OpenTelemetry spans over OTLP/HTTP (the `otel` extra), after the run or live.

`export(trace)` turns a Trace, a Run or a saved JSONL trace into the span tree of `spans.py` and sends it to
the endpoint the standard `OTEL_EXPORTER_OTLP_*` variables name (or `endpoint=`), through a tracer provider
of its own made per export, so a user's global provider is never touched (pass `tracer_provider=` to use
yours). `OtelExport` is the listener `Run(otel=True)` attaches: it exports when the run ends.
OpenTelemetry is imported only inside these functions.
"""
from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ..errors import LadrError
from ..trace import Event, RunEnd, Trace
from .spans import SpanPlan, plan_spans

__all__ = ["INSTALL", "OtelExport", "OtelExportError", "export", "export_events", "require_otel"]

INSTALL = 'pip install "ladr_lab[otel]"'
BATCH = 512           # spans per OTLP request


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


def _emit(plans: Sequence[SpanPlan], tracer: Any) -> None:
    """Start and end every planned span with its own times, a parent always before its children."""
    from opentelemetry import trace as ot
    from opentelemetry.trace import Status, StatusCode

    made: list[Any] = []
    for p in plans:
        ctx = ot.set_span_in_context(made[p.parent]) if p.parent is not None else None
        span = tracer.start_span(p.name, context=ctx, start_time=int(p.start * 1e9), attributes=p.attributes)
        for name, at, attrs in p.events:
            span.add_event(name, attributes=attrs, timestamp=int(at * 1e9))
        if p.error:
            span.set_status(Status(StatusCode.ERROR, p.error))
        made.append(span)
    for span, p in zip(made, plans, strict=True):    # ended after all are started: a parent's end time is already known
        span.end(end_time=int(p.end * 1e9))


def export_events(events: Sequence[Event], start: float, *, endpoint: str | None = None, exporter: Any = None,
                  tracer_provider: Any = None, headers: dict[str, str] | None = None) -> int:
    """Export a run's events (its wall-clock `start` in epoch seconds) as spans; return how many were made."""
    require_otel()
    plans = plan_spans(events, start)
    if tracer_provider is not None:
        _emit(plans, tracer_provider.get_tracer("ladr_lab"))
        flush = getattr(tracer_provider, "force_flush", None)
        if callable(flush):
            flush()
        return len(plans)
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider
    from opentelemetry.sdk.trace.export import SpanExportResult

    ended: list[ReadableSpan] = []

    class _Collect(SpanProcessor):
        def on_end(self, span: ReadableSpan) -> None:
            ended.append(span)

    provider = TracerProvider(resource=Resource.create({"service.name": os.environ.get("OTEL_SERVICE_NAME",
                                                                                       "ladr_lab")}))
    provider.add_span_processor(_Collect())
    _emit(plans, provider.get_tracer("ladr_lab"))
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


def _start_of(source: Any, events: Sequence[Event]) -> float:
    """A saved trace began its last event's `t` before the file was last written; anything else, before now."""
    last = max((e.t or 0.0 for e in events), default=0.0)
    if isinstance(source, (str, Path)) and Path(source).exists():
        return Path(source).stat().st_mtime - last
    return time.time() - last


def export(trace: Trace | str | Path | Any, *, endpoint: str | None = None, start: float | None = None,
           exporter: Any = None, tracer_provider: Any = None, headers: dict[str, str] | None = None) -> int:
    """Export a run (a Trace, a Run, or a JSONL trace's path) as OpenTelemetry spans; return how many were made."""
    require_otel()
    events = list(Trace.of(trace))
    return export_events(events, _start_of(trace, events) if start is None else start, endpoint=endpoint,
                         exporter=exporter, tracer_provider=tracer_provider, headers=headers)


class OtelExport:
    """A trace listener that exports the run when its top-level `run_end` arrives (what `Run(otel=True)` attaches).

    `spans` counts what the last export made; an export that fails is the listener's failure: the run goes on,
    and `Trace.listener_errors` keeps the OtelExportError."""

    def __init__(self, *, endpoint: str | None = None, exporter: Any = None, tracer_provider: Any = None,
                 headers: dict[str, str] | None = None, on_export: Callable[[int], Any] | None = None) -> None:
        require_otel()
        self.endpoint, self.exporter, self.tracer_provider, self.headers = endpoint, exporter, tracer_provider, headers
        self.on_export = on_export
        self.events: list[Event] = []
        self.start: float | None = None
        self.spans = 0

    def __call__(self, event: Event) -> None:
        if self.start is None:
            self.start = time.time() - (event.t or 0.0)
        self.events.append(event)
        if isinstance(event, RunEnd) and not event.depth:
            events, self.events = self.events, []
            self.spans = export_events(events, self.start, endpoint=self.endpoint, exporter=self.exporter,
                                       tracer_provider=self.tracer_provider, headers=self.headers)
            self.start = None
            if self.on_export is not None:
                self.on_export(self.spans)
