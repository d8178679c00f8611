"""The gateway over real sockets: a uvicorn gateway in front of a real websockets upstream."""

from __future__ import annotations

import asyncio
import socket
import time

import httpx
import jwt
import orjson
import pytest

from tests.gateway_harness import (
    ScriptedUpstream,
    agent_ops_turn,
    events,
    post,
    running_gateway,
    user_body,
)
from tests.helpers import assert_valid_for, decode_sse, of_type, stalled, text_of, types

pytestmark = pytest.mark.asyncio


def rss_kb() -> int:
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmRSS:"))


async def test_full_turn_headers_prompt_frame_and_real_clients(real_clients) -> None:
    async with (
        ScriptedUpstream() as up,
        running_gateway(upstream=up.url) as (
            base,
            _,
        ),
    ):
        up.scripts["*"] = events(*agent_ops_turn("Hello there"))
        body = user_body("What is up?")
        body["messages"][0]["parts"].insert(
            0, {"type": "file", "mediaType": "image/png", "url": "data:,x", "filename": "a.png"}
        )
        response = await post(base, "sess-1", body)
    assert response.status_code == 200
    assert response.headers["content-type"] == "text/event-stream"
    assert response.headers["x-vercel-ai-ui-message-stream"] == "v1"
    assert response.headers["cache-control"] == "no-cache"
    assert response.headers["x-accel-buffering"] == "no"
    assert "content-encoding" not in response.headers
    assert response.content.startswith(b": stream-open\n\n")
    assert response.content.endswith(b"data: [DONE]\n\n")
    prompt = up.received["sess-1"][0]
    assert prompt == {
        "type": "prompt",
        "content": "What is up?",
        "messageId": "u1",
        "attachments": [
            {"type": "file", "mediaType": "image/png", "url": "data:,x", "filename": "a.png"}
        ],
    }
    for major, verdict in real_clients.check(response.content).items():
        assert verdict.ok, (major, verdict.fatal)
        assert verdict.text() == "Hello there "
        assert verdict.parts("tool-search")[0]["state"] == "output-available"
        assert verdict.finish_reason == "stop"


async def test_continuation_reuses_the_assistant_message_id() -> None:
    async with ScriptedUpstream() as up, running_gateway(upstream=up.url) as (base, _):
        up.scripts["*"] = events(*agent_ops_turn())
        body = user_body()
        body["messages"].append({"id": "a-77", "role": "assistant", "parts": []})
        response = await post(base, "s", body)
    assert decode_sse(response.content)[0]["messageId"] == "a-77"


@pytest.mark.parametrize(
    ("session", "headers", "content", "status"),
    [
        ("bad id!", {}, None, 400),
        ("x" * 200, {}, None, 400),
        ("ok", {"content-type": "text/plain"}, b"{}", 415),
        ("ok", {}, b"not json", 400),
        ("ok", {}, b'{"messages": "nope"}', 400),
        ("ok", {}, b'{"messages": [{"id": "a", "role": "assistant", "parts": []}]}', 400),
        ("ok", {}, b"x" * 5000, 413),
    ],
)
async def test_bad_requests_get_plain_http_errors(session, headers, content, status) -> None:
    async with (
        ScriptedUpstream() as up,
        running_gateway(upstream=up.url, max_body_bytes=4096) as (
            base,
            _,
        ),
    ):
        hdrs = {"content-type": "application/json", **headers}
        async with httpx.AsyncClient(trust_env=False) as client:
            url = f"{base}/api/sessions/{session.replace(' ', '%20')}/chat"
            response = await client.post(
                url, content=content or orjson.dumps(user_body()), headers=hdrs
            )
    assert response.status_code == status
    assert response.headers["content-type"].startswith("text/plain")
    assert 0 < len(response.text) < 200
    assert up.open_connections == 0 and not up.received


