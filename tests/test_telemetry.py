"""OpenTelemetry (``telemetry = otlp``): one trace per turn, joined to the browser's
``traceparent``, to the backend (HTTP headers, the WebSocket handshake, MCP ``_meta``) and to
the resume reads of the turn; the GenAI metrics beside Prometheus'.

The spans are read from the SDK's in-memory exporter, installed as this process's provider
(the gateway keeps a provider it finds); the backends are real servers on 127.0.0.1 that record
what trace context they received. The process test
(:mod:`tests.test_telemetry_export`) runs ``chunkbridge serve`` against an OTLP/HTTP receiver."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
from opentelemetry import metrics, trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode
from starlette.requests import Request
from starlette.responses import Response

from tests.agent_responses import answer
from tests.conftest import stdio_tools
from tests.gateway_harness import (
    ScriptedUpstream,
    agent_ops_turn,
    events,
    follow,
    http_upstream,
    post,
    running_gateway,
    sse_response,
    user_body,
)
from tests.helpers import result_of, until

BROWSER_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
BROWSER_SPAN = "00f067aa0ba902b7"
TRACEPARENT = f"00-{BROWSER_TRACE}-{BROWSER_SPAN}-01"

_EXPORTER = InMemorySpanExporter()
_READER = InMemoryMetricReader()


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    """This process's SDK (once): every span ends in memory; cleared for each test."""
    if not isinstance(trace.get_tracer_provider(), TracerProvider):
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(_EXPORTER))
        trace.set_tracer_provider(provider)
        metrics.set_meter_provider(MeterProvider(metric_readers=[_READER]))
    _EXPORTER.clear()
    yield _EXPORTER


def named(spans: InMemorySpanExporter, name: str) -> list[ReadableSpan]:
    return [s for s in spans.get_finished_spans() if s.name == name]


def one(spans: InMemorySpanExporter, name: str) -> ReadableSpan:
    found = named(spans, name)
    assert len(found) == 1, (name, [s.name for s in spans.get_finished_spans()])
    return found[0]


def parent_of(span: ReadableSpan) -> int | None:
    return span.parent.span_id if span.parent is not None else None


def traceparent_ids(value: str) -> tuple[int, int]:
    _, trace_id, span_id, _ = value.split("-")
    return int(trace_id, 16), int(span_id, 16)


class Provider:
    """An Anthropic-style model API: the n-th request gets ``steps[n-1]``; it records each
    request's body and ``traceparent``."""

    def __init__(self, steps: list[tuple[str, list[Any]]], error: bool = False) -> None:
        self.steps = steps
        self.error = error
        self.bodies: list[dict[str, Any]] = []
        self.traceparents: list[str | None] = []

    async def handle(self, request: Request) -> Response:
        self.bodies.append(orjson.loads(await request.body()))
        self.traceparents.append(request.headers.get("traceparent"))
        if self.error:
            error = {"type": "error", "error": {"type": "overloaded_error", "message": "busy"}}
            frames = answer("anthropic-messages", "Part", [])[:3] + [orjson.dumps(error).decode()]
        else:
            n = len(self.bodies)
            frames = answer("anthropic-messages", *self.steps[min(n, len(self.steps)) - 1], n=n)
        return sse_response([f.encode() for f in frames], 0.001)


def metric_points(name: str) -> list[Any]:
    data = _READER.get_metrics_data()
    points: list[Any] = []
    for resource in data.resource_metrics if data else []:
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                if metric.name == name:
                    points += list(metric.data.data_points)
    return points


