"""A FastAPI app written from "Use it inside your app" (the README's, docs/inside-your-app.md's
— the same app, checked below): its own route streams an
OpenAI SDK chat completion to useChat, and the gateway is mounted under ``/chat`` with its SQLite
store and an MCP server's tools — both actually on: the model's tool calls run on the real
calculator server, the chat is stored. Mounted without its gateway's lifespan, the gateway
answers 503 saying so; ``create_app`` puts the routes under its prefix."""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import re
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI, Request
from fastapi.responses import PlainTextResponse
from openai import AsyncOpenAI
from starlette.applications import Starlette
from starlette.routing import Mount

from chunkbridge import (
    ConfigError,
    Gateway,
    GatewayConfig,
    RequestError,
    UIStreamResponse,
    create_app,
    parse_chat_request,
    request_body,
)
from tests import components
from tests.gateway_harness import user_body, uvicorn_server
from tests.helpers import decode_sse, result_of
from tests.provider_server import FIXTURES, Script, recording, running_provider

ROOT = Path(__file__).resolve().parents[1]
CALCULATOR = ROOT / "examples" / "mcp-agent" / "calculator.py"


def readme_app(client: AsyncOpenAI, gateway: Gateway) -> FastAPI:
    """The README's app, as written there (its client and gateway given).

    Kept in step with the text by :func:`test_the_readme_and_the_docs_show_this_app`."""

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        async with gateway.lifespan(), client:  # opens its stores, starts its tool servers
            yield

    app = FastAPI(lifespan=lifespan)
    app.mount("/chat", create_app(gateway, prefix=""))  # POST /chat/sessions/{session_id}/chat …

    @app.exception_handler(RequestError)  # the gateway's 400/413 texts, for useChat to show
    async def refused(request: Request, exc: RequestError) -> PlainTextResponse:
        return PlainTextResponse(exc.client_message, exc.status_hint)

    @app.post("/api/chat")
    async def chat(request: Request) -> UIStreamResponse:
        chat = parse_chat_request(await request.body())
        body = request_body(chat, dialect="openai-chat", settings={"model": "gpt-4.1-mini"})
        stream = await client.chat.completions.create(**body)  # the conversation, stream=True
        return UIStreamResponse(stream, dialect="openai-chat", target=5)

    return app


def readme_gateway(upstream: str, tmp_path: Path) -> Gateway:
    return Gateway(
        GatewayConfig(
            dialect="openai-chat",
            upstream=upstream,
            store="sqlite",
            store_path=tmp_path / "chats.sqlite3",
            tools={
                "calculator": {
                    "command": sys.executable,
                    "args": [str(CALCULATOR)],
                    "env": {"NOTES_FILE": str(tmp_path / "notes.txt")},
                }
            },
            dialect_settings={"openai-chat": {"model": "gpt-4.1-mini", "api_key": "sk-test"}},
        )
    )


async def test_the_readme_app_streams_the_sdk_and_serves_the_gateway_with_its_store_and_tools(
    tmp_path: Path, real_clients: Any
) -> None:
    model = [Script(recording("agent-loop/openai-chat", f"two-steps-{n}")) for n in (1, 2, 3)]
    async with (
        running_provider(Script(recording("openai-chat", "streamed-tool-arguments"))) as (sdk, _),
        running_provider(*model) as (upstream, scripted),
    ):
        client = AsyncOpenAI(base_url=f"{sdk}/v1", api_key="sk-test", max_retries=0)
        components.used("mcp")  # the example's calculator, which the gateway starts
        app = readme_app(client, readme_gateway(upstream, tmp_path))
        async with uvicorn_server(app) as base:
            async with httpx.AsyncClient(timeout=30, trust_env=False) as http:
                own = await http.post(f"{base}/api/chat", json=user_body("Weather?"))
                bad = await http.post(f"{base}/api/chat", content=b"{not json")
                mounted = await http.post(
                    f"{base}/chat/sessions/s1/chat", json=user_body("What is (2 + 3) × 4?", id="c1")
                )
                stored = await _stored(http, f"{base}/chat/sessions/s1/chat/c1/messages")
                ready = await http.get(f"{base}/chat/healthz")
    assert own.status_code == 200, own.text
    golden = (FIXTURES / "openai-chat" / "streamed-tool-arguments.sse").read_bytes()
    assert decode_sse(own.content) == decode_sse(golden)
    assert (bad.status_code, bad.text) == (400, "The request body is not valid JSON.")
    assert mounted.status_code == 200, mounted.text
    assert ready.status_code == 200
    for body in (own.content, mounted.content):
        for major, verdict in real_clients.check(body).items():
            assert verdict.ok, (major, verdict.fatal)
    verdict = real_clients.check(mounted.content)[7]
    tools = [
        (p["toolName"], p["input"], result_of(p["output"]))
        for p in verdict.message["parts"]
        if "toolName" in p
    ]
    assert tools == [  # run on the real MCP server the gateway started in the app's lifespan
        ("add", {"a": 2, "b": 3}, {"result": 5.0}),
        ("multiply", {"a": 5, "b": 4}, {"result": 20.0}),
    ]
    assert len(scripted.requests) == 3  # the model was called again after each tool step
    assert stored.status_code == 200
    assert [m["role"] for m in stored.json()][:1] == ["user"]  # the chat is kept


