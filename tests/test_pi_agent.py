"""pi-agent: a real pi agent (pi-agent-core's Agent with pi-ai's faux provider, under Node) behind
the live gateway, judged by the real ai 5/6/7 clients; then the frames it is sent."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import os
import shutil
import subprocess
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest

from chunkbridge.kit import NoSettings, RequestRejected
from chunkbridge.translators.dialects.pi_agent import DIALECT
from chunkbridge.translators.dialects.pi_agent.request import prompt_frame
from tests.conftest import require
from tests.gateway_harness import post, running_gateway, user_body
from tests.helpers import decode_sse, provider_turn, text_of, text_part

CONFORMANCE = Path(__file__).resolve().parent / "conformance"


@contextlib.contextmanager
def pi_upstream() -> Iterator[str]:
    """The Node pi upstream on an ephemeral port (``tests/conformance/pi_upstream.mjs``)."""
    missing = (
        shutil.which("node") is None
        or not (CONFORMANCE / "node_modules" / "@mariozechner" / "pi-agent-core").is_dir()
    )
    require(
        "the pi upstream", "node or pi-agent-core is missing (make install)" if missing else None
    )
    proc = subprocess.Popen(
        ["node", "pi_upstream.mjs"],
        cwd=CONFORMANCE,
        env={**os.environ, "PORT": "0", "MAX_LIFETIME_S": "120", "NODE_NO_WARNINGS": "1"},
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()  # bounded: the script prints this at once or exits
        assert line.startswith("pi upstream: "), line
        yield line.split(": ", 1)[1].strip()
    finally:
        proc.terminate()
        proc.wait(10)
        if proc.stdout is not None:
            proc.stdout.close()


@contextlib.asynccontextmanager
async def gateway_in_front() -> AsyncIterator[tuple[str, str]]:
    with pi_upstream() as base:
        async with running_gateway(upstream=base, dialect="pi-agent") as (gw, _):
            yield gw, base


async def test_a_real_pi_agent_with_thinking_and_its_own_tool(real_clients) -> None:
    async with gateway_in_front() as (gw, upstream):
        response = await post(gw, "s1", user_body("what is the weather?"))
    assert response.status_code == 200
    assert text_of(decode_sse(response.content)) == "Done: sunny in Paris."
    for major, verdict in real_clients.check(response.content).items():
        assert verdict.ok and verdict.finish_reason == "stop", (major, verdict.fatal)
        assert verdict.parts("reasoning")[0]["text"] == "The user wants the weather."
        (tool,) = verdict.parts("tool-get_weather")
        assert tool["state"] == "output-available" and tool["providerExecuted"] is True
        assert tool["output"]["content"][0]["text"] == "sunny in Paris"
        assert len(verdict.parts("step-start")) == 2  # one per agent turn


async def test_failing_tools_and_models_end_as_they_should(real_clients) -> None:
    async with gateway_in_front() as (gw, upstream):
        broken = await post(gw, "s2", user_body("the broken weather"))
        failed = await post(gw, "s3", user_body("please fail"))
    for major, verdict in real_clients.check(broken.content).items():
        (tool,) = verdict.parts("tool-broken_tool")
        assert tool["state"] == "output-error", major
        assert tool["errorText"] == "the weather service is unreachable"
        assert verdict.finish_reason == "stop"
    for major, verdict in real_clients.check(failed.content).items():
        assert verdict.ok and verdict.error_text == "the model is down", (major, verdict)


async def upstream_stats(base: str, until_set: str | None = None) -> dict[str, Any]:
    """The pi upstream's counts (runs, aborted, abortFrames); with ``until_set``, once that
    count is set (5 s at most)."""
    async with httpx.AsyncClient(timeout=5, trust_env=False) as client:
        for _ in range(50):  # bounded: 5 s
            stats: dict[str, Any] = (await client.get(base)).json()
            if until_set is None or stats.get(until_set):
                break
            await asyncio.sleep(0.1)
    return stats


async def leave_mid_answer(gw: str, session: str) -> None:
    """A long answer asked for, and its client gone at its first text."""
    async with httpx.AsyncClient(timeout=10, trust_env=False) as client:
        url = f"{gw}/api/sessions/{session}/chat"
        async with client.stream("POST", url, json=user_body("a long one")) as response:
            async for chunk in response.aiter_bytes():
                if b"text-delta" in chunk:
                    return


async def test_a_client_that_leaves_aborts_the_agent() -> None:
    async with gateway_in_front() as (gw, upstream):
        await leave_mid_answer(gw, "s4")
        stats = await upstream_stats(upstream, until_set="aborted")
        assert stats == {"runs": 1, "aborted": 1}  # the agent was told to stop
        again = await post(gw, "s4", user_body("hello again"))  # and the session is free
    assert text_of(decode_sse(again.content)) == "You said: hello again"


def test_the_prompt_frame_carries_text_and_images_only() -> None:
    png = base64.b64encode(b"\x89PNG").decode()
    image = {"type": "file", "mediaType": "image/png", "url": f"data:image/png;base64,{png}"}
    messages: list[dict[str, Any]] = [
        {"id": "u1", "role": "user", "parts": [text_part("look"), image]}
    ]
    frame = prompt_frame(provider_turn(NoSettings, messages))
    assert frame == {
        "type": "prompt",
        "id": "run-1",
        "message": "look",
        "images": [{"type": "image", "data": png, "mimeType": "image/png"}],
    }
    assert DIALECT.websocket is not None
    assert DIALECT.websocket.abort_frame(provider_turn(NoSettings, messages)) == {"type": "abort"}
    pdf = {"type": "file", "mediaType": "application/pdf", "url": "https://x/a.pdf"}
    with pytest.raises(RequestRejected):
        prompt_frame(provider_turn(NoSettings, [{"id": "u", "role": "user", "parts": [pdf]}]))


def test_recorded_frames_are_what_the_node_agent_sends() -> None:
    """The pi-* recordings came from tests/conformance/pi_upstream.mjs via chunkbridge record."""
    fixtures = Path(__file__).resolve().parents[1] / "fixtures" / "pi-agent"
    first = orjson.loads((fixtures / "pi-weather-agent-tool.jsonl").read_text().splitlines()[0])
    assert first == {"type": "agent_start"}
