"""The demo's trace view (``chunkbridge demo --telemetry otlp``): the spans of the gateway's
recent turns kept in memory and served at ``/demo/traces/{trace_id}``, so the page can draw the
trace of each request it sent (it sends a W3C ``traceparent``, as a browser's instrumentation
would). With ``OTEL_EXPORTER_OTLP_ENDPOINT`` (or ``…_TRACES_ENDPOINT``) set the spans also go to
that collector over OTLP/HTTP, as ``serve`` sends them; without, nothing leaves the process.

It installs the process's tracer provider before the app starts, which the gateway then keeps
(:func:`~chunkbridge.gateway.telemetry_sdk.install_sdk` leaves a provider it finds). Imported
only with telemetry on: it needs the ``otel`` extra.
"""

from __future__ import annotations

import os
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any

from opentelemetry import metrics, trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import (
    BatchSpanProcessor,
    SimpleSpanProcessor,
    SpanExporter,
    SpanExportResult,
)
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from chunkbridge.gateway.telemetry_sdk import service_resource

__all__ = ["SpanRecorder", "install_recorder"]

#: Traces kept (the oldest is forgotten first); a demo page shows one at a time.
MAX_TRACES = 200
#: Spans kept per trace (a long agent turn has a few dozen).
MAX_SPANS = 500


def collector_endpoint(signal: str = "TRACES") -> str | None:
    """The collector the standard variables name for ``signal`` (``TRACES``, ``METRICS``)."""
    return os.environ.get(f"OTEL_EXPORTER_OTLP_{signal}_ENDPOINT") or os.environ.get(
        "OTEL_EXPORTER_OTLP_ENDPOINT"
    )


class SpanRecorder(SpanExporter):
    """The finished spans of the last :data:`MAX_TRACES` traces, by trace id, as the page
    draws them (times in ns since the epoch, attributes as they were set)."""

    def __init__(self) -> None:
        self.traces: OrderedDict[str, list[dict[str, Any]]] = OrderedDict()

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        for span in spans:
            trace_id = f"{span.context.trace_id:032x}"
            kept = self.traces.get(trace_id)
            if kept is None:
                kept = self.traces[trace_id] = []
                while len(self.traces) > MAX_TRACES:
                    self.traces.popitem(last=False)
            if len(kept) < MAX_SPANS:
                kept.append(_drawn(span))
        return SpanExportResult.SUCCESS

    def routes(self) -> list[Route]:
        async def trace(request: Request) -> Response:
            spans = self.traces.get(request.path_params["trace_id"].lower())
            if spans is None:
                return JSONResponse({"spans": []}, status_code=404)
            return JSONResponse({"spans": spans})

        return [Route("/demo/traces/{trace_id:str}", trace, methods=["GET"])]


def _drawn(span: ReadableSpan) -> dict[str, Any]:
    assert span.context is not None  # a finished SDK span has one
    parent = span.parent.span_id if span.parent is not None else None
    return {
        "name": span.name,
        "kind": span.kind.name,
        "span_id": f"{span.context.span_id:016x}",
        "parent_id": None if parent is None else f"{parent:016x}",
        "start": span.start_time,
        "end": span.end_time,
        "status": span.status.status_code.name,
        "attributes": {k: _plain(v) for k, v in (span.attributes or {}).items()},
        "events": [
            {"name": e.name, "time": e.timestamp, "attributes": dict(e.attributes or {})}
            for e in span.events
        ],
        "links": [f"{link.context.trace_id:032x}" for link in span.links],
    }


def _plain(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


def install_recorder(service: str = "chunkbridge-demo") -> tuple[SpanRecorder, Callable[[], None]]:
    """This process's tracer provider: every span to a :class:`SpanRecorder` (at once: a demo
    turn's trace is drawn when it ends), and to the collector of the ``OTEL_*`` variables when
    one is named; the meter provider likewise (no readers without a collector). Returns the
    recorder and the providers' shutdown."""
    resource = service_resource(service)
    recorder = SpanRecorder()
    provider = TracerProvider(resource=resource)
    provider.add_span_processor(SimpleSpanProcessor(recorder))
    readers: list[Any] = []
    if collector_endpoint("TRACES") is not None:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    if collector_endpoint("METRICS") is not None:
        from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
        from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader

        readers.append(PeriodicExportingMetricReader(OTLPMetricExporter()))
    meters = MeterProvider(resource=resource, metric_readers=readers)
    trace.set_tracer_provider(provider)
    metrics.set_meter_provider(meters)

    def shutdown() -> None:
        provider.shutdown()
        meters.shutdown()

    return recorder, shutdown
