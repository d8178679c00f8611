#!/usr/bin/env python3
"""CPU per event of an app's own stream (``UIStreamResponse``), beside the gateway's and
pydantic-ai's ``VercelAIAdapter``'s, for the same events.

    .venv/bin/python bench/inprocess.py [EVENTS_PER_TURN] [TURNS]     # 5,000 × 40 by default

Every server is a process of its own under uvicorn (uvloop, httptools — as ``serve`` runs),
on 127.0.0.1; a client in this process POSTs ``TURNS`` turns one after the other and reads each
answer whole; the server's CPU (``time.process_time()``, read from its ``/cpu`` route before
and after) divided by the events streamed is the figure. Rows:

  gateway          chunkbridge serve --dialect openai-chat before a provider process streaming
                   the turn's chat.completion.chunk events as fast as it can (what the gateway
                   spends per event, reading HTTP SSE included)
  dicts            UIStreamResponse over an in-memory async iterator of the same events, dicts
  sdk-objects      … of the same events as the openai SDK's ChatCompletionChunk objects
  vercel-adapter   pydantic-ai's VercelAIAdapter.dispatch_request, an agent whose FunctionModel
                   streams the same number of text deltas
  agent-via-ag-ui  UIStreamResponse over that agent's AG-UI events (AGUIAdapter.run_stream(),
                   dialect ag-ui): chunkbridge on the same agent
  agent-native     UIStreamResponse over that agent's own events (run_stream_events(), dialect
                   pydantic-ai): chunkbridge on the same agent, natively
  agent-alone      that agent's own events read and dropped: what the agent itself costs per
                   event, under the three rows above

Env: REPEAT (3 rounds; the rows rotate each round), ROWS (comma list), BENCH_JSON=1.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
N = int(sys.argv[1]) if len(sys.argv) > 1 and sys.argv[1] != "serve" else 5000
TURNS = int(sys.argv[2]) if len(sys.argv) > 2 and sys.argv[1] != "serve" else 40
REPEAT = int(os.environ.get("REPEAT", 3))
ROWS = [
    "gateway",
    "dicts",
    "sdk-objects",
    "vercel-adapter",
    "agent-via-ag-ui",
    "agent-native",
    "agent-alone",
]
TOKENS = [" the", " quick", " brown", " fox", " jumps", " over", " lazy", " dog"]


def chunks(n: int) -> list[dict[str, Any]]:
    """A chat completion of ``n`` events: text deltas, the finish, the usage."""
    base = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "m"}

    def choice(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    out = [choice({"role": "assistant", "content": ""})]
    out += [choice({"content": TOKENS[i % len(TOKENS)]}) for i in range(n - 3)]
    out.append(choice({}, "stop"))
    out.append({**base, "choices": [], "usage": {"prompt_tokens": 5, "completion_tokens": n}})
    return out


# -- the servers (each `bench/inprocess.py serve ROW PORT [UPSTREAM]`) ---------------------------


def cpu_route() -> Any:
    from starlette.responses import PlainTextResponse
    from starlette.routing import Route

    async def cpu(request: Any) -> Any:
        return PlainTextResponse(repr(time.process_time()))

    return Route("/cpu", cpu)


def upstream_app(n: int) -> Any:
    from starlette.applications import Starlette
    from starlette.responses import StreamingResponse
    from starlette.routing import Route

    frames = [b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks(n)] + [
        b"data: [DONE]\n\n"
    ]
    blocks = [b"".join(frames[i : i + 64]) for i in range(0, len(frames), 64)]

    async def completions(request: Any) -> Any:
        await request.body()

        async def body() -> AsyncIterator[bytes]:
            for block in blocks:
                yield block

        return StreamingResponse(body(), media_type="text/event-stream")

    return Starlette(routes=[Route("/v1/chat/completions", completions, methods=["POST"])])


def agent(n: int) -> Any:
    from pydantic_ai import Agent
    from pydantic_ai.models.function import FunctionModel

    async def stream(messages: Any, info: Any) -> AsyncIterator[str]:
        for i in range(n - 3):
            yield TOKENS[i % len(TOKENS)]

    return Agent(FunctionModel(stream_function=stream))


def in_process_app(row: str, n: int) -> Any:
    from starlette.applications import Starlette
    from starlette.routing import Route

    from chunkbridge import UIStreamResponse

    if row in ("dicts", "sdk-objects"):
        events: list[Any] = chunks(n)
        if row == "sdk-objects":
            from openai._models import construct_type
            from openai.types.chat import ChatCompletionChunk

            events = [construct_type(type_=ChatCompletionChunk, value=e) for e in events]

        async def produce() -> AsyncIterator[Any]:
            for event in events:
                yield event

        async def chat(request: Any) -> Any:
            await request.body()
            return UIStreamResponse(produce(), dialect="openai-chat")

    elif row == "vercel-adapter":
        from pydantic_ai.ui.vercel_ai import VercelAIAdapter

        the_agent = agent(n)

        async def chat(request: Any) -> Any:
            return await VercelAIAdapter.dispatch_request(request, agent=the_agent)

    elif row == "agent-native":
        the_agent = agent(n)

        async def chat(request: Any) -> Any:
            await request.body()
            return UIStreamResponse(the_agent.run_stream_events("hi"), dialect="pydantic-ai")

    elif row == "agent-alone":
        from starlette.responses import PlainTextResponse

        the_agent = agent(n)

        async def chat(request: Any) -> Any:
            await request.body()
            deltas = 0
            async with the_agent.run_stream_events("hi") as events:
                async for event in events:
                    deltas += getattr(event, "event_kind", "") == "part_delta"
            return PlainTextResponse('"text-delta"' * (deltas + 1))

    else:
        from pydantic_ai.ui.ag_ui import AGUIAdapter

        the_agent = agent(n)
        run_input = AGUIAdapter.build_run_input(
            json.dumps(
                {
                    "threadId": "t",
                    "runId": "r",
                    "messages": [{"id": "u1", "role": "user", "content": "hi"}],
                    "state": {},
                    "tools": [],
                    "context": [],
                    "forwardedProps": {},
                }
            ).encode()
        )

        async def chat(request: Any) -> Any:
            await request.body()
            adapter = AGUIAdapter(agent=the_agent, run_input=run_input)
            return UIStreamResponse(adapter.run_stream(), dialect="ag-ui")

    return Starlette(routes=[Route("/chat", chat, methods=["POST"]), cpu_route()])


def serve(row: str, port: int, upstream: str | None) -> None:
    import uvicorn

    if row == "upstream":
        app = upstream_app(N_SERVED)
    elif row == "gateway":
        from chunkbridge import GatewayConfig, create_app

        config = GatewayConfig(
            dialect="openai-chat",
            upstream=upstream,
            dialect_settings={"openai-chat": {"api_key": "sk-bench"}},
        )
        app = create_app(config, extra_routes=[cpu_route()])
    else:
        app = in_process_app(row, N_SERVED)
    uvicorn.run(
        app,
        host="127.0.0.1",
        port=port,
        log_level="error",
        access_log=False,
        loop="uvloop",
        http="httptools",
        lifespan="on",
    )


# -- the client ---------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start(row: str, upstream: str | None = None) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    argv = [sys.executable, __file__, "serve", row, str(port), str(N), upstream or ""]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    process = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return process, url
        except OSError:
            time.sleep(0.05)
    process.kill()
    raise RuntimeError(f"{row} did not start")


BODY = {
    "id": "c1",
    "messages": [{"id": "u1", "role": "user", "parts": [{"type": "text", "text": "hi"}]}],
    "trigger": "submit-message",
}


async def measure(row: str) -> float:
    """Seconds of the server's CPU per event streamed, over TURNS turns."""
    import httpx

    processes = []
    try:
        upstream = None
        if row == "gateway":
            up, upstream = start("upstream")
            processes.append(up)
        server, url = start(row, upstream)
        processes.append(server)
        path = "/api/sessions/s1/chat" if row == "gateway" else "/chat"
        async with httpx.AsyncClient(timeout=120, trust_env=False) as client:

            async def turn() -> int:
                response = await client.post(url + path, json=BODY)
                body = response.content
                assert response.status_code == 200, response.text
                return body.count(b'"text-delta"')

            for _ in range(3):  # warm-up
                deltas = await turn()
            assert deltas >= N - 3, (row, deltas)
            before = float((await client.get(url + "/cpu")).text)
            for _ in range(TURNS):
                await turn()
            after = float((await client.get(url + "/cpu")).text)
        return (after - before) / (TURNS * N)
    finally:
        for process in processes:
            process.terminate()
            process.wait(10)


async def main() -> None:
    rows = os.environ.get("ROWS", ",".join(ROWS)).split(",")
    results: dict[str, list[float]] = {row: [] for row in rows}
    for round_ in range(REPEAT):
        order = rows[round_ % len(rows) :] + rows[: round_ % len(rows)]
        for row in order:
            results[row].append(await measure(row))
    print(f"python {sys.version.split()[0]}, {N} events per turn, {TURNS} turns, {REPEAT} rounds")
    print(f"{'row':18} {'µs/event median':>16} {'runs':>30}  vs gateway")
    gateway = statistics.median(results["gateway"]) if "gateway" in results else None
    for row, values in results.items():
        median = statistics.median(values)
        runs = ", ".join(f"{v * 1e6:.2f}" for v in values)
        ratio = f"{median / gateway:.2f}x" if gateway else ""
        print(f"{row:18} {median * 1e6:16.2f} {runs:>30}  {ratio}")
    if os.environ.get("BENCH_JSON"):
        print(json.dumps({row: values for row, values in results.items()}))


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "serve":
        N_SERVED = int(sys.argv[4])
        serve(sys.argv[2], int(sys.argv[3]), sys.argv[5] or None)
    else:
        asyncio.run(main())
