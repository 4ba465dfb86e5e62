"""Export a run's trace as OpenTelemetry spans over OTLP/HTTP (the `otel` extra), after the run or live.

`export(trace)` turns a Trace, a Run or a saved JSONL trace into the span tree of `spans.py` and sends it: through
`tracer_provider=` when given; else through the tracer provider the application set globally (`phoenix.otel.register()`,
a Langfuse or logfire `configure()`, `opentelemetry-instrument`), when one is set and neither `endpoint=` nor
`exporter=` names another place; else through a provider of its own made per export, to the endpoint the standard
`OTEL_EXPORTER_OTLP_*` variables name (or `endpoint=`). `OtelExport` is the listener `Run(otel=True)` attaches: it
exports when the run ends, and while the model is called it makes the round's span current (`model_call`): the span
ids are chosen before the call, so a span an instrumented library makes during the call (openinference's litellm
instrumentor) is the round's child, in the run's trace. Every span ends with status OK, or ERROR and its error.

Attribute values are cut at a length limit (`MAX_LENGTH`, or the standard variables) with a marker; a document's
content at `DOCUMENT_CHARS` (`LADR_OTEL_DOCUMENT_CHARS`, `document_chars=`; 0 sends none); OpenInference's
`OPENINFERENCE_HIDE_*` variables (or `hide_inputs=` / `hide_outputs=`) leave prompts, documents and outputs out, and
`content=False` (`LADR_OTEL_NO_CONTENT=true`, `--otel-no-content`) every text a run read or wrote. OpenTelemetry is
imported only inside these functions.
"""
from __future__ import annotations

import contextlib
import json
import os
import random
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import LadrError
from ..trace import Event, RunEnd, RunStart, Trace
from .spans import CONTENT, KIND, PREFIX, RoundKey, SpanPlan, plan_spans, round_key

__all__ = ["DOCUMENT_CHARS", "DOCUMENT_VAR", "INSTALL", "MAX_ATTRIBUTES", "MAX_LENGTH", "NO_CONTENT_VAR", "OtelExport",
           "OtelExportError", "export", "export_events", "global_provider", "receiver_problem", "require_otel"]

INSTALL = 'pip install "ladr_lab[otel]"'
BATCH = 512           # spans per OTLP request
MAX_LENGTH = 16_384   # characters of an attribute value (each string of a list), unless a standard variable says
MAX_ATTRIBUTES = 1024  # attributes per span of the export's own provider (the SDK's default is 128)
DOCUMENT_CHARS = 4_000  # characters of a retrieved document's content on a fetch span, unless DOCUMENT_VAR says
DOCUMENT_VAR = "LADR_OTEL_DOCUMENT_CHARS"
NO_CONTENT_VAR = "LADR_OTEL_NO_CONTENT"
LENGTH_VARS = ("OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT", "OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT")
COUNT_VARS = ("OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT", "OTEL_ATTRIBUTE_COUNT_LIMIT")
INPUT_KEYS = ("input.value", "input.mime_type", "llm.input_messages.")
OUTPUT_KEYS = ("output.value", "output.mime_type", "llm.output_messages.", "ladr.request")
# the texts besides inputs and outputs that may quote what a run read or wrote (a schema error names the value)
REASON_KEYS = ("ladr.verdict.message", "ladr.verdict.reason", "ladr.gate.reason", "ladr.write.reason",
               "ladr.call.reason", "ladr.run.error")
_INSTALLING = threading.Lock()


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


def global_provider() -> Any:
    """The tracer provider the application set (`trace.set_tracer_provider`, `phoenix.otel.register()`, ...), or None
    when none is set (OpenTelemetry's proxy stands in) or it is the no-op one."""
    from opentelemetry import trace as ot
    provider = ot.get_tracer_provider()
    if isinstance(provider, (ot.ProxyTracerProvider, ot.NoOpTracerProvider)):
        return None
    return provider


def receiver_problem(endpoint: str | None = None, timeout: float = 3.0) -> str | None:
    """Why spans sent by an export's own provider (to `endpoint`, else the standard variables' URL) could not arrive:
    nothing accepts a connection there (a TCP connect, nothing sent); None when something listens."""
    import socket
    from urllib.parse import urlsplit
    url = _where(endpoint)
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return f"the OTLP endpoint {url!r} is not an http(s) URL"
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
        with socket.create_connection((parts.hostname, port), timeout=timeout):
            return None
    except (OSError, ValueError) as exc:
        return f"no OTLP/HTTP receiver answers at {url} ({exc})"


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
    """An explicit flag, else whether any of these variables says `true`."""
    if flag is not None:
        return flag
    return any(os.environ.get(n, "").strip().lower() == "true" for n in names)