async def test_bearer_forward_passes_the_token_and_maps_upstream_rejections() -> None:
    async with (
        ScriptedUpstream() as up,
        running_gateway(upstream=up.url, auth="bearer-forward") as (
            base,
            _,
        ),
    ):
        up.scripts["*"] = events(*agent_ops_turn())
        assert (await post(base, "s1")).status_code == 401
        ok = await post(base, "s1", headers={"authorization": "Bearer tok-123"})
        assert ok.status_code == 200
        assert up.handshake_headers["s1"]["authorization"] == "Bearer tok-123"
        up.reject["s2"] = 401
        up.reject["s3"] = 403
        assert (await post(base, "s2", headers={"authorization": "Bearer t"})).status_code == 401
        assert (await post(base, "s3", headers={"authorization": "Bearer t"})).status_code == 403


async def test_jwt_auth_checks_signature_expiry_and_sessions() -> None:
    key = "s3cret-key-for-tests-only-32bytes!"

    def token(**claims):
        return jwt.encode({"exp": int(time.time()) + 60, "iss": "acme", **claims}, key, "HS256")

    async with (
        ScriptedUpstream() as up,
        running_gateway(upstream=up.url, auth="jwt", jwt_key=key, jwt_issuer="acme") as (base, _),
    ):
        up.scripts["*"] = events(*agent_ops_turn())

        async def status(tok: str, session: str = "s1") -> int:
            return (
                await post(base, session, headers={"authorization": f"Bearer {tok}"})
            ).status_code

        assert await status(token(sessions=["s1"])) == 200
        assert await status(token(sessions=["other"])) == 403
        assert await status(token()) == 403
        assert await status(token(sessions="*"), "s9") == 200
        assert (
            await status(jwt.encode({"exp": int(time.time()) - 5, "sessions": ["s1"]}, key)) == 401
        )
        assert (
            await status(
                jwt.encode(
                    {"exp": int(time.time()) + 60, "iss": "acme", "sessions": ["s1"]},
                    "wrong-key-also-32-bytes-long!!!!",
                )
            )
            == 401
        )


async def test_second_concurrent_turn_gets_409() -> None:
    started, refused = asyncio.Event(), asyncio.Event()

    async def held(ws, up, session):
        """The first turn runs until the second request has been answered."""
        await up.send(ws, session, {"type": "message.create", "turnId": "t"})
        started.set()
        await asyncio.wait_for(refused.wait(), 10)
        for event in agent_ops_turn()[1:]:
            await up.send(ws, session, event)

    async with ScriptedUpstream() as up, running_gateway(upstream=up.url) as (base, _):
        up.scripts["busy"] = held
        first = asyncio.create_task(post(base, "busy"))
        await asyncio.wait_for(started.wait(), 10)
        second = await post(base, "busy")
        refused.set()
        assert second.status_code == 409
        assert (await first).status_code == 200
        up.scripts["busy"] = events(*agent_ops_turn())
        assert (await post(base, "busy")).status_code == 200  # released afterwards


async def test_unreachable_upstream_is_502_and_handshake_timeout_is_504() -> None:
    free = socket.socket()
    free.bind(("127.0.0.1", 0))
    port = free.getsockname()[1]
    free.close()
    async with running_gateway(upstream=f"ws://127.0.0.1:{port}/s/{{session_id}}") as (base, _):
        response = await post(base, "s")
        assert response.status_code == 502 and response.text
    # a server that accepts TCP but never answers the handshake
    writers: list[asyncio.StreamWriter] = []

    async def never_answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writers.append(writer)

    silent = await asyncio.start_server(never_answer, "127.0.0.1", 0)
    port = silent.sockets[0].getsockname()[1]
    async with running_gateway(
        upstream=f"ws://127.0.0.1:{port}/s/{{session_id}}", connect_timeout=0.5
    ) as (base, _):
        started = time.monotonic()
        response = await post(base, "s")
        assert response.status_code == 504 and time.monotonic() - started < 3
    for writer in writers:
        writer.close()
    silent.close()
    await silent.wait_closed()


