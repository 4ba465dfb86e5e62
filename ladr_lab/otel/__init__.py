"""OpenTelemetry export of runs (the `otel` extra): a trace, live or saved, becomes spans over OTLP/HTTP.

`export(trace)` sends a Trace, a Run or a JSONL trace; `Run(otel=True)` (`ladr-lab run --otel`) exports when
the run ends. The span tree (run → step → node → round → fetch, with gates, writes and child runs) is planned
in `spans.py` without OpenTelemetry; `export.py` imports the SDK only inside its functions, so importing
ladr_lab (or this package) imports no OpenTelemetry. docs/otel.md maps every event to its span and attributes.
"""
from .export import INSTALL, OtelExport, OtelExportError, export, export_events, require_otel
from .spans import PREFIX, SpanPlan, plan_spans

__all__ = ["INSTALL", "OtelExport", "OtelExportError", "PREFIX", "SpanPlan", "export", "export_events", "plan_spans",
           "require_otel"]
