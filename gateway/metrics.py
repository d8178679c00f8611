"""Prometheus metrics (``GET /metrics``), on a registry per app so tests can run several apps.

The two counters bumped for every upstream event and every write (:attr:`Metrics.upstream_events`,
:attr:`Metrics.chunks_out`) are plain integers read by a custom collector at scrape time: a
``prometheus_client.Counter`` takes a lock on each ``inc``, which on a sparse stream costs more
than translating the event. The gateway is single-threaded, so plain adds are exact.
"""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily
from prometheus_client.registry import Collector

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
        #: SSE events written (chunks and ``[DONE]``); add to it, the collector reports it.
        self.chunks_out = 0
        #: Upstream events received; add to it, the collector reports it.
        self.upstream_events = 0
        registry.register(_HotCounters(self))
        self.upstream_errors = Counter(
            "chunkbridge_upstream_errors", "Upstream failures by kind", ["kind"], registry=registry
        )
        self.internal_errors = Counter(
            "chunkbridge_internal_errors",
            "Failures of the gateway itself (an exception in translation or request handling)",
            registry=registry,
        )
        self.unknown_events = Counter(
            "chunkbridge_unknown_events", "Upstream events with no mapping", registry=registry
        )
        self.approvals = Counter(
            "chunkbridge_approvals",
            "Tool approvals: requested of the app, approved, denied, refused (not issued in "
            "the session, already answered, a bad signature)",
            ["event"],
            registry=registry,
        )
        self.stream_outcomes = Counter(
            "chunkbridge_stream_outcomes", "Streams by close reason", ["reason"], registry=registry
        )
        self._stores_and_tools(registry)
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

    def _stores_and_tools(self, registry: CollectorRegistry) -> None:
        """What the turns' collaborators report: the transcript store and the tool servers."""
        self.transcript_writes = Counter(
            "chunkbridge_transcript_writes",
            "Transcript writes: written, retried (the database failed, tried again), failed "
            "(given up, reported)",
            ["outcome"],
            registry=registry,
        )
        self.transcript_rows_skipped = Counter(
            "chunkbridge_transcript_rows_skipped",
            "Stored messages that did not load (corrupt, or from a newer format)",
            registry=registry,
        )
        self.tool_servers_up = Gauge(
            "chunkbridge_tool_servers_up",
            "MCP tool servers connected (1) or down, being started again (0)",
            ["server"],
            registry=registry,
        )
        self.tool_server_downs = Counter(
            "chunkbridge_tool_server_downs",
            "Times an MCP tool server was found down (its process exited, no answer)",
            ["server"],
            registry=registry,
        )
        self.takeovers = Counter(
            "chunkbridge_turn_takeovers",
            "Durable turns this instance took over (their instance died, or handed them over)",
            registry=registry,
        )
        self.interrupted_calls = Counter(
            "chunkbridge_interrupted_calls",
            "Tool calls a takeover found without a result: run again (replayed) or ended "
            "with an error (refused: their replay policy forbids it)",
            ["decision"],
            registry=registry,
        )
        self.recoveries_exhausted = Counter(
            "chunkbridge_turn_recoveries_exhausted",
            "Durable turns ended with an error after max_recoveries takeovers at one point",
            registry=registry,
        )
        self.busy = Counter(
            "chunkbridge_busy",
            "New user messages sent to a busy session (busy): queued, refused (full: queue_max "
            "wait already; stale: expectedTurnId is not the newest answer), then what became "
            "of the queued — ran, timeout, left (the client went away), steered (one steered "
            "the running loop turn)",
            ["event"],
            registry=registry,
        )

    def render(self) -> bytes:
        return generate_latest(self.registry)


class _HotCounters(Collector):
    """Reports :class:`Metrics`' plain-integer counters as Prometheus counters."""

    def __init__(self, metrics: Metrics) -> None:
        self.metrics = metrics

    def collect(self) -> Iterator[CounterMetricFamily]:
        yield CounterMetricFamily(
            "chunkbridge_chunks_out",
            "SSE events written (chunks and [DONE])",
            value=self.metrics.chunks_out,
        )
        yield CounterMetricFamily(
            "chunkbridge_upstream_events",
            "Upstream events received",
            value=self.metrics.upstream_events,
        )
