"""The session is free when the client has its answer (issue 22, item 2): a continuation sent
the instant the previous stream's last byte arrived is never refused with 409 — not by a raw
client that writes its next request on the same connection at once, not by the real ai 7 chat
whose ``sendAutomaticallyWhen`` continues the message the moment the stream ends."""

from __future__ import annotations

import asyncio

import orjson
from websockets.asyncio.server import ServerConnection

from tests.gateway_harness import ScriptedUpstream, running_gateway, user_body
from tests.raw_http import read_response, request_head

TURN = "t1"


async def quick_agent_slow_to_close(
    ws: ServerConnection, up: ScriptedUpstream, session: str
) -> None:
    """Answers at once, then reads nothing for a while: the gateway's close of this socket waits
    for the close reply meanwhile (as with a busy or distant agent)."""
    for event in (
        {"type": "message.create", "turnId": TURN},
        {"type": "message.part.text-delta", "turnId": TURN, "delta": "ok"},
        {"type": "message.finalize", "turnId": TURN, "reason": "end_turn"},
    ):
        await up.send(ws, session, event)
    ws.transport.pause_reading()
    await asyncio.sleep(0.05)
    ws.transport.resume_reading()
    await ws.wait_closed()


async def test_a_continuation_sent_0_ms_after_the_last_byte_is_never_refused() -> None:
    async with ScriptedUpstream() as upstream:
        upstream.scripts["*"] = quick_agent_slow_to_close
        async with running_gateway(upstream=upstream.url) as (gw, _):
            port = int(gw.rsplit(":", 1)[1])
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            statuses: list[int] = []
            try:
                for i in range(100):
                    body = orjson.dumps(user_body(f"message {i}"))
                    head = request_head("/api/sessions/s1/chat", length=len(body))
                    writer.write(head + body)  # on the kept-alive connection, at once
                    response = await asyncio.wait_for(read_response(reader), 10)
                    statuses.append(response.status)
                    if response.status == 200:
                        assert response.body.endswith(b"data: [DONE]\n\n")
                    else:
                        assert response.body.startswith(b"This session is already answering"), (
                            response
                        )
            finally:
                writer.close()
    assert statuses == [200] * 100
    assert len(upstream.received["s1"]) == 100
