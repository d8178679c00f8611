"""pi-agent over its WebSocket contract with the real pi upstream (pi-agent-core's ``Agent``
behind pi's RPC commands on a socket, ``tests/conformance/pi_upstream.mjs``) and the live
gateway, judged by the real ai 5/6/7 clients: the ``prompt`` frame starts the run, the ``abort``
frame stops it when the client leaves (``busy = steer`` through pi's ``steer`` frame:
``tests/test_pi_steer.py``)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

from tests.gateway_harness import post, running_gateway, user_body
from tests.helpers import decode_sse, text_of
from tests.test_pi_agent import leave_mid_answer, pi_upstream, upstream_stats


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
        await leave_mid_answer(gw, "w2")
        stats = await upstream_stats(upstream, until_set="aborted")
        assert stats == {"runs": 1, "aborted": 1, "abortFrames": 1}  # the abort frame stopped it
        again = await post(gw, "w2", user_body("hello again"))  # the session is free
    assert text_of(decode_sse(again.content)) == "You said: hello again"


def chat(*texts: str) -> dict[str, Any]:
    messages = [
        {"id": f"u{i}", "role": "user", "parts": [{"type": "text", "text": text}]}
        for i, text in enumerate(texts)
    ]
    return {"id": "chat1", "messages": messages, "trigger": "submit-message"}
