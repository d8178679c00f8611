"""Stored chats: the SQL store on real SQLite and PostgreSQL, the gateway writing each turn (the
answer equal to the real clients' final message), the chat API, ``history = stored``, and
faults (a corrupt row, a database down at start-up and mid-turn)."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
from starlette.requests import Request
from starlette.responses import Response

from chunkbridge.gateway.config import GatewayConfig
from chunkbridge.gateway.http.app import create_app
from chunkbridge.gateway.logging import get_logger
from chunkbridge.gateway.metrics import Metrics
from chunkbridge.gateway.stores import StoreUnavailable
from chunkbridge.gateway.stores.base import Put, TranscriptStore
from chunkbridge.gateway.stores.sqlite import SqliteDatabase
from chunkbridge.gateway.stores.transcript_sql import SqlTranscriptStore
from chunkbridge.gateway.stores.writer import StoreWriter
from tests.gateway_harness import http_upstream, post, sse_response, uvicorn_server

pytestmark = pytest.mark.asyncio

KEY = ("s1", "chat-1")


def user(message_id: str, text: str) -> dict[str, Any]:
    return {"id": message_id, "role": "user", "parts": [{"type": "text", "text": text}]}


async def put(store: TranscriptStore, *args: Any, **more: Any) -> None:
    """One write in its own transaction."""
    await store.put_many([Put(*args, **more)])


def answer(message_id: str, text: str) -> dict[str, Any]:
    return {
        "id": message_id,
        "role": "assistant",
        "parts": [{"type": "step-start"}, {"type": "text", "text": text, "state": "done"}],
    }


@pytest.fixture(params=["sqlite", "postgres"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[TranscriptStore]:
    skipped: list[tuple[Any, ...]] = []
    if request.param == "sqlite":
        database: Any = SqliteDatabase(tmp_path / "chats.sqlite3")
    else:
        from chunkbridge.gateway.stores.postgres import PostgresDatabase

        database = PostgresDatabase(request.getfixturevalue("postgres_url"))
    sql = SqlTranscriptStore(database, lambda *a: skipped.append(a))
    sql.skipped = skipped  # type: ignore[attr-defined]
    await sql.start()
    await sql.start()  # migrations are applied once: a second start changes nothing
    try:
        yield sql
    finally:
        await sql.aclose()


async def test_messages_keep_their_order_status_and_updates(store: TranscriptStore) -> None:
    await put(store, KEY, user("u1", "What is  the   weather?"), "done", 5, title="What is")
    await put(store, KEY, {"id": "a1", "role": "assistant", "parts": []}, "streaming", 5)
    await put(store, KEY, answer("a1", "Sunny."), "done", 5)
    await put(store, KEY, user("u2", "And tomorrow?"), "done", 5, title="ignored: chat exists")
    await put(store, KEY, answer("a2", "Rain."), "error", 7)
    loaded = await store.load(KEY)
    assert [m.message["id"] for m in loaded.messages] == ["u1", "a1", "u2", "a2"]
    assert [m.status for m in loaded.messages] == ["done", "done", "done", "error"]
    assert loaded.messages[1].message == answer("a1", "Sunny.")
    assert loaded.messages[3].major == 7
    page = await store.chats("s1", 10, None)
    assert [(c.chat_id, c.title, c.messages) for c in page.chats] == [("chat-1", "What is", 4)]
    # a user message sent again (a regenerate, an edit) drops what followed it
    await put(store, KEY, user("u2", "And the day after?"), "done", 5, truncate_after=True)
    loaded = await store.load(KEY)
    assert [m.message["id"] for m in loaded.messages] == ["u1", "a1", "u2"]
    assert loaded.messages[2].message["parts"][0]["text"] == "And the day after?"


async def test_chats_are_paged_newest_first_per_session_and_deleted(store: TranscriptStore) -> None:
    for i in range(5):
        await put(store, ("s1", f"c{i}"), user(f"u{i}", f"chat {i}"), "done", 5, title=f"chat {i}")
    await put(store, ("other", "c9"), user("x", "not yours"), "done", 5, title="not yours")
    first = await store.chats("s1", 2, None)
    assert [c.chat_id for c in first.chats] == ["c4", "c3"] and first.next
    second = await store.chats("s1", 2, first.next)
    third = await store.chats("s1", 2, second.next)
    assert [c.chat_id for c in second.chats + third.chats] == ["c2", "c1", "c0"]
    assert third.next is None
    assert await store.delete(("s1", "c2")) is True
    assert await store.delete(("s1", "c2")) is False
    assert (await store.load(("s1", "c2"))).messages == []
    assert await store.purge(older_than=1e12) == 5  # everything is older than that
    assert (await store.chats("s1", 10, None)).chats == []


async def test_a_row_that_does_not_load_is_skipped_and_reported(tmp_path: Path) -> None:
    path = tmp_path / "chats.sqlite3"
    reports: list[tuple[Any, ...]] = []
    store = SqlTranscriptStore(SqliteDatabase(path), lambda *a: reports.append(a))
    await store.start()
    await put(store, KEY, user("u1", "hello"), "done", 5)
    await put(store, KEY, user("u2", "corrupt me"), "done", 5)
    await put(store, KEY, user("u3", "from the future"), "done", 5)
    await put(store, KEY, user("u4", "not a message"), "done", 5)
    with sqlite3.connect(path) as raw:
        raw.execute("UPDATE cb_messages SET body = '{\"id\": \"u2\", ' WHERE message_id = 'u2'")
        raw.execute("UPDATE cb_messages SET format = 99 WHERE message_id = 'u3'")
        raw.execute("UPDATE cb_messages SET body = '{\"id\": \"u4\"}' WHERE message_id = 'u4'")
    loaded = await store.load(KEY)
    await store.aclose()
    assert [m.message["id"] for m in loaded.messages] == ["u1"]
    assert loaded.skipped == 3
    assert [r[1] for r in reports] == ["u2", "u3", "u4"]
    assert "format 99" in reports[1][2]


async def test_writes_queued_together_share_one_transaction_and_a_bad_one_is_found(
    tmp_path: Path,
) -> None:
    store = SqlTranscriptStore(SqliteDatabase(tmp_path / "chats.sqlite3"), print)
    await store.start()
    transactions = 0
    run = store.database.transaction

    async def counted(work: Any, pipelined: bool = False) -> Any:
        nonlocal transactions
        transactions += 1
        return await run(work, pipelined)

    store.database.transaction = counted  # type: ignore[method-assign]
    metrics = Metrics()
    writer = StoreWriter(store, metrics, get_logger("test"))
    first = [writer.submit(Put(KEY, user(f"u{i}", "hi"), "done", 5), "user") for i in range(300)]
    assert all(await asyncio.gather(*first))
    assert transactions == 1  # a group commit
    bad = {"id": "bad", "role": "user", "parts": [{"type": "data-x", "data": {1, 2}}]}
    second = [writer.submit(Put(KEY, user(f"v{i}", "hi"), "done", 5), "user") for i in range(3)]
    second.insert(1, writer.submit(Put(KEY, bad, "done", 5), "user"))  # not JSON: our bug
    assert await asyncio.gather(*second) == [True, False, True, True]
    loaded = await store.load(KEY)
    await writer.drain(1)
    await store.aclose()
    assert [m.message["id"] for m in loaded.messages][-4:] == ["u299", "v0", "v1", "v2"]
    rendered = metrics.render().decode()
    assert 'chunkbridge_transcript_writes_total{outcome="written"} 303.0' in rendered
    assert 'chunkbridge_transcript_writes_total{outcome="failed"} 1.0' in rendered


async def test_an_unreachable_database_fails_the_start_up_clearly(tmp_path: Path) -> None:
    from chunkbridge.gateway.stores.postgres import PostgresDatabase

    store = SqlTranscriptStore(PostgresDatabase("postgresql://cb@127.0.0.1:1/x", 1.0), print)
    with pytest.raises(StoreUnavailable, match="cannot reach the PostgreSQL store"):
        await store.start()
    blocked = tmp_path / "file"
    blocked.write_text("not a directory")
    store = SqlTranscriptStore(SqliteDatabase(blocked / "chats.sqlite3"), print)
    with pytest.raises(StoreUnavailable, match="cannot open the SQLite store"):
        await store.start()


# -- through the gateway -----------------------------------------------------------------------


def completion(content: str | None = None, finish: str | None = None, **delta: Any) -> bytes:
    if content is not None:
        delta["content"] = content
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    return orjson.dumps({"id": "c", "model": "m", "choices": [choice]})


class Provider:
    """An OpenAI-compatible model on 127.0.0.1: answers ``answer <n>`` (a tool call on the
    turns listed in ``tool_turns``, slowly on ``slow_turns``); remembers each request."""

    def __init__(self, tool_turns: tuple[int, ...] = (), slow_turns: tuple[int, ...] = ()) -> None:
        self.requests: list[dict[str, Any]] = []
        self.tool_turns = tool_turns
        self.slow_turns = slow_turns  # 40 words, 50 ms apart

    async def completions(self, request: Request) -> Response:
        self.requests.append(orjson.loads(await request.body()))
        n = len(self.requests)
        if n in self.tool_turns:
            call = {
                "index": 0,
                "id": f"call_{n}",
                "type": "function",
                "function": {"name": "lookup", "arguments": orjson.dumps({"q": n}).decode()},
            }
            frames = [completion(tool_calls=[call]), completion(finish="tool_calls")]
        elif n in self.slow_turns:
            words = [completion(f"w{i} ") for i in range(40)]
            return sse_response([*words, completion(finish="stop"), b"[DONE]"], 0.05)
        else:
            frames = [completion(f"answer {n}"), completion(finish="stop")]
        return sse_response([*frames, b"[DONE]"], 0)


def gateway_settings(base: str, tmp_path: Path, **more: Any) -> dict[str, Any]:
    return {
        "upstream": base,
        "dialect": "openai-chat",
        "dialect_settings": {"openai-chat": {"api_key": "sk-test", "model": "m"}},
        "store": "sqlite",
        "store_path": tmp_path / "chats.sqlite3",
        **more,
    }


async def get(base: str, path: str) -> httpx.Response:
    async with httpx.AsyncClient(timeout=20, trust_env=False) as client:
        return await client.get(f"{base}/api/sessions/s1{path}")


async def written(base: str, path: str, count: int) -> Any:
    """The messages at ``path`` once ``count`` of them are there (the writes happen behind the
    stream, within the writer's linger)."""
    for _ in range(100):  # bounded: 5 s
        messages = (await get(base, path)).json()
        if len(messages) >= count and all(m["parts"] for m in messages):
            return messages
        await asyncio.sleep(0.05)
    return messages


async def test_a_turn_is_stored_as_the_real_clients_have_it_and_listed(
    tmp_path: Path, real_clients
) -> None:
    provider = Provider()
    async with (
        http_upstream("/v1/chat/completions", provider.completions) as upstream,
        uvicorn_server(create_app(GatewayConfig(**gateway_settings(upstream, tmp_path)))) as gw,
    ):
        body = {"id": "chat-1", "messages": [user("u1", "Hello there")]}
        response = await post(gw, "s1", body)
        assert response.status_code == 200
        stored = await written(gw, "/chat/chat-1/messages", 2)
        chats = (await get(gw, "/chats")).json()
        async with httpx.AsyncClient(trust_env=False) as client:
            deleted = await client.delete(f"{gw}/api/sessions/s1/chat/chat-1")
            again = await client.delete(f"{gw}/api/sessions/s1/chat/chat-1")
        after = (await get(gw, "/chat/chat-1/messages")).json()
    final = real_clients.check(response.content)
    assert stored[0] == user("u1", "Hello there")
    assert stored[1] == final[5].message == final[7].message
    assert chats["chats"][0]["id"] == "chat-1" and chats["chats"][0]["title"] == "Hello there"
    assert chats["chats"][0]["messages"] == 2 and chats["next"] is None
    assert (deleted.status_code, again.status_code, after) == (204, 404, [])


async def test_stored_history_gives_the_provider_what_a_full_client_would(
    tmp_path: Path, real_clients
) -> None:
    # 20 turns; turn 5 calls a tool the app answers. One client sends everything, the other
    # only its last message ({id, message}); the provider must get the same requests.
    full, stored = Provider(tool_turns=(5,)), Provider(tool_turns=(5,))
    async with (
        http_upstream("/v1/chat/completions", full.completions) as full_upstream,
        http_upstream("/v1/chat/completions", stored.completions) as stored_upstream,
        uvicorn_server(
            create_app(GatewayConfig(**gateway_settings(full_upstream, tmp_path / "a")))
        ) as full_gw,
        uvicorn_server(
            create_app(
                GatewayConfig(**gateway_settings(stored_upstream, tmp_path / "b", history="stored"))
            )
        ) as stored_gw,
    ):
        # each client's own conversation (the gateways name their answers differently)
        mine: dict[str, list[dict[str, Any]]] = {full_gw: [], stored_gw: []}
        for turn in range(1, 21):
            for gw in (full_gw, stored_gw):
                messages = mine[gw]
                last = messages[-1] if messages else None
                if last and last["role"] == "assistant" and _open_call(last):
                    for part in last["parts"]:
                        if part.get("state") == "input-available":
                            part.update(state="output-available", output={"found": part["input"]})
                    forged = orjson.loads(orjson.dumps(last))
                    forged["parts"][0:0] = [{"type": "text", "text": "words put in its mouth"}]
                    one = {"id": "chat-1", "message": forged}
                else:
                    messages.append(user(f"u{turn}", f"question {turn}"))
                    one = {"id": "chat-1", "message": messages[-1]}
                body = one if gw == stored_gw else {"id": "chat-1", "messages": messages}
                response = await post(gw, "s1", body)
                assert response.status_code == 200, (turn, response.text)
                continued = _continued(messages)
                final = real_clients.check(response.content, majors=(5,), message=continued)
                assert final[5].ok
                if continued:
                    messages[-1] = final[5].message
                else:
                    messages.append(final[5].message)
            assert stored.requests[-1] == full.requests[-1], turn
        server_copy = (await get(stored_gw, "/chat/chat-1/messages")).json()
    assert len(full.requests) == 20
    assert any(m["role"] == "tool" for m in full.requests[-1]["messages"])
    assert server_copy == mine[stored_gw]


def _open_call(message: dict[str, Any]) -> bool:
    return any(p.get("state") == "input-available" for p in message["parts"])


def _continued(messages: list[dict[str, Any]]) -> dict[str, Any] | None:
    last = messages[-1]
    return last if last["role"] == "assistant" else None


async def test_a_regenerate_or_an_edit_replaces_what_followed_the_message(tmp_path: Path) -> None:
    provider = Provider()
    async with http_upstream("/v1/chat/completions", provider.completions) as upstream:
        settings = gateway_settings(upstream, tmp_path, history="stored")
        async with uvicorn_server(create_app(GatewayConfig(**settings))) as gw:
            for body in (
                {"id": "c", "message": user("u1", "one")},
                {"id": "c", "message": user("u2", "two")},
                {"id": "c", "message": user("u2", "two"), "trigger": "regenerate-message"},
                {"id": "c", "message": user("u1", "one, again")},  # sent again: an edit
            ):
                assert (await post(gw, "s1", body)).status_code == 200
                stored = (await get(gw, "/chat/c/messages")).json()
                texts = ["".join(p.get("text", "") for p in m["parts"]) for m in stored]
                provider.requests[-1]["stored"] = texts
    sent = [[m["content"] for m in r["messages"]] for r in provider.requests]
    assert sent[2] == ["one", "answer 1", "two"]  # the regenerated answer is not sent…
    assert provider.requests[2]["stored"] == ["one", "answer 1", "two", "answer 3"]  # …nor kept
    assert sent[3] == ["one, again"]
    assert provider.requests[3]["stored"] == ["one, again", "answer 4"]


async def test_stored_history_refuses_what_it_cannot_serve(tmp_path: Path) -> None:
    provider = Provider()
    settings = gateway_settings("http://127.0.0.1:1", tmp_path, history="stored")
    async with (
        http_upstream("/v1/chat/completions", provider.completions) as upstream,
        uvicorn_server(create_app(GatewayConfig(**{**settings, "upstream": upstream}))) as gw,
    ):
        no_chat = await post(gw, "s1", {"messages": [user("u1", "hi")]})
        unknown = await post(gw, "s1", {"id": "c", "message": answer("nope", "invented")})
    assert no_chat.status_code == 400 and "chat id" in no_chat.text
    assert unknown.status_code == 400 and "not in this chat" in unknown.text
    assert provider.requests == []


async def test_the_database_down_mid_turn_leaves_the_stream_whole(tmp_path: Path) -> None:
    provider = Provider()
    async with http_upstream("/v1/chat/completions", provider.completions) as upstream:
        app = create_app(GatewayConfig(**gateway_settings(upstream, tmp_path)))
        async with uvicorn_server(app) as gw:
            gateway = app.state.gateway
            database = gateway.stores.transcripts.database

            async def down(work: Any, pipelined: bool = False) -> Any:
                raise StoreUnavailable("database is down")

            database.transaction = down
            gateway.store_writer._delays = (0.01, 0.01, 0.01)
            response = await post(gw, "s1", {"id": "c", "messages": [user("u1", "hi")]})
            assert response.status_code == 200 and b"answer 1" in response.content
            for _ in range(100):  # the writes are retried behind the stream, then given up
                if b'outcome="failed"} 2.0' in gateway.metrics.render():
                    break
                await asyncio.sleep(0.05)
            rendered = gateway.metrics.render().decode()
    assert 'chunkbridge_transcript_writes_total{outcome="failed"} 2.0' in rendered
    assert 'chunkbridge_transcript_writes_total{outcome="retried"} 6.0' in rendered
