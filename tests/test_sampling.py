"""Sampling: a tool server's ``sampling/createMessage`` answered by the gateway's own provider,
through the dialect's request and stream like a chat — every provider dialect, a scripted model."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from chunkbridge.gateway.config import GatewayConfig
from chunkbridge.gateway.registry import get_dialect
from chunkbridge.gateway.tool_settings import ToolServerSettings
from chunkbridge.gateway.tools import ToolSources
from chunkbridge.gateway.tools.mcp_sampling import SamplingGate
from chunkbridge.gateway.transports.connectors import connector_for
from chunkbridge.gateway.turn.driver import DriverSettings
from chunkbridge.gateway.turn.sampling import Sampler, SamplingFailed
from chunkbridge.kit import TranslatorOptions
from tests.agent_responses import PROVIDER_DIALECTS
from tests.gateway_harness import http_upstream, post, user_body
from tests.mcp.everything import everything_over, everything_stdio
from tests.test_agent_loop import Model, agent_gateway, steps_script

SETTINGS = DriverSettings(
    first_event_timeout=10, idle_timeout=10, total_timeout=30, keepalive_interval=15,
    flush_interval=0,
)  # fmt: skip


async def sample(dialect: str, scripted: Model, chosen: str | None = None) -> Any:
    description = get_dialect(dialect)
    settings = description.settings.model_validate(
        {"api_key": "k", "model": "m-1", "tools": {"app_tool": {"description": "the app's"}}}
    )
    async with http_upstream("/{path:path}", scripted.handle) as url:
        config = GatewayConfig(dialect=dialect, upstream=url)
        connector = connector_for(description, config)
        sampler = Sampler(description, connector, settings, TranslatorOptions(), SETTINGS)
        try:
            messages = [
                {"id": "s1", "role": "user", "parts": [{"type": "text", "text": "Say hi."}]}
            ]
            return await sampler.complete(messages, "Be brief.", 50, chosen)
        finally:
            await connector.aclose()


@pytest.mark.parametrize("dialect", PROVIDER_DIALECTS)
async def test_a_sampling_request_is_one_turn_of_the_gateways_model(dialect: str) -> None:
    model = Model(steps_script(dialect, [("Hi there.", [])]))
    sampled = await sample(dialect, model, "m-2")
    assert sampled.text == "Hi there." and sampled.finish_reason == "stop"
    assert sampled.model == "m-2"
    (request,) = model.requests
    heard = str(request)
    assert "Be brief." in heard and "Say hi." in heard  # the server's system prompt and words
    assert "app_tool" not in heard and "tools" not in request  # a sampled answer runs nothing
    assert "50" in heard  # the tokens allowed
    if dialect != "gemini":  # (Gemini names the model in the URL)
        assert "m-2" in heard


async def test_a_failed_model_call_is_a_sampling_error() -> None:
    def refuse(n: int, body: Any) -> list[str]:
        return ['{"type":"error","error":{"type":"overloaded_error","message":"busy"}}']

    with pytest.raises(SamplingFailed):
        await sample("anthropic-messages", Model(refuse))


# -- through a real server: server-everything's trigger-sampling-request --------------------------

SAMPLING: list[tuple[str, list[Any]]] = [
    (
        "Asking the server.",
        [("c_s", "trigger-sampling-request", {"prompt": "a haiku", "maxTokens": 40})],
    ),
    ("Quiet ports listen.", []),  # the server's sampling request, answered by the same model
    ("The server's model wrote a haiku.", []),
]


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_a_server_samples_the_gateways_model_when_allowed(
    transport: str, real_clients: Any
) -> None:
    model = Model(steps_script("anthropic-messages", SAMPLING))
    with everything_over(transport, sampling=True, approval="never") as server:
        async with agent_gateway(model, "anthropic-messages", {"everything": server}) as base:
            response = await post(base, "s1", user_body("write me a haiku", id="c1"))
    assert response.status_code == 200, response.text
    for major, verdict in real_clients.check(response.content).items():
        assert verdict.ok and verdict.finish_reason == "stop", (major, verdict.fatal)
        (part,) = verdict.parts("dynamic-tool")
        assert part["state"] == "output-available"
        assert "Quiet ports listen." in orjson.dumps(part["output"]).decode()
        usage = verdict.message["metadata"]["usage"]  # the turn's two steps and the sample's
        assert (usage["inputTokens"], usage["outputTokens"]) == (100 + 200 + 300, 10 + 20 + 30)
        steps = verdict.message["metadata"]["agentLoop"]["steps"]
        assert [s["usage"]["inputTokens"] for s in steps] == [100, 300]  # (the model's steps)
    turn, sampled, after = model.requests
    assert sampled["system"] == "You are a helpful test server." and sampled["max_tokens"] == 40
    assert "tools" not in sampled and "a haiku" in orjson.dumps(sampled["messages"]).decode()
    assert "Quiet ports listen." in orjson.dumps(after["messages"]).decode()
    assert "trigger-sampling-request" in orjson.dumps(turn["tools"]).decode()


async def test_without_sampling_the_capability_is_not_declared() -> None:
    sources = ToolSources({"everything": ToolServerSettings(**everything_stdio())})
    await sources.start()
    try:
        assert "get-sum" in sources.catalog
        assert "trigger-sampling-request" not in sources.catalog  # (it needs the capability)
    finally:
        await sources.aclose()


async def test_a_server_samples_at_most_sampling_per_call_times_per_running_call() -> None:
    from mcp.types import CreateMessageRequestParams, CreateMessageResult, ErrorData

    model = Model(steps_script("anthropic-messages", [("Yes.", [])]))
    description = get_dialect("anthropic-messages")
    settings = description.settings.model_validate({"api_key": "k", "model": "m-1"})
    params = CreateMessageRequestParams.model_validate(
        {"messages": [{"role": "user", "content": {"type": "text", "text": "ok?"}}], "maxTokens": 9}
    )
    server = ToolServerSettings(command="x", sampling=True, sampling_per_call=2)
    async with http_upstream("/{path:path}", model.handle) as url:
        connector = connector_for(
            description, GatewayConfig(dialect="anthropic-messages", upstream=url)
        )
        sampler = Sampler(description, connector, settings, TranslatorOptions(), SETTINGS)
        gate = SamplingGate("everything", server, sampler)
        try:
            with gate.running():
                answers = [await gate.answer(None, params) for _ in range(3)]
            with gate.running():  # a new call: a new budget
                again = await gate.answer(None, params)
        finally:
            await connector.aclose()
    assert [type(a) for a in answers] == [CreateMessageResult, CreateMessageResult, ErrorData]
    assert isinstance(again, CreateMessageResult) and again.stop_reason == "endTurn"
    assert len(model.requests) == 3
