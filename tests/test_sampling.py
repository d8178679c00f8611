"""Sampling: a tool server's ``sampling/createMessage`` answered by the gateway's own provider,
through the dialect's request and stream like a chat — every provider dialect, a scripted model."""

from __future__ import annotations

from typing import Any

import pytest

from chunkbridge.gateway.config import GatewayConfig
from chunkbridge.gateway.registry import get_dialect
from chunkbridge.gateway.transports.connectors import connector_for
from chunkbridge.gateway.turn.driver import DriverSettings
from chunkbridge.gateway.turn.sampling import Sampler, SamplingFailed
from chunkbridge.kit import TranslatorOptions
from tests.agent_responses import PROVIDER_DIALECTS
from tests.gateway_harness import http_upstream
from tests.test_agent_loop import Model, steps_script

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
