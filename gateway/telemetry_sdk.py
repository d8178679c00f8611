"""The OpenTelemetry SDK of a gateway process with ``telemetry = otlp``: OTLP over HTTP.

Everything is read from the standard environment variables — ``OTEL_EXPORTER_OTLP_ENDPOINT``
(or ``…_TRACES_ENDPOINT`` / ``…_METRICS_ENDPOINT``), ``OTEL_EXPORTER_OTLP_HEADERS``,
``OTEL_SERVICE_NAME`` and ``OTEL_RESOURCE_ATTRIBUTES``, ``OTEL_TRACES_SAMPLER`` (and its arg),
``OTEL_METRIC_EXPORT_INTERVAL`` — by the SDK itself. A process that already has an SDK (the
embedding app's, ``opentelemetry-instrument``'s) keeps it: the gateway's spans and metrics go
where the process's others go. Needs the ``otel`` extra (``pip install chunkbridge[otel]``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from opentelemetry import metrics, trace
from opentelemetry.metrics import NoOpMeterProvider
from starlette.middleware import Middleware

from chunkbridge.gateway.config import ConfigError

__all__ = ["SDK_MISSING", "install_sdk", "server_middleware", "service_resource"]

SDK_MISSING = "telemetry = otlp needs the OpenTelemetry SDK: pip install 'chunkbridge[otel]'"


def service_resource(default: str) -> Any:
    """The SDK's resource from ``OTEL_SERVICE_NAME`` and ``OTEL_RESOURCE_ATTRIBUTES``, named
    ``default`` when they name no service (the SDK's own default is ``unknown_service``)."""
    from opentelemetry.sdk.resources import SERVICE_NAME, Resource

    resource = Resource.create()
    if str(resource.attributes.get(SERVICE_NAME, "")).startswith("unknown_service"):
        resource = resource.merge(Resource({SERVICE_NAME: default}))
    return resource


def install_sdk() -> Callable[[], None] | None:
    """Set up the process's tracer and meter providers with OTLP/HTTP exporters, unless it has
    them; the function that flushes and stops them at shutdown (``None``: not ours)."""
    try:
        from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.metrics import MeterProvider
        from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
    except ImportError as exc:
        raise ConfigError(SDK_MISSING) from exc
    shutdowns: list[Callable[[], Any]] = []
    resource = service_resource("chunkbridge")
    if not isinstance(trace.get_tracer_provider(), TracerProvider):
        tracer_provider = TracerProvider(resource=resource)  # the sampler: OTEL_TRACES_SAMPLER
        tracer_provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
        trace.set_tracer_provider(tracer_provider)
        shutdowns.append(tracer_provider.shutdown)
    if not isinstance(metrics.get_meter_provider(), MeterProvider):
        reader = PeriodicExportingMetricReader(OTLPMetricExporter())
        meter_provider = MeterProvider(resource=resource, metric_readers=[reader])
        metrics.set_meter_provider(meter_provider)
        shutdowns.append(meter_provider.shutdown)
    if not shutdowns:
        return None

    def shutdown() -> None:
        for stop in shutdowns:
            stop()

    return shutdown


def server_middleware(default_span_details: Callable[[Any], Any]) -> Middleware:
    """OpenTelemetry's ASGI middleware: the server span of each request (the browser's
    ``traceparent`` is its parent), with no span per ``send`` or ``receive`` — a stream writes
    thousands — and none for health, readiness and metrics (see :class:`_ServerSpans`)."""
    try:
        from opentelemetry.instrumentation.asgi import OpenTelemetryMiddleware  # noqa: F401
    except ImportError as exc:
        raise ConfigError(SDK_MISSING) from exc
    return Middleware(_ServerSpans, default_span_details=default_span_details)


#: Where :class:`_ServerSpans` leaves the ``send`` it was given, in the request's scope.
_DIRECT_SEND = "chunkbridge.direct_send"


class _ServerSpans:
    """OpenTelemetry's ASGI middleware around the app, with two costs taken off a streaming
    gateway: its HTTP server metrics (requests by status and stream durations are Prometheus',
    ``/metrics``; recording them again cost about a tenth of what tracing adds to a short turn)
    and its wrapper of every message sent — the body of a stream goes straight out. The wrapper
    records nothing for a body message that more follows (the status comes with the start, the
    span ends with the last body), and it cost about 4 % of the CPU of a long stream."""

    def __init__(self, app: Any, default_span_details: Callable[[Any], Any]) -> None:
        from opentelemetry.instrumentation.asgi import OpenTelemetryMiddleware

        self.app = app
        self.traced = OpenTelemetryMiddleware(
            self._body_direct,
            excluded_urls="/healthz,/readyz,/metrics",
            default_span_details=default_span_details,
            exclude_spans=["receive", "send"],
            meter_provider=NoOpMeterProvider(),
        )

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            scope = {**scope, _DIRECT_SEND: send}
        await self.traced(scope, receive, send)

    async def _body_direct(self, scope: Any, receive: Any, send: Any) -> None:
        direct = scope.get(_DIRECT_SEND)
        if direct is None:
            await self.app(scope, receive, send)
            return

        async def body_direct(message: Any) -> None:
            if message["type"] == "http.response.body" and message.get("more_body"):
                await direct(message)
            else:
                await send(message)

        await self.app(scope, receive, body_direct)
