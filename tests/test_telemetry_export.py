"""``chunkbridge serve --telemetry otlp`` as deployed: configured by the standard ``OTEL_*``
variables only, it exports its spans and the GenAI metrics to an OTLP/HTTP receiver (a local one,
written here with the OTLP protobuf messages)."""

from __future__ import annotations

import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest

from chunkbridge.gateway.telemetry_sdk import service_resource
from tests.gateway_harness import agent_ops_turn, free_port, user_body
from tests.test_gateway_process import process
from tests.test_telemetry import BROWSER_SPAN, BROWSER_TRACE, TRACEPARENT


class OtlpReceiver(ThreadingHTTPServer):
    """A local OTLP/HTTP receiver (protobuf): keeps each span's name, parent and trace id, the
    resource's service name, and the metric names it was sent."""

    def __init__(self) -> None:
        self.spans: list[tuple[str, bytes, bytes, bytes]] = []
        self.services: set[str] = set()
        self.metrics: set[str] = set()
        super().__init__(("127.0.0.1", 0), _OtlpHandler)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class _OtlpHandler(BaseHTTPRequestHandler):
    server: OtlpReceiver

    def do_POST(self) -> None:  # noqa: N802 (http.server's name)
        from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
            ExportMetricsServiceRequest,
        )
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
            ExportTraceServiceRequest,
        )

        body = self.rfile.read(int(self.headers["content-length"]))
        if self.path == "/v1/traces":
            traces = ExportTraceServiceRequest.FromString(body)
            for resource in traces.resource_spans:
                for attribute in resource.resource.attributes:
                    if attribute.key == "service.name":
                        self.server.services.add(attribute.value.string_value)
                for scope in resource.scope_spans:
                    for span in scope.spans:
                        entry = (span.name, span.trace_id, span.span_id, span.parent_span_id)
                        self.server.spans.append(entry)
        elif self.path == "/v1/metrics":
            exported = ExportMetricsServiceRequest.FromString(body)
            for resource in exported.resource_metrics:
                for scope in resource.scope_metrics:
                    self.server.metrics.update(metric.name for metric in scope.metrics)
        self.send_response(200)
        self.send_header("content-type", "application/x-protobuf")
        self.send_header("content-length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        pass


def test_serve_exports_over_otlp_http(tmp_path: Path) -> None:
    """``serve --telemetry otlp`` configured by the standard variables only: the turn's spans
    and the GenAI metrics reach a local OTLP/HTTP receiver, under the service name given."""
    recording = tmp_path / "turn.jsonl"
    recording.write_text("\n".join(orjson.dumps(e).decode() for e in agent_ops_turn()) + "\n")
    receiver = OtlpReceiver()
    threading.Thread(target=receiver.serve_forever, daemon=True).start()
    up_port, port = free_port(), free_port()
    upstream = f"ws://127.0.0.1:{up_port}/sessions/{{session_id}}/ws"
    env = {
        "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url,
        "OTEL_SERVICE_NAME": "gateway-under-test",
        "OTEL_BSP_SCHEDULE_DELAY": "100",
        "OTEL_METRIC_EXPORT_INTERVAL": "300",
    }
    try:
        with (
            process("mock-upstream", "--port", str(up_port), str(recording), ready_line="mock"),
            process(
                *("serve", "--port", str(port), "--dialect", "agent-ops-v2"),
                *("--upstream", upstream, "--telemetry", "otlp"),
                ready_url=f"http://127.0.0.1:{port}/healthz",
                env=env,
            ),
        ):
            response = httpx.post(
                f"http://127.0.0.1:{port}/api/sessions/s1/chat",
                json=user_body(),
                headers={"traceparent": TRACEPARENT},
                timeout=20,
                trust_env=False,
            )
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline and not (
                {"chunkbridge.turn", "invoke_agent agent-ops-v2"} <= {s[0] for s in receiver.spans}
                and "gen_ai.client.operation.duration" in receiver.metrics
            ):
                time.sleep(0.1)
    finally:
        receiver.shutdown()
        receiver.server_close()
    assert response.status_code == 200 and response.text.rstrip().endswith("[DONE]")
    spans = {
        name: (trace_id, span_id, parent) for name, trace_id, span_id, parent in receiver.spans
    }
    assert {"chunkbridge.turn", "invoke_agent agent-ops-v2"} <= spans.keys(), spans.keys()
    server = spans["POST /api/sessions/{session_id}/chat"]
    assert server[0] == bytes.fromhex(BROWSER_TRACE) and server[2] == bytes.fromhex(BROWSER_SPAN)
    assert spans["chunkbridge.turn"][2] == server[1]
    assert spans["invoke_agent agent-ops-v2"][2] == spans["chunkbridge.turn"][1]
    assert receiver.services == {"gateway-under-test"}
    assert {"gen_ai.client.operation.duration", "gen_ai.server.time_to_first_token"} <= (
        receiver.metrics
    )


def test_the_service_is_named_chunkbridge_unless_the_variables_name_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("OTEL_SERVICE_NAME", raising=False)
    monkeypatch.delenv("OTEL_RESOURCE_ATTRIBUTES", raising=False)
    named = service_resource("chunkbridge").attributes
    assert named["service.name"] == "chunkbridge"
    monkeypatch.setenv("OTEL_RESOURCE_ATTRIBUTES", "service.name=from-attributes,team=chat")
    named = service_resource("chunkbridge").attributes
    assert (named["service.name"], named["team"]) == ("from-attributes", "chat")
    monkeypatch.setenv("OTEL_SERVICE_NAME", "from-name")
    assert service_resource("chunkbridge").attributes["service.name"] == "from-name"
