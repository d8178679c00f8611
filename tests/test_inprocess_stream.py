"""``UIStreamResponse`` and ``ui_stream``: an app's own events through the gateway's pipeline.

The same events give the chunks the gateway gives for the same frames (its replay of the
recordings, for every target), every ending is accepted by the real ai 5, 6 and 7, a source
that fails or is left (a disconnect) ends validly and is closed within a second; given a
gateway, the stream is one of its turns — its resume log, transcript store, telemetry and
per-session rule."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Mount, Route

from chunkbridge import (
    Gateway,
    GatewayConfig,
    UIStreamResponse,
    create_app,
    parse_chat_request,
    ui_stream,
)
from chunkbridge.gateway.devtools.recordings import read_frames
from chunkbridge.gateway.devtools.replay import replay_frames
from chunkbridge.translators.core.sse_codec import STREAM_OPEN_FRAME
from tests.gateway_harness import follow, user_body, uvicorn_server
from tests.helpers import decode_sse, of_type, text_of
from tests.test_telemetry import one, spans  # noqa: F401 (the fixture)

pytestmark = pytest.mark.asyncio

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
#: Recordings of each kind of dialect (agents over WebSocket, providers over HTTP).
RECORDINGS = [
    ("agent-ops-v2", "tool-lifecycle"),
    ("anthropic-messages", "parallel-tools"),
    ("anthropic-messages", "thinking-then-text"),
    ("openai-chat", "streamed-tool-arguments"),
    ("openai-chat", "surrogate-pair-split"),
    ("openai-responses", "reasoning-summary-then-text"),
    ("gemini", "function-call"),
]


def events_of(dialect: str, name: str) -> list[Any]:
    """A recording's frames as the parsed events an in-process source yields (Python's
    ``json``: lone surrogate escapes stay lone surrogates, as an SDK's would)."""
    import json

    frames = read_frames(FIXTURES / dialect / f"{name}.jsonl")
    return [json.loads(f) for f in frames if f.strip() != "[DONE]"]


async def produce(events: list[Any], pause: float = 0.0) -> AsyncIterator[Any]:
    for event in events:
        yield event
        if pause:
            await asyncio.sleep(pause)


async def body_of(stream: AsyncIterator[bytes]) -> bytes:
    return b"".join([piece async for piece in stream])


@pytest.mark.parametrize(("dialect", "name"), RECORDINGS)
@pytest.mark.parametrize("target", [5, 6, 7])
async def test_events_give_the_chunks_the_gateway_gives_for_their_frames(
    dialect: str, name: str, target: int
) -> None:
    frames = read_frames(FIXTURES / dialect / f"{name}.jsonl")
    gateway = decode_sse(replay_frames(dialect, frames, target=target))
    body = await body_of(
        ui_stream(produce(events_of(dialect, name)), dialect=dialect, target=target)
    )
    assert body.startswith(STREAM_OPEN_FRAME) and body.endswith(b"data: [DONE]\n\n")
    assert decode_sse(body) == gateway


async def test_every_recording_streamed_in_process_is_accepted_by_the_real_clients(
    real_clients: Any,
) -> None:
    bodies = [
        await body_of(ui_stream(produce(events_of(d, n)), dialect=d, target=7))
        for d, n in RECORDINGS
    ]
    for body, verdicts in zip(bodies, real_clients.check_many(bodies, majors=(7,)), strict=True):
        assert verdicts[7].ok, (verdicts[7].fatal, body[:500])
    five = [await body_of(ui_stream(produce(events_of(d, n)), dialect=d)) for d, n in RECORDINGS]
    for verdicts in real_clients.check_many(five):
        assert all(v.ok for v in verdicts.values()), {m: v.fatal for m, v in verdicts.items()}


def chunk(content: str | None = None, finish: str | None = None) -> dict[str, Any]:
    delta = {} if content is None else {"content": content}
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    return {"id": "c1", "object": "chat.completion.chunk", "model": "m", "choices": [choice]}


class Source:
    """An async generator of chat chunks that remembers how it ended (and when)."""

    def __init__(self, texts: list[str], pause: float = 0.0, fail: Exception | None = None):
        self.texts, self.pause, self.fail = texts, pause, fail
        self.closed = asyncio.Event()
        self.closed_at: float | None = None
        self.finished = False

    async def __call__(self) -> AsyncIterator[dict[str, Any]]:
        try:
            for text in self.texts:
                yield chunk(text)
                await asyncio.sleep(self.pause)
            if self.fail is not None:
                raise self.fail
            yield chunk(finish="stop")
            self.finished = True
        finally:
            self.closed_at = time.monotonic()
            self.closed.set()


async def test_a_source_that_raises_ends_with_an_error_every_client_takes(
    real_clients: Any,
) -> None:
    source = Source(["Half an ans", "wer"], fail=RuntimeError("db password is hunter2"))
    body = await body_of(ui_stream(source(), dialect="openai-chat"))
    chunks = decode_sse(body)
    assert text_of(chunks) == "Half an answer"
    assert [c["errorText"] for c in of_type(chunks, "error")] == ["The agent failed."]
    assert b"hunter2" not in body  # the exception's text stays in the log
    for major, verdict in real_clients.check(body).items():
        assert verdict.ok and verdict.error_text == "The agent failed.", (major, verdict.fatal)


