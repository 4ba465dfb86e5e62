"""OpenTelemetry export of runs (the `otel` extra): a trace, live or saved, becomes spans over OTLP/HTTP.

`export(trace)` sends a Trace, a Run or a JSONL trace; `Run(otel=True)` (`ladr-lab run --otel`) exports when
the run ends, through the application's tracer provider when it set one, with each model call made inside its round's
span (so an instrumented litellm's spans join the run's trace). The span tree (run → step → node → round → fetch, with gates, writes and child runs) is planned
in `spans.py` without OpenTelemetry; `export.py` imports the SDK only inside its functions, so importing
ladr_lab (or this package) imports no OpenTelemetry. docs/otel.md maps every event to its span and attributes.
"""
from .export import (
    DOCUMENT_CHARS,
    INSTALL,
    OtelExport,
    OtelExportError,
    export,
    export_events,
    global_provider,
    receiver_problem,
    require_otel,
)
from .spans import PREFIX, SpanPlan, plan_spans, round_key

__all__ = ["DOCUMENT_CHARS", "INSTALL", "OtelExport", "OtelExportError", "PREFIX", "SpanPlan", "export",
           "export_events", "global_provider", "plan_spans", "receiver_problem", "require_otel", "round_key"]