@dataclass(frozen=True)
class _Shaping:
    """What an export sends of each attribute: the key prefixes left out, the value length limit, and the characters
    of a document's content (0: none)."""

    hide: tuple[str, ...]
    limit: int
    document_chars: int

    @classmethod
    def of(cls, hide_inputs: bool | None = None, hide_outputs: bool | None = None, content: bool | None = None,
           document_chars: int | None = None) -> _Shaping:
        """The shaping the flags say, each flag that is None read from its variable."""
        no_content = not content if content is not None else _hidden(None, NO_CONTENT_VAR)
        hide: tuple[str, ...] = ()
        inputs = no_content or _hidden(hide_inputs, "OPENINFERENCE_HIDE_INPUTS")
        if inputs:
            hide += INPUT_KEYS
        elif _hidden(None, "OPENINFERENCE_HIDE_INPUT_MESSAGES"):
            hide += ("llm.input_messages.",)
        if no_content or _hidden(hide_outputs, "OPENINFERENCE_HIDE_OUTPUTS"):
            hide += OUTPUT_KEYS
        elif _hidden(None, "OPENINFERENCE_HIDE_OUTPUT_MESSAGES"):
            hide += ("llm.output_messages.",)
        if no_content:
            hide += REASON_KEYS
        if _hidden(None, "OPENINFERENCE_HIDE_LLM_INVOCATION_PARAMETERS"):
            hide += ("llm.invocation_parameters",)
        if document_chars is None:
            found = _env_int((DOCUMENT_VAR,))
            document_chars = DOCUMENT_CHARS if found is None else found
        # a document is text of the prompt that showed it: hiding the inputs hides it too
        return cls(hide, _max_length(), 0 if inputs else max(0, int(document_chars)))

    def shape(self, attributes: Mapping[str, Any]) -> dict[str, Any]:
        """The attributes to send: hidden keys left out, values cut, ladr_lab's own first and the span kind last (a
        provider that must drop attributes drops the oldest: ladr.* before OpenInference's, never the kind)."""
        own: dict[str, Any] = {}
        out: dict[str, Any] = {}
        hide, limit = self.hide, self.limit
        for k, v in attributes.items():
            if k == KIND or (hide and k.startswith(hide)):
                continue
            if k.endswith(CONTENT):
                if not self.document_chars:
                    continue
                v = _cut(v, min(limit, self.document_chars))
            elif isinstance(v, (list, tuple)) or (isinstance(v, str) and len(v) > limit):
                # most values are short strings or numbers, passed as they are (this runs for every attribute)
                v = _cut(v, limit)
            (own if k.startswith(PREFIX) else out)[k] = v
        own.update(out)
        if KIND in attributes:
            own[KIND] = attributes[KIND]
        return own


class _PlannedIds:
    """A tracer's id generator that hands out the ids an export chose in advance (on the exporting thread only), and
    its original's otherwise: so the spans of a live run keep the ids the model calls' context already named."""

    def __init__(self, original: Any) -> None:
        self.original = original
        self.local = threading.local()

    def plan(self, trace_id: int | None, span_id: int | None) -> None:
        """The ids the next span made on this thread gets (None: the original generator's)."""
        self.local.trace_id, self.local.span_id = trace_id, span_id

    def generate_trace_id(self) -> int:
        """The planned trace id, else a new one."""
        return getattr(self.local, "trace_id", None) or self.original.generate_trace_id()

    def generate_span_id(self) -> int:
        """The planned span id, else a new one."""
        return getattr(self.local, "span_id", None) or self.original.generate_span_id()

    def is_trace_id_random(self) -> bool:
        """Planned trace ids are random (`_new_trace_id`); others are as random as the original's."""
        if getattr(self.local, "trace_id", None):
            return True
        check = getattr(self.original, "is_trace_id_random", None)
        return bool(check()) if callable(check) else False


def _planned_ids(tracer: Any) -> _PlannedIds | None:
    """The tracer's planning id generator, installed on first use; None for a tracer without one (not the SDK's)."""
    with _INSTALLING:
        gen = getattr(tracer, "id_generator", None)
        if gen is None:
            return None
        if not isinstance(gen, _PlannedIds):
            gen = _PlannedIds(gen)
            tracer.id_generator = gen
        return gen