async def test_upstream_drop_mid_part_ends_with_error_and_finish(real_clients) -> None:
    async def drop(ws, up, session):
        await up.send(ws, session, {"type": "message.create", "turnId": "t"})
        await up.send(
            ws, session, {"type": "message.part.text-delta", "turnId": "t", "delta": "half a sen"}
        )
        await asyncio.sleep(0.1)
        ws.transport.abort()  # no close frame: an abnormal closure

    async with ScriptedUpstream() as up, running_gateway(upstream=up.url) as (base, _):
        up.scripts["*"] = drop
        response = await post(base, "s")
    chunks = decode_sse(response.content)
    assert types(chunks)[-4:] == ["text-end", "error", "finish-step", "finish"]
    assert chunks[-1]["finishReason"] == "error"
    for major, verdict in real_clients.check(response.content).items():
        assert verdict.ok and verdict.error_text and verdict.text() == "half a sen", major


async def test_upstream_garbage_is_reported_not_fatal() -> None:
    async with ScriptedUpstream() as up, running_gateway(upstream=up.url) as (base, _):
        up.scripts["*"] = events(
            {"type": "message.create", "turnId": "t"},
            "}{garbage",
            "[1,2]",
            *agent_ops_turn("still fine")[1:],
        )
        response = await post(base, "s")
    chunks = decode_sse(response.content)
    assert len(of_type(chunks, "data-upstream-malformed")) == 2
    assert text_of(chunks) == "still fine " and chunks[-1]["finishReason"] == "stop"
    assert_valid_for(response.content)


async def test_idle_timeout_and_keepalive_comments() -> None:
    async with (
        ScriptedUpstream() as up,
        running_gateway(
            upstream=up.url, keepalive_interval=0.2, idle_timeout=1.0, first_event_timeout=1.0
        ) as (base, _),
    ):
        up.scripts["*"] = events(
            {"type": "message.create", "turnId": "t"},
            {"type": "message.part.text-delta", "turnId": "t", "delta": "x"},
            close=False,
        )
        started = time.monotonic()
        response = await post(base, "s")
        elapsed = time.monotonic() - started
    assert 0.9 < elapsed < 4
    assert response.content.count(b": keep-alive\n\n") >= 3
    chunks = decode_sse(response.content)
    assert of_type(chunks, "error")[0]["errorText"] == "The agent did not respond in time."
    assert chunks[-1]["finishReason"] == "error"
    assert_valid_for(response.content)


async def test_client_disconnect_sends_abort_upstream_within_a_second() -> None:
    async def endless(ws, up, session):
        await up.send(ws, session, {"type": "message.create", "turnId": "t"})
        for i in range(10_000):
            await up.send(
                ws, session, {"type": "message.part.text-delta", "turnId": "t", "delta": f"w{i} "}
            )
            await asyncio.sleep(0.01)
            if up.aborted(session):
                return

    async with ScriptedUpstream() as up, running_gateway(upstream=up.url) as (base, _):
        up.scripts["*"] = endless
        async with httpx.AsyncClient(trust_env=False) as client:
            async with client.stream(
                "POST", f"{base}/api/sessions/stop-me/chat", json=user_body()
            ) as response:
                async for _ in response.aiter_bytes():
                    break
                loop = asyncio.get_running_loop()
                hung_up = loop.time()
        await asyncio.wait_for(up.closed["stop-me"].wait(), 5)
    abort_times = [t for t, f in up.received_at["stop-me"] if f.get("type") == "abort"]
    assert abort_times, up.received["stop-me"]
    assert abort_times[0] - hung_up < 1.0