async def test_a_turn_is_one_trace_from_the_browser_to_the_model(
    spans: InMemorySpanExporter, real_clients: Any
) -> None:
    model = Provider([("Hello there.", [])])
    async with http_upstream("/{path:path}", model.handle) as upstream:
        async with running_gateway(
            dialect="anthropic-messages", upstream=upstream, telemetry="otlp"
        ) as (base, _):
            response = await post(base, "s1", headers={"traceparent": TRACEPARENT})
    assert response.status_code == 200, response.text
    assert all(v.ok for v in real_clients.check(response.content).values())

    server = one(spans, "POST /api/sessions/{session_id}/chat")
    turn = one(spans, "chunkbridge.turn")
    call = one(spans, "chat claude-sonnet-4-5")
    assert server.kind is SpanKind.SERVER and server.context.trace_id == int(BROWSER_TRACE, 16)
    assert parent_of(server) == int(BROWSER_SPAN, 16)  # the browser's span is its parent
    assert server.attributes is not None and server.attributes["http.route"].endswith("/chat")
    # the stream's body passes the middleware's wrapper; its start (the status) does not
    assert server.attributes["http.status_code"] == 200
    assert parent_of(turn) == server.context.span_id
    assert parent_of(call) == turn.context.span_id and call.kind is SpanKind.CLIENT
    # no span per send or receive of the stream
    assert len(spans.get_finished_spans()) == 3, [s.name for s in spans.get_finished_spans()]
    assert (
        dict(turn.attributes or {}).items()
        >= {
            "chunkbridge.dialect": "anthropic-messages",
            "session.id": "s1",
            "gen_ai.conversation.id": "chat1",
            "chunkbridge.close_reason": "completed",
            "chunkbridge.finish_reason": "stop",
        }.items()
    )
    # what went wrong is counted only when something did
    assert turn.attributes is not None and not {
        "chunkbridge.guard_repairs",
        "chunkbridge.unknown_events",
        "chunkbridge.client_disconnected",
    } & set(turn.attributes)
    assert turn.attributes is not None and turn.attributes["chunkbridge.chunks"] > 3
    assert turn.status.status_code is StatusCode.UNSET
    attributes = dict(call.attributes or {})
    assert attributes["gen_ai.operation.name"] == "chat"
    assert attributes["gen_ai.provider.name"] == "anthropic"
    assert attributes["gen_ai.request.model"] == "claude-sonnet-4-5"
    assert attributes["gen_ai.response.model"]
    assert attributes["gen_ai.usage.input_tokens"] > 0
    assert attributes["gen_ai.usage.output_tokens"] > 0
    assert tuple(attributes["gen_ai.response.finish_reasons"]) == ("stop",)
    # the model API got the context of the call's span: its spans join this trace
    received = model.traceparents[0]
    assert received is not None
    assert traceparent_ids(received) == (int(BROWSER_TRACE, 16), call.context.span_id)
    # the GenAI histograms, beside Prometheus
    kinds = {
        p.attributes.get("gen_ai.token.type") for p in metric_points("gen_ai.client.token.usage")
    }
    assert kinds >= {"input", "output"}
    for name in (
        "gen_ai.client.operation.duration",
        "gen_ai.client.operation.time_to_first_chunk",
        "gen_ai.server.time_to_first_token",
    ):
        assert metric_points(name), name


async def test_an_upstream_error_marks_the_turn_and_the_call(
    spans: InMemorySpanExporter, real_clients: Any
) -> None:
    model = Provider([], error=True)
    async with http_upstream("/{path:path}", model.handle) as upstream:
        async with running_gateway(
            dialect="anthropic-messages", upstream=upstream, telemetry="otlp"
        ) as (base, _):
            response = await post(base, "s1")
    assert b'"type":"error"' in response.content
    assert all(v.ok for v in real_clients.check(response.content).values())
    turn = one(spans, "chunkbridge.turn")
    call = one(spans, "chat claude-sonnet-4-5")
    assert turn.status.status_code is StatusCode.ERROR
    assert turn.attributes is not None
    assert turn.attributes["chunkbridge.close_reason"] == "upstream-error"
    assert turn.attributes["error.type"] == "upstream-error"
    assert call.status.status_code is StatusCode.ERROR