def _new_trace_id() -> int:
    """A random 128-bit trace id (never 0, which OpenTelemetry reads as invalid)."""
    return random.getrandbits(128) or 1


def _new_span_id() -> int:
    """A random 64-bit span id (never 0)."""
    return random.getrandbits(64) or 1


def _emit(plans: Sequence[SpanPlan], tracer: Any, shaping: _Shaping, trace_id: int | None = None) -> int | None:
    """Start and end every planned span with its own times (a parent always before its children), with the ids chosen
    in advance when the tracer lets them be chosen; each ends with status OK or ERROR. Return the trace id made."""
    from opentelemetry import trace as ot
    from opentelemetry.trace import Status, StatusCode

    ids = _planned_ids(tracer) if trace_id is not None or any(p.span_id for p in plans) else None
    made: list[Any] = []
    try:
        for p in plans:
            if ids is not None:
                ids.plan(trace_id if p.parent is None else None, p.span_id)
            ctx = ot.set_span_in_context(made[p.parent]) if p.parent is not None else None
            span = tracer.start_span(p.name, context=ctx, start_time=int(p.start * 1e9),
                                     attributes=shaping.shape(p.attributes))
            for name, at, attrs in p.events:
                span.add_event(name, attributes=shaping.shape(attrs), timestamp=int(at * 1e9))
            span.set_status(Status(StatusCode.ERROR, p.error) if p.error else Status(StatusCode.OK))
            made.append(span)
    finally:
        if ids is not None:
            ids.plan(None, None)
    for span, p in zip(made, plans, strict=True):    # ended after all are started: a parent's end time is already known
        span.end(end_time=int(p.end * 1e9))
    return made[0].get_span_context().trace_id if made else None


def _with_root(plans: list[SpanPlan], attributes: Mapping[str, Any] | None) -> list[SpanPlan]:
    """The plans, with `attributes` added to the root span's (an experiment's tags)."""
    if attributes and plans:
        root = next((p for p in plans if p.parent is None), None)
        if root is not None:
            root.attributes.update({k: _attribute(v) for k, v in attributes.items() if v is not None})
    return plans


def _attribute(value: Any) -> Any:
    """A value as an attribute can hold it: scalars and lists of strings as they are, anything else as JSON."""
    if isinstance(value, (str, bool, int, float)):
        return value
    if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
        return list(value)
    return json.dumps(value, ensure_ascii=False, default=str)


def export_events(events: Sequence[Event], start: float, *, endpoint: str | None = None, exporter: Any = None,
                  tracer_provider: Any = None, headers: dict[str, str] | None = None, hide_inputs: bool | None = None,
                  hide_outputs: bool | None = None, content: bool | None = None, document_chars: int | None = None,
                  attributes: Mapping[str, Any] | None = None, trace_id: int | None = None,
                  ids: dict[RoundKey, int] | None = None) -> int:
    """Export a run's events (its wall-clock `start` in epoch seconds) as spans; return how many were made.
    `attributes` are added to the root span; `trace_id` and `ids` (round span ids by `round_key`) are the ids a live
    run chose in advance."""
    return _export(events, start, endpoint=endpoint, exporter=exporter, tracer_provider=tracer_provider,
                   headers=headers, shaping=_Shaping.of(hide_inputs, hide_outputs, content, document_chars),
                   attributes=attributes, trace_id=trace_id, ids=ids)[0]


def _export(events: Sequence[Event], start: float, *, endpoint: str | None, exporter: Any, tracer_provider: Any,
            headers: dict[str, str] | None, shaping: _Shaping, attributes: Mapping[str, Any] | None,
            trace_id: int | None, ids: dict[RoundKey, int] | None) -> tuple[int, int | None]:
    """`export_events`, returning the span count and the trace id the spans got."""
    require_otel()
    plans = _with_root(plan_spans(events, start, ids), attributes)
    if tracer_provider is None and exporter is None and endpoint is None:
        tracer_provider = global_provider()
    if tracer_provider is not None:
        made = _emit(plans, tracer_provider.get_tracer("ladr_lab"), shaping, trace_id)
        flush = getattr(tracer_provider, "force_flush", None)
        if callable(flush):
            flush()
        return len(plans), made
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
    made = _emit(plans, provider.get_tracer("ladr_lab"), shaping, trace_id)
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
    return len(ended), made


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
           hide_inputs: bool | None = None, hide_outputs: bool | None = None, content: bool | None = None,
           document_chars: int | None = None, attributes: Mapping[str, Any] | None = None) -> int:
    """Export a run (a Trace, a Run, or a JSONL trace's path) as OpenTelemetry spans; return how many were made."""
    require_otel()
    events = list(Trace.of(trace))
    return export_events(events, _start_of(trace, events) if start is None else start, endpoint=endpoint,
                         exporter=exporter, tracer_provider=tracer_provider, headers=headers,
                         hide_inputs=hide_inputs, hide_outputs=hide_outputs, content=content,
                         document_chars=document_chars, attributes=attributes)


