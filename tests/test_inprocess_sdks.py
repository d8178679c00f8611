"""The official SDKs' streams in-process, object for dict: the real ``openai`` and ``anthropic``
packages pointed at a provider on 127.0.0.1 that plays the recorded streams of
``fixtures/<dialect>/``. Their event objects read as the JSON the provider sent; streamed by
``UIStreamResponse`` they give the chunks the gateway gives for the same frames (the golden
files), which the real ai 5, 6 and 7 accept; the SDK's errors end the answer with the
provider's message; the user's Stop in the real chat closes the SDK's stream within a second;
and ``import chunkbridge`` imports none of these SDKs."""

from __future__ import annotations

import asyncio
import contextlib
import json
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anthropic
import httpx
import openai
import pytest
from fastapi import FastAPI, Request

from chunkbridge import UIStreamResponse, parse_chat_request, request_body, ui_stream
from chunkbridge.kit import wire_dict
from tests.gateway_harness import user_body, uvicorn_server
from tests.helpers import decode_sse, of_type, text_of
from tests.provider_server import FIXTURES, Script, recording, running_provider

DIALECTS = ("openai-chat", "openai-responses", "anthropic-messages")
#: The recordings whose streams an SDK cannot read as the gateway does, and why.
SDK_CANNOT_READ = {
    # a frame that is not JSON: the SDK raises on it (the gateway forwards it as malformed)
    ("openai-chat", "unknown-objects-and-second-choice"): "The agent failed.",
}


@dataclass
class Clients:
    """Both SDKs' clients, pointed at the provider on 127.0.0.1."""

    openai: openai.AsyncOpenAI
    anthropic: anthropic.AsyncAnthropic

    def stream(self, dialect: str) -> Any:
        """The SDK's streaming call for ``dialect`` — unawaited, as an app may hand it over."""
        hello: Any = [{"role": "user", "content": "hi"}]
        if dialect == "openai-chat":
            return self.openai.chat.completions.create(model="m", messages=hello, stream=True)
        if dialect == "openai-responses":
            return self.openai.responses.create(model="m", input="hi", stream=True)
        return self.anthropic.messages.create(model="m", max_tokens=64, messages=hello, stream=True)


@contextlib.asynccontextmanager
async def provider_and_clients(*scripts: Script) -> AsyncIterator[tuple[Clients, Any]]:
    async with running_provider(*scripts) as (base, provider):
        async with (
            openai.AsyncOpenAI(base_url=f"{base}/v1", api_key="k", max_retries=0) as oa,
            anthropic.AsyncAnthropic(base_url=base, api_key="k", max_retries=0) as an,
        ):
            yield Clients(oa, an), provider


def script(dialect: str, name: str, **options: Any) -> Script:
    frames = recording(dialect, name)
    return Script(frames, named_events=dialect == "anthropic-messages", **options)


def recordings() -> list[tuple[str, str]]:
    return [(d, p.stem) for d in DIALECTS for p in sorted((FIXTURES / d).glob("*.jsonl"))]


async def body_of(stream: AsyncIterator[bytes]) -> bytes:
    return b"".join([piece async for piece in stream])


@pytest.mark.parametrize(
    ("dialect", "name"),
    [
        ("openai-chat", "parallel-tool-calls"),
        ("openai-chat", "usage-on-final-choice-chunk-no-done"),
        ("openai-responses", "web-search-with-citations"),
        ("anthropic-messages", "server-tool-with-citations"),
        ("anthropic-messages", "unknown-events-and-extra-fields"),
    ],
)
async def test_an_sdk_event_reads_as_the_json_the_provider_sent(dialect: str, name: str) -> None:
    sent = [json.loads(f) for f in recording(dialect, name) if f != "[DONE]"]
    async with provider_and_clients(script(dialect, name)) as (sdk, _):
        events = [event async for event in await sdk.stream(dialect)]
    read = [wire_dict(event) for event in events]
    wire = [e for e in sent if e.get("type") != "ping"]  # (the SDKs leave pings out)
    assert read == wire


async def test_every_recording_through_its_sdk_gives_the_gateways_chunks(real_clients: Any) -> None:
    bodies: list[bytes] = []
    for dialect, name in recordings():
        async with provider_and_clients(script(dialect, name)) as (sdk, _):
            body = await body_of(ui_stream(sdk.stream(dialect), dialect=dialect))
        chunks = decode_sse(body)
        cannot = SDK_CANNOT_READ.get((dialect, name))
        if cannot is not None:
            assert of_type(chunks, "error")[-1]["errorText"] == cannot, name
        else:
            golden = (FIXTURES / dialect / f"{name}.sse").read_bytes()
            assert chunks == decode_sse(golden), (dialect, name)
        bodies.append(body)
    for (_, name), verdicts in zip(recordings(), real_clients.check_many(bodies), strict=True):
        assert all(v.ok for v in verdicts.values()), (
            name,
            {m: v.fatal for m, v in verdicts.items()},
        )