async def test_what_a_source_may_be(real_clients: Any) -> None:
    """An async iterable, an awaitable of one, an async context manager entered and left, a
    list, a blocking iterable (read in a thread): the same answer."""
    events = [chunk("Hi"), chunk(" there"), chunk(finish="stop")]
    left: list[str] = []

    async def later() -> AsyncIterator[dict[str, Any]]:
        return produce(events)

    @contextlib.asynccontextmanager
    async def managed() -> AsyncIterator[AsyncIterator[dict[str, Any]]]:
        left.append("entered")
        try:
            yield produce(events)
        finally:
            left.append("left")

    def blocking() -> Iterator[dict[str, Any]]:
        time.sleep(0.01)
        yield from events

    for source in (produce(events), later(), managed(), list(events), blocking()):
        body = await body_of(ui_stream(source, dialect="openai-chat"))
        assert text_of(decode_sse(body)) == "Hi there", source
    assert left == ["entered", "left"]
    assert all(v.ok for v in real_clients.check(body).values())


async def test_what_no_source_or_stream_can_be_is_refused_where_it_is_built() -> None:
    with pytest.raises(TypeError, match="async iterable"):
        UIStreamResponse(42, dialect="openai-chat")
    with pytest.raises(TypeError, match="async iterable"):
        UIStreamResponse("text", dialect="openai-chat")
    with pytest.raises(LookupError, match="unknown dialect"):
        UIStreamResponse(produce([]), dialect="nope")
    with pytest.raises(ValueError, match="target"):
        UIStreamResponse(produce([]), dialect="openai-chat", target=4)


async def test_events_that_are_not_events_are_forwarded_as_malformed(real_clients: Any) -> None:
    body = await body_of(
        ui_stream(
            produce([chunk("Hi"), object(), "not an event", chunk(finish="stop")]),
            dialect="openai-chat",
        )
    )
    chunks = decode_sse(body)
    assert len(of_type(chunks, "data-upstream-malformed")) == 2
    assert text_of(chunks) == "Hi" and of_type(chunks, "finish")[0]["finishReason"] == "stop"
    assert all(v.ok for v in real_clients.check(body).values())


def stream_app(source: Source, **options: Any) -> Starlette:
    async def chat(request: Request) -> Response:
        chat = parse_chat_request(await request.body())
        return UIStreamResponse(source(), dialect="openai-chat", request=chat, **options)

    return Starlette(routes=[Route("/chat", chat, methods=["POST"])])


async def read_until(response: httpx.Response, text: bytes) -> bytes:
    seen = b""
    async for piece in response.aiter_bytes():
        seen += piece
        if text in seen:
            return seen
    raise AssertionError(f"{text!r} never came: {seen!r}")


async def test_a_disconnect_closes_the_source_within_a_second() -> None:
    source = Source(["tick"] * 10_000, pause=0.02)
    async with uvicorn_server(stream_app(source)) as base:
        async with httpx.AsyncClient(timeout=10, trust_env=False) as client:
            async with client.stream("POST", f"{base}/chat", json=user_body()) as response:
                assert response.headers["x-vercel-ai-ui-message-stream"] == "v1"
                await read_until(response, b'"delta":"tick"')
        left = time.monotonic()
        await asyncio.wait_for(source.closed.wait(), 1.0)
    assert source.closed_at is not None and source.closed_at - left < 1.0
    assert not source.finished


async def test_closing_ui_stream_closes_the_source() -> None:
    source = Source(["tick"] * 10_000, pause=0.01)
    stream = ui_stream(source(), dialect="openai-chat")
    seen = b""
    async for piece in stream:
        seen += piece
        if b"tick" in seen:
            break
    await stream.aclose()  # what a framework does when its client goes away
    await asyncio.wait_for(source.closed.wait(), 1.0)
    assert not source.finished


@contextlib.asynccontextmanager
async def host(gateway: Gateway, source: Source) -> AsyncIterator[str]:
    """A host app: its own route, the gateway mounted beside it, the gateway's lifespan run."""

    async def chat(request: Request) -> Response:
        chat = parse_chat_request(await request.body(), gateway=gateway)
        return UIStreamResponse(
            source(),
            dialect="openai-chat",
            gateway=gateway,
            request=chat,
            session_id=request.path_params["session"],
        )

    app = Starlette(
        routes=[
            Route("/ai/{session}/chat", chat, methods=["POST"]),
            Mount("/gw", create_app(gateway)),
        ],
        lifespan=lambda app: gateway.lifespan(),
    )
    async with uvicorn_server(app) as base:
        yield base


