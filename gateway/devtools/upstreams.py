"""Fake upstreams for the demo, for tests and for replaying recordings: real servers on sockets.

* :class:`DemoUpstream` plays a dialect's demo script (``Dialect.demo``) over WebSocket for any
  session id: the steps of each turn, with their pauses, until the gateway's abort frame (any
  frame after the prompt) tells the script to wind down. It keeps each session's sent events
  for the demo page.
* :class:`DemoHttpUpstream` plays it for dialects that speak HTTP: its routes answer any ``POST``
  under ``/sessions/<id>/`` with the steps as server-sent events (``event:`` names the step's
  ``type``, as model APIs do), and a client that goes away stops the script.
* :class:`RecordingUpstream` (``chunkbridge mock-upstream``) serves ``.jsonl`` recordings over
  WebSocket: it waits for the prompt frame, then sends the lines. One file serves every session;
  with several, the session id picks the file by its stem. ``timing="recorded"`` replays the
  pauses stored by ``chunkbridge record``, ``"fast"`` sends as fast as the socket takes them.
* :func:`recording_http_app` serves the same recordings to HTTP dialects: any ``POST`` answers
  with the lines as server-sent events (``/sessions/<id>/…`` picks the file by session id; with
  ``sequence``, each request gets the next file: a model called step after step).

Each listens on the given host (127.0.0.1 by default) and records the frames it receives, so
tests can assert that an abort arrived.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections import defaultdict, deque
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import orjson
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response, StreamingResponse
from starlette.routing import Route
from websockets.asyncio.server import Server, ServerConnection, serve

from chunkbridge.gateway.devtools.recordings import read_frames, read_pauses
from chunkbridge.kit import DemoScript, Pause

__all__ = [
    "DemoHttpUpstream",
    "DemoUpstream",
    "RecordingUpstream",
    "SESSION_PATH",
    "recording_http_app",
]

SESSION_PATH = re.compile(r"^/sessions/(?P<session>[^/]+)(/|$)")


class _Base:
    def __init__(self) -> None:
        self.server: Server | None = None
        #: Frames received per session (prompt, abort…), for tests and the demo page.
        self.received: dict[str, list[Any]] = defaultdict(list)
        #: Events sent per session, newest last (bounded), for the demo page.
        self.sent: dict[str, deque[Any]] = defaultdict(lambda: deque(maxlen=2000))
        self.connections = 0

    @property
    def port(self) -> int:
        assert self.server is not None
        # websockets types ``sockets`` as an Iterable before 16 (a list since)
        port: int = next(iter(self.server.sockets)).getsockname()[1]
        return port

    @property
    def url_template(self) -> str:
        return f"ws://127.0.0.1:{self.port}/sessions/{{session_id}}/ws"

    async def start(self, host: str = "127.0.0.1", port: int = 0) -> None:
        self.server = await serve(
            self._handle, host, port, compression=None, max_size=16 * 1024 * 1024
        )

    async def aclose(self) -> None:
        if self.server is not None:
            self.server.close()
            await self.server.wait_closed()

    async def _handle(self, ws: ServerConnection) -> None:
        path = ws.request.path.split("?")[0] if ws.request else ""
        match = SESSION_PATH.match(path)
        if match is None:
            await ws.close(1008, "unknown path")
            return
        self.connections += 1
        session = match["session"]
        try:
            prompt = orjson.loads(await ws.recv())
        except Exception:
            return
        self.received[session].append(prompt)
        aborted = asyncio.Event()
        listener = asyncio.create_task(self._listen(ws, session, aborted))
        try:
            await self.run_turn(ws, session, prompt, aborted)
        except Exception:  # the gateway went away mid-turn: nothing to do
            pass
        finally:
            listener.cancel()
            with contextlib.suppress(Exception):
                await ws.close()

    async def _listen(self, ws: ServerConnection, session: str, aborted: asyncio.Event) -> None:
        with contextlib.suppress(Exception):
            async for message in ws:
                self.received[session].append(orjson.loads(message))
                # After its first frame the gateway sends only its abort frame (a request that
                # answers several questions sends one frame each, but the demo scripts ask
                # one thing at a time).
                aborted.set()

    async def send(self, ws: ServerConnection, session: str, event: Any) -> None:
        self.sent[session].append(event)
        await ws.send(event if isinstance(event, str) else orjson.dumps(event).decode())

    async def run_turn(
        self, ws: ServerConnection, session: str, prompt: Any, aborted: asyncio.Event
    ) -> None:
        raise NotImplementedError


class DemoUpstream(_Base):
    """Plays a dialect's demo script, one turn per connection."""

    def __init__(self, script: DemoScript) -> None:
        super().__init__()
        self.script = script
        self.turns = 0

    async def run_turn(
        self, ws: ServerConnection, session: str, prompt: Any, aborted: asyncio.Event
    ) -> None:
        self.turns += 1
        for step in self.script(prompt, self.turns, aborted.is_set):
            if isinstance(step, Pause):
                await asyncio.sleep(step.seconds)
            else:
                await self.send(ws, session, step)


