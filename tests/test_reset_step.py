"""``reset-step`` behind the ``reset_step`` capability, end to end with the real ai 7 clients.

A served turn whose upstream withdraws a step it had partly streamed: with ``reset_step`` off
(the default; an ai 7 client may be older than 7.0.70) the chunk never reaches the client, and
both the pinned ai 7 and 7.0.69 (the last without the type) accept the stream; with it on, the
pinned ai 7 drops the step's parts and 7.0.69 would throw — so the setting matters. Either way
the stored message is the one the client shows. A turn built as the takeover code builds one
answers "may this turn's client receive reset-step?" with ``turn.guard.reset_step``.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import httpx
import pytest

from chunkbridge.gateway.config import GatewayConfig
from chunkbridge.gateway.http.app import create_app
from chunkbridge.gateway.registry import registry
from chunkbridge.kit import (
    CloseReason,
    CloseRequest,
    Dialect,
    Item,
    Translator,
    TurnInput,
    WebSocketContract,
)
from chunkbridge.translators.core.turn import Turn, TurnOptions
from tests.conformance.harness import AI7_WITHOUT_RESET_STEP
from tests.gateway_harness import ScriptedUpstream, events, post, uvicorn_server
from tests.helpers import decode_sse, to_sse, types

pytestmark = [pytest.mark.asyncio, pytest.mark.conformance]


class Chunks(Translator):
    """An upstream that streams UI message chunks as they are (``{"type": "chunk", ...}``)."""

    HANDLERS = {"chunk": "_on_chunk", "done": "_on_done"}

    def _on_chunk(self, event: dict[str, Any]) -> Sequence[Item]:
        return [event["chunk"]]

    def _on_done(self, event: dict[str, Any]) -> Sequence[Item]:
        return [CloseRequest(CloseReason.COMPLETED, finish_reason="stop")]


def _prompt(turn: TurnInput) -> dict[str, Any]:
    return {"op": "ask", "text": turn.require_prompt().text}


CHUNKS_DIALECT = Dialect(
    name="chunks",
    summary="UI message chunks as they are (a test's upstream)",
    translator=Chunks,
    websocket=WebSocketContract(prompt_frame=_prompt),
)

#: A step with a draft text and a call just begun, withdrawn, then made again. (No input text for
#: the call: 7.0.69 predates the ``rawInput`` a cut-off input leaves on the part, which the
#: stored message, assembled as the pinned ai 7 does, would hold.)
WITHDRAWN_STEP = [
    {"type": "start-step"},
    {"type": "text-start", "id": "t1"},
    {"type": "text-delta", "id": "t1", "delta": "Let me look that up"},
    {"type": "tool-input-start", "toolCallId": "c1", "toolName": "search"},
    {"type": "reset-step"},
    {"type": "text-start", "id": "t2"},
    {"type": "text-delta", "id": "t2", "delta": "It is sunny."},
    {"type": "text-end", "id": "t2"},
    {"type": "finish-step"},
]


async def _served_and_stored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, **client: Any
) -> tuple[bytes, dict[str, Any]]:
    """The body a gateway configured with ``client`` serves for :data:`WITHDRAWN_STEP`, and the
    answer it stores."""
    monkeypatch.setitem(registry().dialects, "chunks", CHUNKS_DIALECT)
    script = [*({"type": "chunk", "chunk": c} for c in WITHDRAWN_STEP), {"type": "done"}]
    async with ScriptedUpstream() as up:
        up.scripts["s1"] = events(*script)
        config = GatewayConfig(
            dialect="chunks",
            upstream=up.url,
            store="sqlite",
            store_path=tmp_path / "chats.sqlite3",
            **client,
        )
        async with uvicorn_server(create_app(config)) as base:
            question = {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "Weather?"}]}
            response = await post(base, "s1", {"id": "chat-1", "messages": [question]})
            assert response.status_code == 200, response.text
            return response.content, await _stored_answer(base)


async def _stored_answer(base: str) -> dict[str, Any]:
    """The chat's assistant message once stored (written behind the stream: bounded wait)."""
    url = f"{base}/api/sessions/s1/chat/chat-1/messages"
    async with httpx.AsyncClient(timeout=20, trust_env=False) as client:
        for _ in range(100):
            messages = (await client.get(url)).json()
            if len(messages) == 2 and messages[1]["parts"]:
                break
            await asyncio.sleep(0.05)
    answer: dict[str, Any] = messages[1]
    return answer


async def test_without_the_setting_no_ai_7_client_is_sent_reset_step(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, real_clients: Any
) -> None:
    body, stored = await _served_and_stored(tmp_path, monkeypatch, target=7)
    chunks = decode_sse(body)
    assert "reset-step" not in types(chunks)
    assert {"type": "data-reset-step", "data": {}, "transient": True} in chunks
    verdicts = real_clients.check(body, majors=(7, AI7_WITHOUT_RESET_STEP))
    for client, verdict in verdicts.items():
        assert verdict.ok, (client, verdict.fatal)
        # the withdrawn step's parts stay on such a client, and so in the stored chat
        assert verdict.message == stored, client
    assert stored["parts"][1] == {"type": "text", "text": "Let me look that up", "state": "done"}
    assert verdicts[7].text() == "Let me look that upIt is sunny."


async def test_with_the_setting_ai_7_drops_the_withdrawn_step(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, real_clients: Any
) -> None:
    body, stored = await _served_and_stored(tmp_path, monkeypatch, target=7, reset_step=True)
    assert types(decode_sse(body)).count("reset-step") == 1
    verdicts = real_clients.check(body, majors=(7, AI7_WITHOUT_RESET_STEP))
    assert verdicts[7].ok, verdicts[7].fatal
    assert verdicts[7].message == stored
    assert stored["parts"] == [
        {"type": "step-start"},
        {"type": "text", "text": "It is sunny.", "state": "done"},
    ]
    # ai 7 before 7.0.70 throws on it: the setting is what keeps it from those clients
    older = verdicts[AI7_WITHOUT_RESET_STEP]
    assert not older.ok and older.fatal is not None and "reset-step" in older.fatal


async def test_a_turn_says_whether_its_client_may_receive_reset_step(real_clients: Any) -> None:
    """How the gateway's own code (a redone step, say) asks, and what it gets by emitting one:
    the chunks go through the turn's guard, so a client without it never sees the type."""
    for reset_step in (False, True):
        turn = Turn(Chunks(), TurnOptions(target=7, reset_step=reset_step, assemble=True))
        assert turn.guard.reset_step is reset_step
        out = turn.emit(WITHDRAWN_STEP)
        out += turn.close(CloseRequest(CloseReason.COMPLETED, finish_reason="stop"))
        assert ("reset-step" in types(out)) is reset_step
        assert turn.assembler is not None
        verdict = real_clients.check(to_sse(out), majors=(7,))[7]
        assert verdict.ok, verdict.fatal
        assert verdict.message == json.loads(json.dumps(turn.assembler.message)), reset_step
        withdrawn = "Let me look that up" not in verdict.text()
        assert withdrawn is reset_step