async def test_a_refused_request_ends_its_turn_span_with_the_reason(
    spans: InMemorySpanExporter,
) -> None:
    async def refuse(request: Request) -> Response:
        return Response("no", status_code=401)

    async with http_upstream("/{path:path}", refuse) as upstream:
        async with running_gateway(
            dialect="anthropic-messages", upstream=upstream, telemetry="otlp"
        ) as (base, _):
            response = await post(base, "s1")
    assert response.status_code >= 400
    turn = one(spans, "chunkbridge.turn")
    assert turn.status.status_code is StatusCode.ERROR
    assert one(spans, "chat claude-sonnet-4-5").status.status_code is StatusCode.ERROR


async def test_a_stop_is_an_event_and_a_resume_read_links_to_its_turn(
    spans: InMemorySpanExporter, real_clients: Any
) -> None:
    """An agent backend over WebSocket: ``invoke_agent`` with the context in the handshake; a
    resume read mid-turn links to the turn; the stop request is an event of the turn."""
    async with ScriptedUpstream() as up:
        slow = agent_ops_turn("one two three four five six seven eight")
        up.scripts["*"] = events(*[item for frame in slow for item in (frame, 0.2)])
        async with running_gateway(upstream=up.url, telemetry="otlp", resume="memory") as (
            base,
            _,
        ):
            async with httpx.AsyncClient(timeout=20, trust_env=False) as client:
                chat = f"{base}/api/sessions/s1/chat"
                body = orjson.dumps(user_body())
                headers = {"content-type": "application/json", "traceparent": TRACEPARENT}
                turn_task = asyncio.create_task(client.post(chat, content=body, headers=headers))
                await until(lambda: up.sent["s1"] >= 2)  # mid-turn
                attached = asyncio.Event()
                read = asyncio.create_task(follow(base, "s1", attached))
                await asyncio.wait_for(attached.wait(), 10)
                stopped = await client.post(f"{chat}/chat1/stop")
                response, (status, resumed) = await turn_task, await read
    assert stopped.status_code == 202 and response.status_code == 200
    assert all(v.ok for v in real_clients.check(response.content).values())
    assert status == 200 and not resumed.startswith(b": traceparent")
    turn = one(spans, "chunkbridge.turn")
    call = one(spans, "invoke_agent agent-ops-v2")
    assert call.kind is SpanKind.CLIENT and parent_of(call) == turn.context.span_id
    assert (
        call.attributes is not None and call.attributes["gen_ai.operation.name"] == "invoke_agent"
    )
    handshake = up.handshake_headers["s1"].get("traceparent")
    assert handshake is not None and traceparent_ids(handshake)[1] == call.context.span_id
    assert [e.name for e in turn.events] == ["chunkbridge.stop"]
    assert turn.attributes is not None and turn.attributes["chunkbridge.close_reason"] == "aborted"
    assert turn.attributes["chunkbridge.conversions"] == 1  # the stop's (a count, when not 0)
    read = one(spans, "chunkbridge.resume")
    assert [link.context.span_id for link in read.links] == [turn.context.span_id]
    assert read.attributes is not None and read.attributes["gen_ai.conversation.id"] == "chat1"


async def test_a_resume_read_on_another_instance_links_to_the_turn(
    spans: InMemorySpanExporter, redis_url: str
) -> None:
    async with ScriptedUpstream() as up:
        slow = agent_ops_turn("one two three four five six")
        up.scripts["*"] = events(*[item for frame in slow for item in (frame, 0.1)])
        settings = {"upstream": up.url, "telemetry": "otlp", "resume": "redis"}
        async with running_gateway(redis_url=redis_url, **settings) as (one_base, _):
            async with running_gateway(redis_url=redis_url, **settings) as (other_base, _):
                async with httpx.AsyncClient(timeout=20, trust_env=False) as client:
                    post_turn = asyncio.create_task(post(one_base, "s1"))
                    await until(lambda: up.sent["s1"] >= 2)  # mid-turn
                    path = "/api/sessions/s1/chat/chat1/stream"
                    resumed = await client.get(other_base + path)
                    first = await post_turn
    assert first.status_code == 200 and resumed.status_code == 200
    assert resumed.content.rstrip().endswith(b"[DONE]")
    turn = one(spans, "chunkbridge.turn")
    read = one(spans, "chunkbridge.resume")
    assert [link.context.span_id for link in read.links] == [turn.context.span_id]
    assert read.context.trace_id != turn.context.trace_id  # its own request's trace, linked


