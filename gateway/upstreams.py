"""Fake upstreams for the demo, for tests and for replaying recordings: real WebSocket servers.

* :class:`DemoUpstream` speaks agent-ops-v2 for any session id: it streams a markdown answer,
  runs a tool through pending → running → completed, reports ``agentStatus``, and honours
  ``abort``. A prompt containing "fail" makes it report an error mid-answer; "slow" makes it
  stream slowly (for trying Stop). It keeps each session's sent events for the demo page.
* :class:`RecordingUpstream` (``chunkbridge mock-upstream``) waits for the prompt frame, then sends
  the lines of a ``.jsonl`` recording: one file serves every session; with several, the session id
  picks the file by its stem. ``timing="recorded"`` replays the pauses stored by ``chunkbridge
  record`` (``FILE.jsonl.timing``), ``"fast"`` sends as fast as the socket takes them.

Both listen on the given host (127.0.0.1 by default) and record the frames they receive, so tests
can assert that an ``abort`` arrived.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections import defaultdict, deque
from pathlib import Path
from typing import Any

import orjson
from websockets.asyncio.server import Server, ServerConnection, serve

__all__ = ["DemoUpstream", "RecordingUpstream", "SESSION_PATH"]

SESSION_PATH = re.compile(r"^/sessions/(?P<session>[^/]+)/ws$")

DEMO_ANSWER = (
    "## What chunkbridge does\n\n"
    "It sits **between** your agent backend and any `useChat` app:\n\n"
    "1. the app POSTs the chat request,\n"
    "2. chunkbridge opens the session's WebSocket and sends the prompt,\n"
    "3. every upstream event becomes AI SDK UI message chunks.\n\n"
)
DEMO_AFTER_TOOL = "The search found **3 matches**. Ask me anything else to see another turn."


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
        return self.server.sockets[0].getsockname()[1]

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
        match = SESSION_PATH.match(ws.request.path.split("?")[0]) if ws.request else None
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
        abort = asyncio.Event()
        listener = asyncio.create_task(self._listen(ws, session, abort))
        try:
            await self.run_turn(ws, session, prompt, abort)
        except Exception:  # the gateway went away mid-turn: nothing to do
            pass
        finally:
            listener.cancel()
            with contextlib.suppress(Exception):
                await ws.close()

    async def _listen(self, ws: ServerConnection, session: str, abort: asyncio.Event) -> None:
        with contextlib.suppress(Exception):
            async for message in ws:
                frame = orjson.loads(message)
                self.received[session].append(frame)
                if isinstance(frame, dict) and frame.get("type") == "abort":
                    abort.set()

    async def send(self, ws: ServerConnection, session: str, event: Any) -> None:
        self.sent[session].append(event)
        await ws.send(event if isinstance(event, str) else orjson.dumps(event).decode())

    async def run_turn(
        self, ws: ServerConnection, session: str, prompt: Any, abort: asyncio.Event
    ) -> None:
        raise NotImplementedError


def _words(text: str) -> list[str]:
    return re.findall(r"\S+\s*|\s+", text)


class DemoUpstream(_Base):
    """An agent-ops-v2 backend with a scripted, realistic turn."""

    def __init__(self, delay: float = 0.03) -> None:
        super().__init__()
        self.delay = delay
        self.turns = 0

    async def run_turn(
        self, ws: ServerConnection, session: str, prompt: Any, abort: asyncio.Event
    ) -> None:
        self.turns += 1
        text = str(prompt.get("content", "")) if isinstance(prompt, dict) else ""
        delay = self.delay * (8 if "slow" in text.lower() else 1)
        turn = f"turn_{self.turns:04d}"
        call = f"prt_{self.turns:04d}"

        async def emit(event: dict[str, Any]) -> bool:
            if abort.is_set():
                return False
            await self.send(ws, session, event)
            await asyncio.sleep(delay)
            return not abort.is_set()

        async def stream_text(body: str) -> bool:
            for word in _words(body):
                if not await emit(
                    {"type": "message.part.text-delta", "turnId": turn, "delta": word}
                ):
                    return False
            return True

        steps = [
            {"type": "agentStatus", "status": "thinking"},
            {"type": "message.create", "turnId": turn, "channelType": "web"},
            {"type": "agentStatus", "status": "streaming"},
        ]
        ok = all([await emit(e) for e in steps])
        ok = ok and await stream_text(f"You said: *{text[:200]}*\n\n" + DEMO_ANSWER)
        if ok and "fail" in text.lower():
            await self.send(
                ws,
                session,
                {
                    "type": "error",
                    "messageId": turn,
                    "error": "The demo agent failed on purpose (you asked).",
                },
            )
            return
        tool = {
            "type": "message.part.tool-update",
            "turnId": turn,
            "callId": call,
            "toolName": "search_docs",
        }
        ok = ok and await emit({"type": "agentStatus", "status": "tool_calling"})
        ok = ok and await emit({**tool, "status": "pending", "args": {}})
        ok = ok and await emit({**tool, "status": "running", "args": {"query": text[:80]}})
        if ok:
            await asyncio.sleep(delay * 5)
        ok = ok and await emit(
            {
                **tool,
                "status": "completed",
                "args": {"query": text[:80]},
                "result": {"matches": 3, "top": "README.md#usage"},
            }
        )
        ok = ok and await emit({"type": "agentStatus", "status": "streaming"})
        ok = ok and await stream_text(DEMO_AFTER_TOOL)
        reason = "end_turn" if ok else "canceled"
        with contextlib.suppress(Exception):
            await self.send(
                ws, session, {"type": "message.finalize", "turnId": turn, "reason": reason}
            )
            await self.send(ws, session, {"type": "agentStatus", "status": "idle"})
            await self.send(ws, session, {"type": "complete"})


class RecordingUpstream(_Base):
    """Serves recorded ``.jsonl`` sessions (see the module docstring)."""

    def __init__(self, files: list[Path], timing: str = "fast") -> None:
        super().__init__()
        if not files:
            raise ValueError("at least one recording is needed")
        self.files = {f.stem: f for f in files}
        self.default = files[0] if len(files) == 1 else None
        self.timing = timing

    def _recording(self, session: str) -> Path | None:
        if self.default is not None:
            return self.default
        return self.files.get(session)

    async def run_turn(
        self, ws: ServerConnection, session: str, prompt: Any, abort: asyncio.Event
    ) -> None:
        path = self._recording(session)
        if path is None:
            await ws.close(1008, f"no recording for session {session!r}")
            return
        lines = [line for line in path.read_text().split("\n") if line.strip()]
        pauses = _timing(path) if self.timing == "recorded" else []
        for index, line in enumerate(lines):
            if abort.is_set():
                return
            if index < len(pauses):
                await asyncio.sleep(pauses[index])
            await self.send(ws, session, line)


def _timing(path: Path) -> list[float]:
    """Pauses (seconds) before each line, from ``FILE.jsonl.timing``; [] when there is none."""
    timing = path.with_name(path.name + ".timing")
    if not timing.exists():
        return []
    offsets = [float(x) for x in timing.read_text().split()]
    return [max(0.0, b - a) / 1000 for a, b in zip([0.0, *offsets], offsets, strict=False)]
