"""pi-agent over its WebSocket contract with the real pi upstream (pi-agent-core's ``Agent``
behind pi's RPC commands on a socket, ``tests/conformance/pi_upstream.mjs``) and the live
gateway, judged by the real ai 5/6/7 clients: the ``prompt`` frame starts the run, the ``abort``
frame stops it when the client leaves (``busy = steer`` through pi's ``steer`` frame:
``tests/test_pi_steer.py``)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import httpx

from tests.gateway_harness import post, running_gateway, user_body
from tests.helpers import decode_sse, text_of
from tests.test_pi_agent import pi_upstream


@contextlib.asynccontextmanager
async def socket_gateway(**settings: Any) -> AsyncIterator[tuple[str, str]]:
    with pi_upstream() as base:
        url = base.replace("http://", "ws://") + "/sessions/{session_id}/rpc"
        async with running_gateway(upstream=url, dialect="pi-agent", **settings) as (gw, _):
            yield gw, base


async def test_a_real_pi_agent_over_its_socket(real_clients) -> None:
    async with socket_gateway() as (gw, _):
        response = await post(gw, "w1", user_body("what is the weather?"))
    assert response.status_code == 200
    assert text_of(decode_sse(response.content)) == "Done: sunny in Paris."
    for major, verdict in real_clients.check(response.content).items():
        assert verdict.ok and verdict.finish_reason == "stop", (major, verdict.fatal)
        (tool,) = verdict.parts("tool-get_weather")
        assert tool["state"] == "output-available", major
        assert len(verdict.parts("step-start")) == 2, major  # one per agent turn


async def test_a_client_that_leaves_stops_the_run_on_the_socket() -> None:
    async with socket_gateway() as (gw, upstream):
        async with httpx.AsyncClient(timeout=10, trust_env=False) as client:
            url = f"{gw}/api/sessions/w2/chat"
            async with client.stream("POST", url, json=user_body("a long one")) as response:
                async for chunk in response.aiter_bytes():
                    if b"text-delta" in chunk:
                        break  # leave mid-answer
        async with httpx.AsyncClient(timeout=5, trust_env=False) as client:
            for _ in range(50):  # bounded: 5 s
                stats = (await client.get(upstream)).json()
                if stats["aborted"]:
                    break
                await asyncio.sleep(0.1)
        assert stats == {"runs": 1, "aborted": 1, "abortFrames": 1}  # the abort frame stopped it
        again = await post(gw, "w2", user_body("hello again"))  # the session is free
    assert text_of(decode_sse(again.content)) == "You said: hello again"


def chat(*texts: str) -> dict[str, Any]:
    messages = [
        {"id": f"u{i}", "role": "user", "parts": [{"type": "text", "text": text}]}
        for i, text in enumerate(texts)
    ]
    return {"id": "chat1", "messages": messages, "trigger": "submit-message"}


class Pending:
    """A POST read as its bytes come (a test waits on what it has read)."""

    def __init__(self, gw: str, session: str, payload: dict[str, Any]) -> None:
        self.url = f"{gw}/api/sessions/{session}/chat"
        self.payload = payload
        self.content = b""
        self.status_code = 0
        self.task = asyncio.create_task(self._read())

    async def _read(self) -> None:
        async with httpx.AsyncClient(timeout=30, trust_env=False) as client:
            async with client.stream("POST", self.url, json=self.payload) as response:
                self.status_code = response.status_code
                async for piece in response.aiter_bytes():
                    self.content += piece
