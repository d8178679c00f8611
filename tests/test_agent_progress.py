"""A gateway tool's progress: the MCP server's ``notifications/progress`` for a running call
become preliminary outputs of the call's part, which its result replaces — accepted by the real
ai 5, 6 and 7 clients, never shown to the model, and settled as interrupted on a stop."""

from __future__ import annotations

from typing import Any

import httpx
import orjson
import pytest

from tests.conftest import ToolServer
from tests.gateway_harness import post, user_body
from tests.helpers import decode_sse, result_of
from tests.test_agent_loop import Model, agent_gateway, read_until, steps_script

COUNT: list[tuple[str, list[Any]]] = [
    ("Counting.", [("call_count", "count", {"to": 3, "pause": 0.3})]),
    ("Counted.", []),
]


def preliminary(body: bytes) -> list[Any]:
    return [
        chunk["output"]
        for chunk in decode_sse(body)
        if chunk.get("type") == "tool-output-available" and chunk.get("preliminary")
    ]


@pytest.mark.parametrize("dialect", ["anthropic-messages", "openai-chat"])
async def test_progress_shows_as_preliminary_outputs_the_result_replaces(
    dialect: str, tool_server: ToolServer, real_clients: Any
) -> None:
    model = Model(steps_script(dialect, COUNT))
    async with agent_gateway(model, dialect, tool_server.settings()) as base:
        response = await post(base, "s1", user_body("count to 3", id="c1"))
    assert response.status_code == 200, response.text
    assert preliminary(response.content) == [
        {"progress": n, "total": 3, "message": f"at {n}"} for n in (1, 2, 3)
    ]
    for major, verdict in real_clients.check(response.content).items():
        assert verdict.ok, (major, verdict.fatal, response.text)
        (part,) = [p for p in verdict.message["parts"] if p["type"] == "dynamic-tool"]
        assert part["state"] == "output-available"
        assert result_of(part["output"]) == {"result": "counted to 3"}
        assert not part.get("preliminary"), major  # the result replaced the reports
    heard = orjson.dumps(model.requests[1])
    assert b"counted to 3" in heard and b"at 1" not in heard  # the model reads only the result


async def test_a_server_whose_progress_is_off_shows_only_the_result(
    tool_server: ToolServer,
) -> None:
    model = Model(steps_script("anthropic-messages", COUNT))
    tools = tool_server.settings(progress=False)
    async with agent_gateway(model, "anthropic-messages", tools) as base:
        response = await post(base, "s1", user_body("count to 3", id="c1"))
    assert preliminary(response.content) == []
    assert b"counted to 3" in response.content


async def test_many_reports_are_coalesced_to_the_newest(
    tool_server: ToolServer, real_clients: Any
) -> None:
    script = [("", [("call_count", "count", {"to": 200, "pause": 0.002})]), ("Done.", [])]
    model = Model(steps_script("anthropic-messages", script))
    async with agent_gateway(model, "anthropic-messages", tool_server.settings()) as base:
        response = await post(base, "s1", user_body("count to 200", id="c1"))
    reports = preliminary(response.content)
    numbers = [report["progress"] for report in reports]
    assert numbers == sorted(numbers) and len(set(numbers)) == len(numbers)
    assert 1 <= len(reports) < 50  # ~0.4 s of reports at most every 0.1 s, not 200 writes
    verdict = real_clients.check(response.content, (7,))[7]
    assert verdict.ok, verdict.fatal


async def test_a_stop_while_a_call_reports_progress_settles_its_part(
    tool_server: ToolServer, real_clients: Any
) -> None:
    script = [("", [("call_count", "count", {"to": 100, "pause": 0.2})]), ("Never.", [])]
    model = Model(steps_script("anthropic-messages", script))
    tools = tool_server.settings()
    async with agent_gateway(model, "anthropic-messages", tools, resume="memory") as base:
        url = f"{base}/api/sessions/s1/chat"
        async with httpx.AsyncClient(timeout=20, trust_env=False) as client:
            async with client.stream("POST", url, json=user_body("count", id="c1")) as response:
                pieces = response.aiter_bytes()
                body = await read_until(pieces, b'"preliminary":true')
                stop = await client.post(f"{base}/api/sessions/s1/chat/c1/stop")
                assert stop.status_code == 202
                async for piece in pieces:
                    body += piece
    assert len(model.requests) == 1
    for major, verdict in real_clients.check(body).items():
        assert verdict.ok, (major, verdict.fatal, body)
        (part,) = [p for p in verdict.message["parts"] if p["type"] == "dynamic-tool"]
        assert part["state"] == "output-error", major  # interrupted, not a result
