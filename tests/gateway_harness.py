"""Real servers for gateway tests: a scriptable websockets upstream, a fake HTTP upstream (one
Starlette route streaming SSE) and an in-process uvicorn gateway, all on 127.0.0.1 with
ephemeral ports. No mocks of any."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
import time
from collections import defaultdict
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import httpx
import orjson
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request as HttpRequest
from starlette.responses import StreamingResponse
from starlette.routing import Route
from websockets.asyncio.server import ServerConnection, serve
from websockets.datastructures import Headers
from websockets.http11 import Request, Response

from chunkbridge.gateway.config import GatewayConfig
from chunkbridge.gateway.http.app import create_app
from chunkbridge.gateway.server import server_limits

Script = Callable[[ServerConnection, "ScriptedUpstream", str], Awaitable[None]]


def user_body(text: str = "hello", **extra: Any) -> dict[str, Any]:
    return {
        "id": "chat1",
        "messages": [{"id": "u1", "role": "user", "parts": [{"type": "text", "text": text}]}],
        "trigger": "submit-message",
        **extra,
    }


class ScriptedUpstream:
    """A WebSocket upstream whose behaviour per session id is a script (coroutine)."""

    def __init__(self) -> None:
        self.scripts: dict[str, Script] = {}
        self.received: dict[str, list[Any]] = defaultdict(list)
        self.received_at: dict[str, list[tuple[float, Any]]] = defaultdict(list)
        self.handshake_headers: dict[str, Headers] = {}
        self.sent: dict[str, int] = defaultdict(int)
        self.closed: dict[str, asyncio.Event] = defaultdict(asyncio.Event)
        self.reject: dict[str, int] = {}
        self.open_connections = 0
        self.server: Any = None

    @property
    def url(self) -> str:
        port = self.server.sockets[0].getsockname()[1]
        return f"ws://127.0.0.1:{port}/sessions/{{session_id}}/ws"

    async def __aenter__(self) -> ScriptedUpstream:
        self.server = await serve(
            self._handle,
            "127.0.0.1",
            0,
            compression=None,
            process_request=self._process_request,
            max_queue=4,
        )
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.server.close()
        await self.server.wait_closed()

    def _session(self, path: str) -> str:
        return path.split("/")[2] if path.count("/") >= 3 else ""

    def _process_request(self, connection: ServerConnection, request: Request) -> Response | None:
        session = self._session(request.path)
        self.handshake_headers[session] = request.headers
        status = self.reject.get(session)
        if status is not None:
            return connection.respond(status, "rejected\n")
        return None

    async def _handle(self, ws: ServerConnection) -> None:
        session = self._session(ws.request.path)
        self.open_connections += 1
        try:
            first = await ws.recv()
            self._record(session, first)
            script = self.scripts.get(session) or self.scripts.get("*")
            if script is None:
                return
            listener = asyncio.create_task(self._listen(ws, session))
            try:
                await script(ws, self, session)
            finally:
                with contextlib.suppress(asyncio.TimeoutError, Exception):
                    await asyncio.wait_for(listener, 2)
        except Exception:
            pass
        finally:
            self.open_connections -= 1
            self.closed[session].set()

    def _record(self, session: str, message: Any) -> None:
        frame = orjson.loads(message)
        self.received[session].append(frame)
        self.received_at[session].append((asyncio.get_running_loop().time(), frame))

    async def _listen(self, ws: ServerConnection, session: str) -> None:
        with contextlib.suppress(Exception):
            async for message in ws:
                self._record(session, message)

    async def send(self, ws: ServerConnection, session: str, event: Any) -> None:
        await ws.send(event if isinstance(event, str | bytes) else orjson.dumps(event).decode())
        self.sent[session] += 1

    def aborted(self, session: str) -> bool:
        return any(f.get("type") == "abort" for f in self.received[session])


def events(*items: Any, close: bool = True) -> Script:
    """A script that sends ``items`` in order, then closes normally (or keeps the socket)."""

    async def script(ws: ServerConnection, up: ScriptedUpstream, session: str) -> None:
        for item in items:
            if isinstance(item, (int, float)):
                await asyncio.sleep(item)
            else:
                await up.send(ws, session, item)
        if close:
            await ws.close()
        else:
            await ws.wait_closed()

    return script


def agent_ops_turn(text: str = "Hello there") -> list[Any]:
    turn = "t1"
    return [
        {"type": "message.create", "turnId": turn},
        *[
            {"type": "message.part.text-delta", "turnId": turn, "delta": w + " "}
            for w in text.split()
        ],
        {
            "type": "message.part.tool-update",
            "turnId": turn,
            "callId": "c1",
            "toolName": "search",
            "status": "running",
            "args": {"q": "x"},
        },
        {
            "type": "message.part.tool-update",
            "turnId": turn,
            "callId": "c1",
            "toolName": "search",
            "status": "completed",
            "result": {"n": 1},
        },
        {"type": "message.finalize", "turnId": turn, "reason": "end_turn"},
        {"type": "complete"},
    ]


def free_port() -> int:
    """A port nothing listens on now (for a server that must know its port before it starts)."""
    return free_ports(1)[0]


def free_ports(count: int) -> list[int]:
    """``count`` ports nothing listens on now, all different: each is held until all are
    chosen (ports chosen one by one, for servers starting at once, may repeat)."""
    with contextlib.ExitStack() as stack:
        held = [stack.enter_context(socket.socket()) for _ in range(count)]
        for s in held:
            s.bind(("127.0.0.1", 0))
        return [int(s.getsockname()[1]) for s in held]


@contextlib.asynccontextmanager
async def uvicorn_server(app: Any, http: str = "auto", port: int = 0) -> AsyncIterator[str]:
    """Serve ``app`` with uvicorn on 127.0.0.1 (``port``, or an ephemeral one) in this loop;
    yield its base URL. ``http``: uvicorn's HTTP implementation (``auto`` is httptools, as
    ``serve`` runs)."""
    state = getattr(app, "state", None)
    gateway = getattr(state, "gateway", None) if state is not None else None
    server = uvicorn.Server(
        uvicorn.Config(
            app,
            host="127.0.0.1",
            port=port,
            log_level="error",
            lifespan="on",
            access_log=False,
            http=http,  # type: ignore[arg-type]
            **(server_limits(gateway.config) if gateway is not None else {}),
        )
    )
    task = asyncio.create_task(server.serve())
    for _ in range(1000):  # bounded: 10 s
        if server.started or task.done():
            break
        await asyncio.sleep(0.01)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        await asyncio.wait_for(task, 15)


@contextlib.asynccontextmanager
async def http_upstream(path: str, handler: Callable[..., Any]) -> AsyncIterator[str]:
    """A fake HTTP upstream (a model API): ``POST path`` answered by ``handler``, a Starlette
    endpoint, served by uvicorn on 127.0.0.1; yields its base URL."""
    app = Starlette(routes=[Route(path, handler, methods=["POST"])])
    async with uvicorn_server(app) as base:
        yield base


def sse_response(payloads: Iterable[bytes], pause: float) -> StreamingResponse:
    """An SSE body of one ``data:`` event per payload, ``pause`` seconds apart."""

    async def body() -> AsyncIterator[bytes]:
        for payload in payloads:
            yield b"data: " + payload + b"\n\n"
            await asyncio.sleep(pause)

    return StreamingResponse(body(), media_type="text/event-stream")


class RecordedRun:
    """A provider that answers each request with the next response of a recorded run (one
    ``.jsonl`` recording per response), keeping the requests it got."""

    def __init__(self, *recordings: Path) -> None:
        self.responses = [
            [line.encode() for line in p.read_text().split("\n") if line.strip()]
            for p in recordings
        ]
        self.requests: list[dict[str, Any]] = []

    async def respond(self, request: HttpRequest) -> StreamingResponse:
        self.requests.append(orjson.loads(await request.body()))
        return sse_response(self.responses[len(self.requests) - 1], 0)


@contextlib.asynccontextmanager
async def running_demo(*args: str) -> AsyncIterator[str]:
    """``chunkbridge demo ARGS --store off`` served in this loop: the app the command builds from
    its flags (:func:`~chunkbridge.gateway.cli.demo.build_demo`), on a port of its own (the demo
    of an HTTP dialect calls itself); yields its base URL."""
    from chunkbridge.gateway.cli import build_parser
    from chunkbridge.gateway.cli.demo import build_demo

    port = free_port()
    flags = build_parser().parse_args(["demo", *args, "--port", str(port), "--store", "off"])
    async with uvicorn_server(build_demo(flags).app, port=port) as base:
        yield base


@contextlib.asynccontextmanager
async def running_gateway(http: str = "auto", **settings: Any) -> AsyncIterator[tuple[str, Any]]:
    """Start the real app under uvicorn on 127.0.0.1:<ephemeral>; yield (base URL, app)."""
    settings.setdefault("dialect", "agent-ops-v2")
    app = create_app(GatewayConfig(**settings))
    async with uvicorn_server(app, http) as base:
        yield base, app


async def post(
    base: str,
    session: str,
    body: Any = None,
    *,
    headers: dict[str, str] | None = None,
    content: bytes | None = None,
    read_timeout: float = 20,
) -> httpx.Response:
    """POST and read the whole response."""
    hdrs = {"content-type": "application/json", **(headers or {})}
    data = content if content is not None else orjson.dumps(body or user_body())
    async with httpx.AsyncClient(timeout=read_timeout, trust_env=False) as client:
        return await client.post(f"{base}/api/sessions/{session}/chat", content=data, headers=hdrs)


async def follow(
    base: str, session: str, attached: asyncio.Event, chat: str = "chat1"
) -> tuple[int, bytes]:
    """GET a turn's stream (``…/chat/{chat}/stream``) to its end: (status, body). ``attached``
    is set once its first bytes came: the reader is in, an event to order a test by."""
    body = b""
    async with httpx.AsyncClient(timeout=20, trust_env=False) as client:
        url = f"{base}/api/sessions/{session}/chat/{chat}/stream"
        async with client.stream("GET", url) as response:
            async for piece in response.aiter_bytes():
                body += piece
                attached.set()
    attached.set()  # an empty answer (204) is in and out at once
    return response.status_code, body


@contextlib.contextmanager
def app_thread(app: Any) -> Iterator[str]:
    """``app`` served by uvicorn on 127.0.0.1 in a thread of its own, for a test that blocks
    (on real processes, say); yields its base URL."""
    port = free_port()
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=port, log_level="error", lifespan="off")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(10)