async def test_slow_client_backpressure_keeps_memory_bounded() -> None:
    total = 40_000
    delta = "y" * 1000

    async def flood(ws, up, session):
        await up.send(ws, session, {"type": "message.create", "turnId": "t"})
        for _ in range(total):
            await up.send(
                ws, session, {"type": "message.part.text-delta", "turnId": "t", "delta": delta}
            )

    async with ScriptedUpstream() as up, running_gateway(upstream=up.url) as (base, app):
        up.scripts["*"] = flood
        port = int(base.rsplit(":", 1)[1])
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        body = orjson.dumps(user_body())
        writer.write(
            b"POST /api/sessions/slow/chat HTTP/1.1\r\nhost: x\r\n"
            b"content-type: application/json\r\ncontent-length: %d\r\n\r\n%b" % (len(body), body)
        )
        await writer.drain()
        await reader.read(1000)  # headers and the first bytes, then stop reading
        rss_before = rss_kb()
        sent_while_stalled = await stalled(lambda: up.sent["slow"], quiet=0.5, within=10)
        rss_growth = rss_kb() - rss_before
        writer.close()
        await asyncio.wait_for(up.closed["slow"].wait(), 5)
    # 40 MB were ready upstream; a stalled client holds the upstream back long before that
    assert sent_while_stalled < total / 2, sent_while_stalled
    assert rss_growth < 20_000, rss_growth  # KiB; buffering the turn would take 40 MB


async def test_openai_chat_over_websocket_sends_a_completions_request(real_clients) -> None:
    chunk = {
        "id": "c",
        "object": "chat.completion.chunk",
        "model": "m",
        "choices": [{"index": 0, "delta": {"content": "Hi!"}, "finish_reason": None}],
    }
    stop = {**chunk, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
    async with (
        ScriptedUpstream() as up,
        running_gateway(upstream=up.url, dialect="openai-chat", target=7) as (base, _),
    ):
        up.scripts["*"] = events(chunk, stop, "[DONE]")
        response = await post(base, "s")
    request = up.received["s"][0]
    assert request["stream"] is True and request["messages"] == [
        {"role": "user", "content": "hello"}
    ]
    verdict = real_clients.check(response.content, majors=(7,))[7]
    assert verdict.ok and verdict.text() == "Hi!" and verdict.finish_reason == "stop"


async def test_open_harness_send_frame_and_full_turn(real_clients) -> None:
    async with (
        ScriptedUpstream() as up,
        running_gateway(upstream=up.url, dialect="open-harness") as (base, _),
    ):
        up.scripts["*"] = events(
            {"type": "flow:start", "flowName": "f"},
            {"type": "agent:text:delta", "content": "Done."},
            {"type": "flow:complete"},
        )
        response = await post(base, "s", user_body("run it"))
    frame = up.received["s"][0]
    assert frame["type"] == "send" and frame["message"] == "run it" and frame["runId"]
    for major, verdict in real_clients.check(response.content).items():
        assert verdict.ok and verdict.text() == "Done.", major


async def test_health_ready_and_metrics() -> None:
    async with ScriptedUpstream() as up, running_gateway(upstream=up.url) as (base, _):
        up.scripts["*"] = events(*agent_ops_turn())
        body = (await post(base, "m1")).content
        async with httpx.AsyncClient(trust_env=False) as client:
            assert (await client.get(f"{base}/healthz")).text == "ok"
            assert (await client.get(f"{base}/readyz")).status_code == 200
            metrics = (await client.get(f"{base}/metrics")).text
    assert 'chunkbridge_requests_total{status="200"} 1.0' in metrics
    assert "chunkbridge_active_streams 0.0" in metrics
    assert "chunkbridge_time_to_first_chunk_seconds_count 1.0" in metrics
    # the turn ends at message.finalize: the trailing "complete" is never read
    upstream_events = len(agent_ops_turn()) - 1
    assert f"chunkbridge_upstream_events_total {upstream_events:.1f}" in metrics
    sse_events = body.count(b"data: ")  # every chunk and [DONE]
    assert f"chunkbridge_chunks_out_total {sse_events:.1f}" in metrics
    async with running_gateway(upstream="ws://127.0.0.1:1/s/{session_id}") as (base, _):
        async with httpx.AsyncClient(trust_env=False) as client:
            assert (await client.get(f"{base}/readyz")).status_code == 503