async def _stored(http: httpx.AsyncClient, url: str) -> httpx.Response:
    """The chat's stored messages once its first is written (the store's writes come behind
    the turn: a moment after its stream ended on a busy machine)."""
    for _ in range(100):
        stored = await http.get(url)
        if stored.status_code != 200 or stored.json():
            return stored
        await asyncio.sleep(0.05)
    return stored


async def test_mounted_without_its_gateways_lifespan_it_says_so() -> None:
    gateway = Gateway(GatewayConfig(dialect="openai-chat", upstream="http://127.0.0.1:9"))
    app = Starlette(routes=[Mount("/chat", create_app(gateway))])  # no lifespan runs it
    async with uvicorn_server(app) as base:
        async with httpx.AsyncClient(timeout=10, trust_env=False) as http:
            posted = await http.post(f"{base}/chat/api/sessions/s1/chat", json=user_body())
            health = await http.get(f"{base}/chat/healthz")
    for response in (posted, health):
        assert response.status_code == 503
        assert "gateway.lifespan()" in response.text
    assert not gateway.started


async def test_create_app_puts_the_routes_under_its_prefix() -> None:
    gateway = Gateway(GatewayConfig(resume="memory"))
    app = create_app(gateway, prefix="/v2/chat")
    assert app.state.gateway is gateway
    async with uvicorn_server(app) as base:
        assert gateway.started  # (served on its own, the app's lifespan runs the gateway's)
        async with httpx.AsyncClient(timeout=10, trust_env=False) as http:
            moved = await http.get(f"{base}/v2/chat/sessions/s1/chat/c1/stream")
            old = await http.get(f"{base}/api/sessions/s1/chat/c1/stream")
    assert moved.status_code == 204  # nothing to resume: the route is there
    assert old.status_code == 404
    assert not gateway.started
    with pytest.raises(ConfigError, match="prefix"):
        create_app(gateway, prefix="v2/")
    with pytest.raises(ConfigError, match="no dialect"):
        create_app(GatewayConfig())  # served on its own, a gateway needs an upstream


async def test_the_gateways_lifespan_entered_twice_runs_once() -> None:
    gateway = Gateway(GatewayConfig(resume="memory"))
    async with gateway.lifespan():
        async with gateway.lifespan():
            assert gateway.started
        assert gateway.started  # the inner exit closed nothing
    assert not gateway.started


def _shown_app(page: Path) -> str:
    """The page's FastAPI app: its Python block that makes ``app = FastAPI(...)``."""
    blocks = re.findall(r"```python\n(.*?)```", page.read_text(), re.S)
    apps = [block for block in blocks if "app = FastAPI(lifespan=lifespan)" in block]
    assert len(apps) == 1, f"{page.name}: one app, found {len(apps)}"
    return apps[0]


def _code_lines(source: str) -> list[str]:
    """The statements' lines, without comments, blank lines, annotations of the return."""
    lines = (re.sub(r"\s+#.*$", "", line).rstrip() for line in source.splitlines())
    return [re.sub(r"\) -> [\w\[\], .]+:$", "):", line) for line in lines if line.strip()]


def test_the_readme_and_the_docs_show_this_app() -> None:
    """The README's quick start and docs/inside-your-app.md show one app, the one
    :func:`readme_app` runs: its lifespan, mount, error handler and route, line for line (the
    test's only additions are type annotations)."""
    readme = _shown_app(ROOT / "README.md")
    assert readme == _shown_app(ROOT / "docs" / "inside-your-app.md")
    compile(readme, "README.md", "exec")
    shown = _code_lines(readme.split("@asynccontextmanager\n", 1)[1])
    tested = _code_lines(
        inspect.getsource(readme_app).split("@contextlib.asynccontextmanager\n", 1)[1]
    )
    tested = [line.removeprefix("    ") for line in tested]
    assert [line for line in shown if line not in tested] == []