ASK_TRACE: list[tuple[str, list[Any]]] = [
    ("Checking.", [("call_t", "traced", {}), ("call_arch", "archive", {"name": "q3"})]),
    ("Done.", []),
]


async def test_an_approval_continuation_traces_its_decision_and_the_tools(
    spans: InMemorySpanExporter, tmp_path: Path, real_clients: Any
) -> None:
    """The loop's tool calls are ``execute_tool`` spans; the MCP request in one carries its
    context in ``_meta`` (the server says what it got); the approval is an event."""
    model = Provider(ASK_TRACE)
    tools = stdio_tools(env={"CALL_LOG": str(tmp_path / "calls")})
    async with http_upstream("/{path:path}", model.handle) as upstream:
        async with running_gateway(
            dialect="anthropic-messages", upstream=upstream, tools=tools, telemetry="otlp"
        ) as (base, _):
            api = f"{base}/api/sessions/s7/chat"
            answers = [{"kind": "approval", "approved": True}]
            result = await real_clients.chat_loop(api, 7, "archive q3", answers)
    assert result["error"] is None and result["status"] == "ready", result
    assert (tmp_path / "calls").read_text().split() == ["q3"]
    first, second = sorted(named(spans, "chunkbridge.turn"), key=lambda s: s.start_time or 0)
    assert [e.name for e in second.events] == ["chunkbridge.approval.approved"]
    assert second.events[0].attributes == {"gen_ai.tool.call.id": "call_arch"}
    traced = one(spans, "execute_tool traced")
    archived = one(spans, "execute_tool archive")
    assert parent_of(traced) == first.context.span_id
    assert parent_of(archived) == second.context.span_id  # approved: run by the continuation
    assert traced.attributes is not None and traced.attributes["gen_ai.tool.call.id"] == "call_t"
    sent = one(spans, "MCP send tools/call traced")  # the mcp SDK's own span, below ours
    assert parent_of(sent) == traced.context.span_id
    message = result["messages"][-1]
    output = next(p for p in message["parts"] if p.get("toolName") == "traced")["output"]
    got = result_of(output)["result"]
    assert traceparent_ids(got) == (sent.context.trace_id, sent.context.span_id)
    calls = sorted(named(spans, "chat claude-sonnet-4-5"), key=lambda s: s.start_time or 0)
    assert [parent_of(c) for c in calls] == [first.context.span_id, second.context.span_id]


async def test_a_servers_sampling_is_a_chat_span_under_its_tool_call(
    spans: InMemorySpanExporter,
) -> None:
    """server-everything samples the gateway's model in its call: a ``chat`` span of its own,
    under the ``execute_tool`` span, with the sample's usage."""
    from tests.mcp.everything import everything_stdio
    from tests.test_sampling import SAMPLING

    model = Provider(SAMPLING)
    tools = {"everything": everything_stdio(sampling=True, approval="never")}
    async with http_upstream("/{path:path}", model.handle) as upstream:
        async with running_gateway(
            dialect="anthropic-messages", upstream=upstream, tools=tools, telemetry="otlp"
        ) as (base, _):
            response = await post(base, "s8", user_body("a haiku", id="c8"))
    assert response.status_code == 200
    tool = one(spans, "execute_tool trigger-sampling-request")
    chats = named(spans, "chat claude-sonnet-4-5")
    sampled = [c for c in chats if parent_of(c) == tool.context.span_id]
    assert len(chats) == 3 and len(sampled) == 1  # two model steps, one sample
    attributes = sampled[0].attributes or {}
    assert attributes["gen_ai.usage.input_tokens"] == 200
    assert sampled[0].end_time is not None and sampled[0].start_time is not None
    assert sampled[0].start_time < sampled[0].end_time <= (tool.end_time or 0)
