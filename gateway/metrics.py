"""Prometheus metrics (``GET /metrics``), on a registry per app so tests can run several apps."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

__all__ = ["Metrics"]

_LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30)
_DURATION_BUCKETS = (0.1, 0.5, 1, 5, 15, 30, 60, 120, 300, 900, 1800)


class Metrics:
    def __init__(self) -> None:
        self.registry = registry = CollectorRegistry()
        self.active_streams = Gauge(
            "chunkbridge_active_streams", "Streams currently open", registry=registry
        )
        self.requests = Counter(
            "chunkbridge_requests", "Chat requests by HTTP status", ["status"], registry=registry
        )
        self.chunks_out = Counter(
            "chunkbridge_chunks_out", "SSE events written (chunks and [DONE])", registry=registry
        )
        self.upstream_events = Counter(
            "chunkbridge_upstream_events", "Upstream events received", registry=registry
        )
        self.upstream_errors = Counter(
            "chunkbridge_upstream_errors", "Upstream failures by kind", ["kind"], registry=registry
        )
        self.unknown_events = Counter(
            "chunkbridge_unknown_events", "Upstream events with no mapping", registry=registry
        )
        self.stream_outcomes = Counter(
            "chunkbridge_stream_outcomes", "Streams by close reason", ["reason"], registry=registry
        )
        self.time_to_first_chunk = Histogram(
            "chunkbridge_time_to_first_chunk_seconds",
            "Request start to the first translated chunk",
            buckets=_LATENCY_BUCKETS,
            registry=registry,
        )
        self.stream_duration = Histogram(
            "chunkbridge_stream_duration_seconds",
            "Request start to the end of the stream",
            buckets=_DURATION_BUCKETS,
            registry=registry,
        )

    def render(self) -> bytes:
        return generate_latest(self.registry)
