"""Every way a turn ends is stored as the client has it — completed, an upstream error, a stop
(read by a resuming client), a turn over the AI SDK 7 WebSocket transport — judged by the real
clients; and a row that no longer loads is skipped by the API, never a 500."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path
from typing import Any

import httpx

from chunkbridge.gateway.stores.base import StoredMessage
from tests.gateway_harness import ScriptedUpstream, events, post, running_gateway, user_body
from tests.test_chat_socket import messages, run_transport, ws_url
from tests.test_resume import EXPECTED, get_stream, read_until, slow_turn

CREATE = {"type": "message.create", "turnId": "t1"}


def delta(text: str) -> dict[str, Any]:
    return {"type": "message.part.text-delta", "turnId": "t1", "delta": text}


async def script(ws: Any, up: ScriptedUpstream, session: str) -> None:
    """What each session's upstream does: its name says."""
    if session.startswith("error"):
        failing = (CREATE, delta("Half an answer. "), {"type": "error", "error": "boom"})
        await events(*failing)(ws, up, session)
    elif session.startswith("stop"):
        await events(*slow_turn(0.05), close=False)(ws, up, session)
    else:
        await events(*slow_turn(0.01))(ws, up, session)


async def answer(app: Any, session: str, chat: str = "chat1") -> StoredMessage:
    """The chat's stored answer once its turn's end is written (behind the stream)."""
    store = app.state.gateway.stores.transcripts
    for _ in range(200):  # bounded: 10 s
        stored = (await store.load((session, chat))).messages
        if len(stored) == 2 and stored[1].status != "streaming":
            return stored[1]
        await asyncio.sleep(0.05)
    raise AssertionError(f"no answer stored for {session}: {stored}")


async def test_every_ending_is_stored_as_the_client_has_it(tmp_path: Path, real_clients) -> None:
    async with ScriptedUpstream() as upstream:
        upstream.scripts["*"] = script
        async with running_gateway(
            upstream=upstream.url,
            store="sqlite",
            store_path=tmp_path / "chats.sqlite3",
            resume="memory",
        ) as (gw, app):
            done = await post(gw, "done", user_body("hi"))
            failed = await post(gw, "error", user_body("hi"))
            await read_until(gw, "stop", b'"w2 "', user_body("hi"))  # the page leaves…
            reader = asyncio.create_task(get_stream(gw, "stop"))  # …another follows…
            await asyncio.sleep(0.2)
            async with httpx.AsyncClient(timeout=10, trust_env=False) as client:
                await client.post(f"{gw}/api/sessions/stop/chat/chat1/stop")  # …and stops it
            stopped = await reader
            (over_ws,) = await run_transport(
                ws_url(gw, "socket"),
                [{"action": "send", "chatId": "chat1", "messages": messages("hi")}],
            )
            stored = {s: await answer(app, s) for s in ("done", "error", "stop", "socket")}
    for session, body, status in (
        ("done", done.content, "done"),
        ("error", failed.content, "error"),
        ("stop", stopped.content, "aborted"),
    ):
        for major, verdict in real_clients.check(body).items():
            assert verdict.message == stored[session].message, (session, major)
        assert stored[session].status == status, session
    assert stored["error"].message["parts"][-1]["text"] == "Half an answer. "
    assert over_ws.get("failure") is None and over_ws["finishReason"] == "stop"
    assert stored["socket"].message == over_ws["message"]  # ai 7's WebSocket transport
    assert stored["socket"].status == "done"
    text = "".join(p.get("text", "") for p in stored["done"].message["parts"])
    assert text == EXPECTED


async def test_a_row_that_no_longer_loads_is_skipped_by_the_api(tmp_path: Path) -> None:
    path = tmp_path / "chats.sqlite3"
    async with ScriptedUpstream() as upstream:
        upstream.scripts["*"] = events(*slow_turn(0))
        async with running_gateway(upstream=upstream.url, store="sqlite", store_path=path) as (
            gw,
            app,
        ):
            await post(gw, "s1", user_body("hi"))
            await answer(app, "s1")
            with sqlite3.connect(path) as raw:
                raw.execute("UPDATE cb_messages SET body = '{\"id\": ' WHERE role = 'assistant'")
            async with httpx.AsyncClient(timeout=10, trust_env=False) as client:
                loaded = await client.get(f"{gw}/api/sessions/s1/chat/chat1/messages")
                listed = await client.get(f"{gw}/api/sessions/s1/chats")
                metrics = (await client.get(f"{gw}/metrics")).text
    assert loaded.status_code == 200
    assert [m["id"] for m in loaded.json()] == ["u1"]  # the question; the broken answer skipped
    assert listed.status_code == 200 and listed.json()["chats"][0]["messages"] == 2
    assert "chunkbridge_transcript_rows_skipped_total 1.0" in metrics