class OtelExport:
    """A trace listener that exports the run when its top-level `run_end` arrives (what `Run(otel=True)` attaches),
    and makes each round's span current while its model call is made (`model_call`, which `Run` enters).

    `spans` counts what the last export made and `trace_id` is its trace id (32 hex digits); an export that fails is
    the listener's failure: the run goes on, and `Trace.listener_errors` keeps the OtelExportError. With `defer=True`
    the run's spans wait for `flush()` (an experiment adds the cell's assertion results to the root span first)."""

    def __init__(self, *, endpoint: str | None = None, exporter: Any = None, tracer_provider: Any = None,
                 headers: dict[str, str] | None = None, on_export: Callable[[int], Any] | None = None,
                 hide_inputs: bool | None = None, hide_outputs: bool | None = None, content: bool | None = None,
                 document_chars: int | None = None, attributes: Mapping[str, Any] | None = None,
                 defer: bool = False) -> None:
        require_otel()
        self.endpoint, self.exporter, self.tracer_provider, self.headers = endpoint, exporter, tracer_provider, headers
        self.hide_inputs, self.hide_outputs = hide_inputs, hide_outputs
        self.content, self.document_chars = content, document_chars
        self.attributes = dict(attributes or {})
        self.on_export = on_export
        self.defer = defer
        self.events: list[Event] = []
        self.start: float | None = None
        self.spans = 0
        self.trace_id: str | None = None
        self._trace: int | None = None            # the trace id of the run being recorded
        self._ids: dict[RoundKey, int] = {}       # its rounds' span ids, chosen when their calls were made
        self._lock = threading.Lock()

    @contextlib.contextmanager
    def model_call(self, info: Any) -> Iterator[None]:
        """While the model answers `info` (a CallInfo), the round's span (its id chosen now) is the current span, so a
        span an instrumented client makes during the call is its child, in the run's trace."""
        from opentelemetry import context as otel_context
        from opentelemetry import trace as ot

        key = round_key(info.caller, info.step, info.iteration, info.node, info.round)
        with self._lock:
            if self._trace is None:
                self._trace = _new_trace_id()
            trace_id = self._trace
            span_id = self._ids.setdefault(key, _new_span_id())
        parent = ot.NonRecordingSpan(ot.SpanContext(trace_id, span_id, is_remote=False,
                                                    trace_flags=ot.TraceFlags(ot.TraceFlags.SAMPLED)))
        token = otel_context.attach(ot.set_span_in_context(parent))
        try:
            yield
        finally:
            otel_context.detach(token)

    def __call__(self, event: Event) -> None:
        if self.start is None:
            self.start = _recorded_start([event])
            if self.start is None:
                self.start = time.time() - (event.t or 0.0)
        with self._lock:
            if self._trace is None:
                self._trace = _new_trace_id()
        self.events.append(event)
        if isinstance(event, RunEnd) and not event.depth and not self.defer:
            self.flush()

    def flush(self, attributes: Mapping[str, Any] | None = None) -> int:
        """Export the events recorded so far (a deferred run's, once it ended), with `attributes` added to the root
        span; return how many spans were made (0: nothing recorded)."""
        if not self.events:
            return 0
        with self._lock:
            events, self.events = self.events, []
            trace_id, ids, self._trace, self._ids = self._trace, self._ids, None, {}
        start, self.start = self.start if self.start is not None else time.time(), None
        self.spans, made = _export(events, start, endpoint=self.endpoint, exporter=self.exporter,
                                   tracer_provider=self.tracer_provider, headers=self.headers,
                                   shaping=_Shaping.of(self.hide_inputs, self.hide_outputs, self.content,
                                                       self.document_chars),
                                   attributes={**self.attributes, **(attributes or {})}, trace_id=trace_id, ids=ids)
        self.trace_id = f"{made:032x}" if made else None
        if self.on_export is not None:
            self.on_export(self.spans)
        return self.spans
