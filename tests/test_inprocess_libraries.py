"""The agent libraries' dialects (pydantic-ai, the OpenAI Agents SDK, LangGraph) answered by
``ui_stream``/``UIStreamResponse``: each live scenario of their tests, handed over as the app
would (an async context manager entered by the response, an async iterator), gives the
chunks its golden holds — the same parts in the same order, the same text — and every answer
is accepted by the real ai 5, 6 and 7; a run that raises ends with its error; a client that
goes away ends the library's run within a second."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
from pydantic_ai import Agent
from pydantic_ai.models.function import FunctionModel
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.routing import Route

from chunkbridge import UIStreamResponse, ui_stream
from tests.gateway_harness import user_body, uvicorn_server
from tests.helpers import decode_sse, of_type, text_of, types
from tests.langgraph_graphs import SCENARIOS as GRAPHS
from tests.openai_agents_agents import SCENARIOS as RUNS
from tests.pydantic_ai_agents import SCENARIOS as AGENTS

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
LIBRARIES: dict[str, dict[str, Callable[[], Any]]] = {
    "pydantic-ai": {name: scenario.run for name, scenario in AGENTS.items()},
    "openai-agents": dict(RUNS),
    "langgraph": dict(GRAPHS),
}


async def test_every_live_scenario_answers_as_its_golden(real_clients: Any) -> None:
    bodies: list[bytes] = []
    for dialect, scenarios in LIBRARIES.items():
        for name, run in sorted(scenarios.items()):
            body = b"".join([piece async for piece in ui_stream(run(), dialect=dialect)])
            golden = decode_sse((FIXTURES / dialect / f"{name}.sse").read_bytes())
            chunks = decode_sse(body)
            assert types(chunks) == types(golden), (dialect, name)
            assert text_of(chunks) == text_of(golden), (dialect, name)
            assert [c["errorText"] for c in of_type(chunks, "error")] == [
                c["errorText"] for c in of_type(golden, "error")
            ], (dialect, name)
            bodies.append(body)
    names = [(d, n) for d, s in LIBRARIES.items() for n in sorted(s)]
    for (dialect, name), verdicts in zip(names, real_clients.check_many(bodies), strict=True):
        assert all(v.ok for v in verdicts.values()), (dialect, name, verdicts)


async def test_a_disconnect_ends_a_pydantic_ai_run_within_a_second() -> None:
    """The response entered ``agent.run_stream_events()`` (an async context manager over the
    agent's task group); the client going away leaves it, and the model's stream is closed."""
    closed = asyncio.Event()
    finished: list[bool] = []

    async def model(messages: Any, info: Any) -> Any:
        try:
            for _ in range(10_000):
                yield "tick "
                await asyncio.sleep(0.02)
            finished.append(True)
        finally:
            closed.set()

    agent = Agent(FunctionModel(stream_function=model))

    async def chat(request: Request) -> UIStreamResponse:
        await request.body()
        return UIStreamResponse(agent.run_stream_events("hi"), dialect="pydantic-ai")

    app = Starlette(routes=[Route("/chat", chat, methods=["POST"])])
    async with uvicorn_server(app) as base:
        async with httpx.AsyncClient(timeout=10, trust_env=False) as client:
            async with client.stream("POST", f"{base}/chat", json=user_body()) as response:
                async for piece in response.aiter_bytes():
                    if b"tick" in piece:
                        break
        left = time.monotonic()
        await asyncio.wait_for(closed.wait(), 1.0)
        assert time.monotonic() - left < 1.0 and not finished