async def test_the_sdk_stream_helpers_give_the_same_answer(real_clients: Any) -> None:
    """``messages.stream()`` (Anthropic: its text/input_json events skipped, the raw ones
    read) and ``chat.completions.stream()`` (OpenAI: its chunk events read, the others
    skipped) — async context managers, entered and left — answer as the raw streams do."""
    cases = [
        ("anthropic-messages", "streamed-tool-input"),
        ("anthropic-messages", "thinking-then-text"),
        ("openai-chat", "streamed-tool-arguments"),
    ]
    hello = [{"role": "user", "content": "hi"}]
    for dialect, name in cases:
        async with provider_and_clients(script(dialect, name)) as (sdk, _):
            if dialect == "anthropic-messages":
                helper: Any = sdk.anthropic.messages.stream(
                    model="m", max_tokens=64, messages=hello
                )
            else:
                helper = sdk.openai.chat.completions.stream(model="m", messages=hello)
            body = await body_of(ui_stream(helper, dialect=dialect))
        golden = (FIXTURES / dialect / f"{name}.sse").read_bytes()
        assert decode_sse(body) == decode_sse(golden), name
        assert all(v.ok for v in real_clients.check(body).values())


async def test_a_refused_request_ends_with_the_providers_message(real_clients: Any) -> None:
    refusals = {
        "openai-chat": '{"error": {"message": "The model m does not exist.", "type": "x"}}',
        "openai-responses": '{"error": {"message": "The model m does not exist.", "type": "x"}}',
        "anthropic-messages": '{"type": "error", "error": {"type": "not_found_error", '
        '"message": "The model m does not exist."}}',
    }
    for dialect, refusal in refusals.items():
        async with provider_and_clients(Script([refusal], status=404)) as (sdk, _):
            body = await body_of(ui_stream(sdk.stream(dialect), dialect=dialect))
        errors = [c["errorText"] for c in of_type(decode_sse(body), "error")]
        assert len(errors) == 1 and errors[0].endswith("The model m does not exist."), errors
        assert all(v.ok for v in real_clients.check(body).values())


def readme_app(base: str) -> FastAPI:
    """The route of the README and docs/inside-your-app.md: the OpenAI SDK's stream of the
    conversation, answered to useChat."""
    client = openai.AsyncOpenAI(base_url=f"{base}/v1", api_key="sk-test", max_retries=0)

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        async with client:
            yield

    app = FastAPI(lifespan=lifespan)

    @app.post("/api/chat")
    async def chat(request: Request) -> UIStreamResponse:
        chat = parse_chat_request(await request.body())
        body = request_body(chat, dialect="openai-chat", settings={"model": "gpt-4.1-mini"})
        stream = await client.chat.completions.create(**body)
        return UIStreamResponse(stream, dialect="openai-chat", target=5, request=chat)

    return app


async def test_useChat_of_ai_5_6_7_reads_an_sdk_stream_and_its_stop_closes_it(
    real_clients: Any,
) -> None:
    for major in (5, 6, 7):
        slow = script("openai-chat", "plain-text", pause=0.05, hold=60)
        async with running_provider(slow) as (base, provider):
            async with uvicorn_server(readme_app(base)) as app:
                result = await real_clients.chat_loop(
                    f"{app}/api/chat", major, "Say hello", [], stop_after_chars=1
                )
                returned = time.monotonic()
                await asyncio.wait_for(provider.closed.wait(), 1.0)
        assert provider.closed_at is not None and provider.closed_at - returned < 1.0
        assert provider.completed == 0  # the SDK's stream was closed before its end
        assert result["status"] == "ready" and result["error"] is None, (major, result)
        answer = result["messages"][-1]
        assert answer["role"] == "assistant"
        text = "".join(p["text"] for p in answer["parts"] if p["type"] == "text")
        assert text and "Hello".startswith(text[:5]), (major, answer)
        sent = provider.requests[0][1]  # the conversation, as the gateway would send it
        assert sent["model"] == "gpt-4.1-mini" and sent["stream"] is True
        assert sent["messages"] == [{"role": "user", "content": "Say hello"}]


async def test_the_readme_route_answers_whole_streams_the_real_clients_accept(
    real_clients: Any,
) -> None:
    async with running_provider(script("openai-chat", "streamed-tool-arguments")) as (base, _):
        async with uvicorn_server(readme_app(base)) as app:
            async with httpx.AsyncClient(timeout=10, trust_env=False) as client:
                response = await client.post(f"{app}/api/chat", json=user_body("Weather?"))
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/event-stream")
    golden = (FIXTURES / "openai-chat" / "streamed-tool-arguments.sse").read_bytes()
    assert decode_sse(response.content) == decode_sse(golden)
    for major, verdict in real_clients.check(response.content).items():
        assert verdict.ok, (major, verdict.fatal)
    assert text_of(decode_sse(response.content)) == text_of(decode_sse(golden))


def test_importing_chunkbridge_imports_no_optional_sdk() -> None:
    """With or without the extras installed: ``import chunkbridge`` — and its public API in
    use — loads none of the libraries of the in-process sources."""
    code = (
        "import sys, chunkbridge\n"
        "assert 'starlette' not in sys.modules, 'the public API loads on first use'\n"
        "chunkbridge.UIStreamResponse, chunkbridge.create_app, chunkbridge.Gateway\n"
        "import chunkbridge.kit\n"
        "from chunkbridge.gateway.registry import registry\n"
        "registry()\n"
        "bad = [m for m in ('openai', 'anthropic', 'pydantic_ai', 'agents', 'langgraph')\n"
        "       if m in sys.modules]\n"
        "print(','.join(bad))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "", done.stdout


def test_the_sdk_extras_are_declared() -> None:
    import tomllib

    project = tomllib.loads((Path(__file__).parents[1] / "pyproject.toml").read_text())
    extras = project["project"]["optional-dependencies"]
    assert extras["openai"][0].startswith("openai") and extras["anthropic"][0].startswith(
        "anthropic"
    )
