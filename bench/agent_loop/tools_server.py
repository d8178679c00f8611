"""The MCP server of the agent-loop benchmark (the ``mcp`` package, Streamable HTTP), shared by
both gateways: ``add`` and ``multiply``, and a stopwatch in front of them.

The stopwatch is an ASGI layer that reads each request body as it arrives: for a
``tools/call`` whose arguments carry ``ts`` (the scripted model's write time of the completed
call, ``provider.py``), it keeps ``now - ts`` — the gateway's dispatch latency, from the model's
completed tool call to the MCP request on the wire. ``GET /stats`` returns the latencies kept
since ``POST /reset``.

    python tools_server.py PORT
"""

from __future__ import annotations

import sys
import time
from typing import Any

import orjson
import uvicorn
from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations

server = MCPServer("bench-math")
READ_ONLY = ToolAnnotations(readOnlyHint=True)


@server.tool(annotations=READ_ONLY)
def add(a: int, b: int, ts: int = 0) -> int:
    """Add two numbers."""
    return a + b


@server.tool(annotations=READ_ONLY)
def multiply(a: int, b: int, ts: int = 0) -> int:
    """Multiply two numbers."""
    return a * b


class Stopwatch:
    def __init__(self, app: Any) -> None:
        self.app = app
        self.latencies_ns: list[int] = []

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path = scope["path"]
        if path == "/stats":
            body = orjson.dumps({"dispatch_ns": self.latencies_ns})
            await send({"type": "http.response.start", "status": 200, "headers": []})
            await send({"type": "http.response.body", "body": body})
            return
        if path == "/reset":
            self.latencies_ns = []
            await send({"type": "http.response.start", "status": 204, "headers": []})
            await send({"type": "http.response.body", "body": b""})
            return
        chunks: list[bytes] = []

        async def timed() -> Any:
            message = await receive()
            if message["type"] == "http.request":
                chunks.append(message.get("body", b""))
                if not message.get("more_body"):
                    self._note(b"".join(chunks), time.time_ns())
            return message

        await self.app(scope, timed, send)

    def _note(self, body: bytes, now: int) -> None:
        if b"tools/call" not in body:
            return
        try:
            request = orjson.loads(body)
        except orjson.JSONDecodeError:
            return
        ts = (request.get("params") or {}).get("arguments", {}).get("ts")
        if type(ts) is int and ts > 0:
            self.latencies_ns.append(now - ts)


app = Stopwatch(server.streamable_http_app())

if __name__ == "__main__":
    uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning")