async def test_with_a_gateway_its_resume_log_replays_the_answer(real_clients: Any) -> None:
    gateway = Gateway(GatewayConfig(resume="memory"))  # no upstream: the app streams
    source = Source(["Resumable", " answer"], pause=0.05)
    async with host(gateway, source) as base:
        async with httpx.AsyncClient(timeout=10, trust_env=False) as client:
            posted = asyncio.create_task(client.post(f"{base}/ai/s1/chat", json=user_body()))
            await asyncio.sleep(0.02)  # the turn is running: its log is there
            attached = asyncio.Event()
            status, replayed = await follow(f"{base}/gw", "s1", attached, chat="chat1")
            response = await posted
    assert response.status_code == 200 and status == 200
    assert text_of(decode_sse(replayed)) == "Resumable answer"
    assert decode_sse(replayed) == decode_sse(response.content)
    for verdict in real_clients.check(replayed).values():
        assert verdict.ok and verdict.text() == "Resumable answer", verdict.fatal


async def test_with_a_gateway_the_answer_is_recorded_and_the_session_held(tmp_path: Path) -> None:
    gateway = Gateway(GatewayConfig(store="sqlite", store_path=tmp_path / "chats.db"))
    source = Source(["Stored", " answer"], pause=0.2)
    async with host(gateway, source) as base:
        async with httpx.AsyncClient(timeout=10, trust_env=False) as client:
            first = asyncio.create_task(client.post(f"{base}/ai/s1/chat", json=user_body("hi")))
            await asyncio.sleep(0.1)
            busy = await client.post(f"{base}/ai/s1/chat", json=user_body("again"))
            assert busy.status_code == 409, busy.text
            assert "already answering" in busy.text
            assert (await first).status_code == 200
            messages: list[Any] = []
            for _ in range(100):  # the answer is written behind the stream (bounded: 5 s)
                stored = await client.get(f"{base}/gw/api/sessions/s1/chat/chat1/messages")
                messages = stored.json()
                if len(messages) == 2:
                    break
                await asyncio.sleep(0.05)
            own = await client.post(f"{base}/gw/api/sessions/s1/chat", json=user_body())
            ready = await client.get(f"{base}/gw/readyz")
    assert own.status_code == 400 and "no upstream" in own.text  # it runs no turn itself
    assert ready.status_code == 200
    assert [m["role"] for m in messages] == ["user", "assistant"]
    assert "".join(p.get("text", "") for p in messages[1]["parts"]) == "Stored answer"


async def test_with_a_gateway_the_stream_is_traced(spans: InMemorySpanExporter) -> None:  # noqa: F811
    gateway = Gateway(GatewayConfig(telemetry="otlp"))
    source = Source(["Traced"])
    async with host(gateway, source) as base:
        async with httpx.AsyncClient(timeout=10, trust_env=False) as client:
            response = await client.post(f"{base}/ai/s1/chat", json=user_body())
    assert response.status_code == 200
    turn = one(spans, "chunkbridge.turn")
    assert turn.attributes is not None
    assert turn.attributes["chunkbridge.dialect"] == "openai-chat"
    assert turn.attributes["session.id"] == "s1"


async def test_a_gateway_not_started_is_said_so(real_clients: Any) -> None:
    gateway = Gateway(GatewayConfig(dialect="openai-chat", resume="memory"))
    source = Source(["never"])
    app = stream_app(source, gateway=gateway)
    async with uvicorn_server(app) as base:
        async with httpx.AsyncClient(timeout=10, trust_env=False) as client:
            response = await client.post(f"{base}/chat", json=user_body())
    assert response.status_code == 503
    assert "gateway.lifespan()" in response.text
    body = await body_of(ui_stream(source(), dialect="openai-chat", gateway=gateway))
    assert [c["errorText"] for c in of_type(decode_sse(body), "error")] == [
        orjson.loads(orjson.dumps(response.text))
    ]
    assert all(v.ok for v in real_clients.check(body).values())


async def test_a_librarys_own_event_models_read_with_their_defaults(real_clients: Any) -> None:
    """pydantic-ai's AG-UI events — pydantic models made in code, whose ``type`` is a default,
    camelCase by alias, an enum — streamed in-process with the ag-ui dialect."""
    from pydantic_ai import Agent
    from pydantic_ai.models.function import FunctionModel
    from pydantic_ai.ui.ag_ui import AGUIAdapter

    async def model(messages: Any, info: Any) -> AsyncIterator[str]:
        for text in ("In ", "process", "."):
            yield text

    run_input = AGUIAdapter.build_run_input(
        orjson.dumps(
            {
                "threadId": "t1",
                "runId": "r1",
                "messages": [{"id": "u1", "role": "user", "content": "hi"}],
                "state": {},
                "tools": [],
                "context": [],
                "forwardedProps": {},
            }
        )
    )
    adapter = AGUIAdapter(agent=Agent(FunctionModel(stream_function=model)), run_input=run_input)
    body = await body_of(ui_stream(adapter.run_stream(), dialect="ag-ui", target=7))
    chunks = decode_sse(body)
    assert text_of(chunks) == "In process." and not of_type(chunks, "data-upstream-malformed")
    for major, verdict in real_clients.check(body, majors=(7,)).items():
        assert verdict.ok and verdict.finish_reason == "stop", (major, verdict.fatal)