class DemoHttpUpstream:
    """Plays a dialect's demo script over HTTP SSE, one turn per request (see the module)."""

    def __init__(self, script: DemoScript) -> None:
        self.script = script
        self.turns = 0
        self.received: dict[str, list[Any]] = defaultdict(list)
        self.sent: dict[str, deque[Any]] = defaultdict(lambda: deque(maxlen=2000))

    def routes(self, prefix: str) -> list[Route]:
        """The routes to mount; the upstream URL is ``<base><prefix>/sessions/{session_id}``."""
        return [
            Route(prefix + "/sessions/{session_id:str}/{path:path}", self._turn, methods=["POST"])
        ]

    async def _turn(self, request: Request) -> Response:
        session = request.path_params["session_id"]
        try:
            prompt = orjson.loads(await request.body())
        except orjson.JSONDecodeError:
            return PlainTextResponse("the body is not JSON", status_code=400)
        self.received[session].append(prompt)
        self.turns += 1
        steps = self.script(prompt, self.turns, lambda: False)

        async def body() -> AsyncIterator[bytes]:
            for step in steps:
                if isinstance(step, Pause):
                    await asyncio.sleep(step.seconds)
                    continue
                self.sent[session].append(step)
                payload = step if isinstance(step, str) else orjson.dumps(step).decode()
                name = step.get("type") if isinstance(step, dict) else None
                head = f"event: {name}\n" if isinstance(name, str) else ""
                yield f"{head}data: {payload}\n\n".encode()

        return StreamingResponse(body(), media_type="text/event-stream")


class _Recordings:
    """Recordings by session id (one file: every session gets it)."""

    def __init__(self, files: list[Path], timing: str, sequence: bool = False) -> None:
        if not files:
            raise ValueError("at least one recording is needed")
        self.files = {f.stem: f for f in files}
        self.default = files[0] if len(files) == 1 else None
        self.timing = timing
        #: ``sequence``: the n-th turn gets the n-th file (then the first again): a model's
        #: answers to the successive calls of an agent loop.
        self.order = list(files) if sequence else None
        self.served = 0

    def steps(self, session: str) -> list[tuple[float, str]] | None:
        """(pause before it, frame) for each frame of the session's recording."""
        if self.order is not None:
            path: Path | None = self.order[self.served % len(self.order)]
            self.served += 1
        else:
            path = self.default or self.files.get(session)
        if path is None:
            return None
        frames = read_frames(path)
        pauses = read_pauses(path) if self.timing == "recorded" else []
        pauses += [0.0] * (len(frames) - len(pauses))
        return list(zip(pauses, frames, strict=False))


class RecordingUpstream(_Base):
    """Serves recorded ``.jsonl`` sessions over WebSocket (see the module docstring)."""

    def __init__(self, files: list[Path], timing: str = "fast") -> None:
        super().__init__()
        self.recordings = _Recordings(files, timing)

    async def run_turn(
        self, ws: ServerConnection, session: str, prompt: Any, aborted: asyncio.Event
    ) -> None:
        steps = self.recordings.steps(session)
        if steps is None:
            await ws.close(1008, f"no recording for session {session!r}")
            return
        for pause, frame in steps:
            if aborted.is_set():
                return
            if pause:
                await asyncio.sleep(pause)
            await self.send(ws, session, frame)


def recording_http_app(
    files: list[Path], timing: str = "fast", sequence: bool = False
) -> Starlette:
    """The recordings as an HTTP upstream: every ``POST`` streams one as server-sent events
    (``sequence``: the next one in order, whatever the path)."""
    recordings = _Recordings(files, timing, sequence)

    async def stream(request: Request) -> Response:
        match = SESSION_PATH.match(request.url.path)
        session = match["session"] if match else ""
        steps = recordings.steps(session)
        if steps is None:
            return PlainTextResponse(f"no recording for session {session!r}", status_code=404)
        await request.body()

        async def body() -> AsyncIterator[bytes]:
            for pause, frame in steps:
                if pause:
                    await asyncio.sleep(pause)
                yield b"data: " + frame.encode("utf-8", "surrogateescape") + b"\n\n"

        return StreamingResponse(body(), media_type="text/event-stream")

    return Starlette(routes=[Route("/{path:path}", stream, methods=["POST"])])
