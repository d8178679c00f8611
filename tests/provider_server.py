"""A model provider on 127.0.0.1 for the in-process tests: the real ``openai`` and ``anthropic``
SDKs are pointed at it (``base_url``) and read what its script sends — recorded frames as SSE,
``pause`` seconds apart, then maybe a silence held open — while it records each request body
and the moment its client closed a stream before its end (an SDK's stream closed)."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from chunkbridge.gateway.devtools.recordings import read_frames
from tests.gateway_harness import uvicorn_server

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
#: The SDKs' streaming paths, under ``{base}/v1``.
PATHS = ("/v1/chat/completions", "/v1/responses", "/v1/messages")


@dataclass
class Script:
    """What one streaming request is answered with."""

    frames: list[str]
    pause: float = 0.0
    #: Seconds the stream stays open, silent, after its frames (a model still thinking).
    hold: float = 0.0
    #: ``event:`` lines from each frame's ``type`` (Anthropic's wire has them).
    named_events: bool = False
    status: int = 200


@dataclass
class ScriptedProvider:
    """Answers every streaming path with the next script (the last one again when none is
    left)."""

    scripts: list[Script]
    requests: list[tuple[str, Any]] = field(default_factory=list)
    #: Set when a client closed a stream before its script ended, at :attr:`closed_at`.
    closed: asyncio.Event = field(default_factory=asyncio.Event)
    closed_at: float | None = None
    #: The wall-clock time (``time.time()``) of each such close, for a client in another process.
    closed_times: list[float] = field(default_factory=list)
    #: Streams whose script ran to its end.
    completed: int = 0

    def app(self) -> Starlette:
        return Starlette(routes=[Route(path, self._answer, methods=["POST"]) for path in PATHS])

    async def _answer(self, request: Request) -> Response:
        self.requests.append((request.url.path, orjson.loads(await request.body())))
        script = self.scripts[min(len(self.requests), len(self.scripts)) - 1]
        if script.status != 200:
            body = script.frames[0].encode()
            return Response(body, script.status, media_type="application/json")
        return StreamingResponse(self._stream(script), media_type="text/event-stream")

    async def _stream(self, script: Script) -> AsyncIterator[bytes]:
        done = False
        try:
            for frame in script.frames:
                yield _sse(frame, script.named_events)
                if script.pause:
                    await asyncio.sleep(script.pause)
            await asyncio.sleep(script.hold)
            done = True
            self.completed += 1
        finally:
            if not done:
                self.closed_at = time.monotonic()
                self.closed_times.append(time.time())
                self.closed.set()


def _sse(frame: str, named: bool) -> bytes:
    data = b"data: " + frame.encode("utf-8", "surrogateescape") + b"\n\n"
    if not named or not frame.startswith("{"):
        return data
    kind = orjson.loads(frame).get("type", "message")
    return b"event: " + str(kind).encode() + b"\n" + data


def recording(dialect: str, name: str) -> list[str]:
    return read_frames(FIXTURES / dialect / f"{name}.jsonl")


@contextlib.asynccontextmanager
async def running_provider(*scripts: Script) -> AsyncIterator[tuple[str, ScriptedProvider]]:
    """The provider served on 127.0.0.1; yields (its base URL, itself): the ``anthropic``
    SDK's ``base_url``; the ``openai`` SDK's is ``{base}/v1``."""
    provider = ScriptedProvider(list(scripts))
    async with uvicorn_server(provider.app()) as base:
        yield base, provider
